// The words of a `vllm serve` launch as vLLM 0.33.0's FlexibleArgumentParser hands them to
// argparse (vllm/utils/argparse_utils.py:338-498): a flag's underscores spelled as dashes up to
// its first '.', dotted flags merged into one JSON value each, and a long flag abbreviated as
// argparse allows (allow_abbrev, kept by FlexibleArgumentParser) spelled out from the options
// vLLM 0.33.0's parser defines (vllm_options.cc, generated from the release).
#include "core/servers/internal/vllm_words.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <nlohmann/json.hpp>
#include <regex>

#include "core/servers/internal/launch_text.h"

namespace shmguard::servers {
namespace {

using nlohmann::json;

// "--kv_transfer_config.kv_connector" -> "--kv-transfer-config.kv_connector": the dashes rule
// stops at the first '.' (argparse_utils.py:383-399).
std::string DashedKey(std::string_view key) {
  std::string out(key);
  const size_t end = std::min(out.find('.'), out.size());
  std::replace(out.begin() + 2, out.begin() + static_cast<std::ptrdiff_t>(end), '_', '-');
  return out;
}

// human_readable_int (argparse_utils.py:30-74): "80g" -> 80e9, "1K" -> 1024, "25.6k" -> 25600,
// a plain int; nullopt for what it refuses.
std::optional<int64_t> HumanReadableInt(std::string_view text) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front()))) text.remove_prefix(1);
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) text.remove_suffix(1);
  static const std::regex kSuffixed(R"((\d+(?:\.\d+)?)([kKmMgGtT]))");
  std::match_results<std::string_view::const_iterator> m;
  if (std::regex_match(text.begin(), text.end(), m, kSuffixed)) {
    const std::string number = m[1].str();
    const char suffix = m[2].str()[0];
    const int power = suffix == 'k' || suffix == 'K'   ? 1
                      : suffix == 'm' || suffix == 'M' ? 2
                      : suffix == 'g' || suffix == 'G' ? 3
                                                       : 4;
    if (std::islower(static_cast<unsigned char>(suffix))) {
      const double v = std::stod(number) * std::pow(1000.0, power);
      if (!(v < 9.2e18)) return std::nullopt;
      return static_cast<int64_t>(v);
    }
    auto whole = ParsePythonInt(number);  // decimals are refused with a binary suffix
    if (!whole) return std::nullopt;
    const int64_t mult = int64_t{1} << (10 * power);
    int64_t out = 0;
    if (__builtin_mul_overflow(*whole, mult, &out)) return std::nullopt;
    return out;
  }
  return ParsePythonInt(text);
}

// A dotted flag's value: JSON, else human_readable_int, else the text (argparse_utils.py:470-478).
json DottedValue(const std::string& text) {
  json v = json::parse(text, nullptr, false);
  if (!v.is_discarded()) return v;
  if (auto n = HumanReadableInt(text)) return *n;
  return text;
}

// recursive_dict_update (argparse_utils.py:421-439): dicts merged, lists appended, the rest set.
void Merge(json& into, const json& update) {
  for (auto it = update.begin(); it != update.end(); ++it) {
    json& slot = into[it.key()];
    if (it->is_object() && slot.is_object()) {
      Merge(slot, *it);
    } else if (it->is_array() && slot.is_array()) {
      for (const auto& item : *it) slot.push_back(item);
    } else {
      slot = *it;
    }
  }
}

// argparse's prefix match against `vllm serve`'s options.
Result<std::optional<std::string_view>> Abbreviated(std::string_view name) {
  return ArgparseMatch(name, VllmOptions(), "vLLM " + std::string(kVllmOptionsVersion));
}

bool IsOption(std::string_view name) {
  const auto options = VllmOptions();
  return std::binary_search(options.begin(), options.end(), name);
}

// FlexibleArgumentParser._pull_args_from_config and load_config_file (argparse_utils.py:516-672):
// the file's keys as flags, put after the model and before the rest of the command line, which
// so wins over them. A file `config` does not hold is left to the --config flag's row (its
// counts are the pod's GPUs); a file vLLM cannot read is an error, as vLLM raises.
Result<std::vector<std::string>> PullConfig(std::vector<std::string> words, const ContainerConfig* config,
                                            ServerLaunch& l) {
  const auto at = std::find(words.begin(), words.end(), "--config");
  if (at == words.end()) return words;
  if (std::count(words.begin(), words.end(), "--config") > 1) {
    return MakeError(Code::kInvalidInput, "--config is given twice, which vLLM refuses (argparse_utils.py:551)");
  }
  if (at + 1 == words.end()) {
    return MakeError(Code::kInvalidInput, "--config names no file, which vLLM refuses (argparse_utils.py:554-557)");
  }
  const std::string path = *(at + 1);
  if (!path.ends_with(".yaml") && !path.ends_with(".yml")) {
    return MakeError(
        Code::kInvalidInput,
        "--config " + path + " is not a .yaml or .yml file, which vLLM refuses (argparse_utils.py:636-640)");
  }
  const ConfigFile* file = FindConfigFile(config, path);
  if (!file) return words;
  const ConfigFile& f = *file;
  if (!f.yaml || !f.yaml->is_object()) {
    return MakeError(Code::kInvalidInput, "--config " + path + " (" + f.source +
                                              ") is not a YAML mapping, which vLLM refuses" +
                                              (f.yaml_error.empty() ? "" : ": " + f.yaml_error));
  }
  std::vector<std::string> args;
  for (const auto& [key, value] : f.yaml->items()) {
    if (value.is_boolean()) {
      if (value.get<bool>()) {
        args.push_back("--" + key);
      } else if (IsOption("--no-" + key)) {
        args.push_back("--no-" + key);
      }
    } else if (value.is_array()) {
      if (value.empty()) continue;
      args.push_back("--" + key);
      for (const auto& item : value) args.push_back(PythonStr(item));
    } else if (value.is_object()) {
      args.push_back("--" + key);
      args.push_back(value.dump());
    } else {
      args.push_back("--" + key);
      args.push_back(PythonStr(value));
    }
  }
  l.read.push_back("--config " + path + " (" + f.source + ")");
  const auto index = at - words.begin();
  words.erase(at, at + 2);
  // After the model when it comes first (`vllm serve MODEL --config f.yaml`), else first.
  const auto insert_at = words.empty() || words.front().starts_with("-") || index == 0 ? 0 : 1;
  words.insert(words.begin() + insert_at, args.begin(), args.end());
  return words;
}

}  // namespace

Result<std::vector<std::string>> PrepareVllmWords(std::vector<std::string> words, const ContainerConfig* config,
                                                  ServerLaunch& l) {
  auto pulled = PullConfig(std::move(words), config, l);
  if (!pulled) return pulled.error();
  words = std::move(*pulled);
  std::vector<std::string> out;
  std::vector<std::pair<std::string, json>> dotted;  // in the order first given
  for (size_t i = 0; i < words.size(); ++i) {
    std::string word = words[i];
    if (word.starts_with("--")) {
      const size_t eq = word.find('=');
      word = DashedKey(word.substr(0, eq)) + (eq == std::string::npos ? "" : word.substr(eq));
    }
    const size_t eq = word.find('=');
    const std::string key = word.substr(0, eq);
    if (word.starts_with("-") && key.find('.') != std::string::npos) {
      std::string value;
      if (eq != std::string::npos) {
        value = word.substr(eq + 1);
      } else if (i + 1 < words.size()) {
        value = words[++i];
      }
      std::string path = key;
      json v;
      if (path.ends_with("+")) {
        path.pop_back();
        v = json::array();
        for (size_t start = 0;;) {
          const size_t comma = value.find(',', start);
          v.push_back(value.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
          if (comma == std::string::npos) break;
          start = comma + 1;
        }
      } else {
        v = DottedValue(value);
      }
      std::vector<std::string> keys;
      for (size_t start = 0;;) {
        const size_t dot = path.find('.', start);
        keys.push_back(path.substr(start, dot == std::string::npos ? std::string::npos : dot - start));
        if (dot == std::string::npos) break;
        start = dot + 1;
      }
      for (size_t k = keys.size(); k-- > 1;) v = json{{keys[k], std::move(v)}};
      auto slot = std::find_if(dotted.begin(), dotted.end(), [&](const auto& d) { return d.first == keys[0]; });
      if (slot == dotted.end()) slot = dotted.insert(dotted.end(), {keys[0], json::object()});
      Merge(slot->second, v);
      continue;
    }
    if (word.starts_with("--") && word.size() > 2) {
      auto full = Abbreviated(key);
      if (!full) return MakeError(full.error().code, key + " " + full.error().message);
      if (*full && **full != key) word = std::string(**full) + (eq == std::string::npos ? "" : word.substr(eq));
    }
    out.push_back(std::move(word));
  }
  // The merged values go last, as if each were one JSON flag given there (argparse_utils.py:
  // 492-496): argparse keeps the last, so a dotted form wins over the same flag's JSON.
  for (auto& [key, value] : dotted) {
    auto full = Abbreviated(key);
    if (!full) return MakeError(full.error().code, key + " " + full.error().message);
    out.push_back(*full ? std::string(**full) : key);
    out.push_back(value.dump());
  }
  return out;
}

}  // namespace shmguard::servers
