// Env, SplitLaunch, ExpansionBudget, NormalizedFlag, Basename and the servers' number parsers.
#include "core/servers/internal/launch_text.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>

namespace shmguard::servers {
namespace {

bool IsNameChar(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
}

bool IsSpace(char c) { return c == ' ' || (c >= '\t' && c <= '\r'); }

// One item of command or args with its references replaced, appended to `out`; false when `out`
// would pass `budget` bytes. Linear: a search for a closing ')' or '}' that found none is not
// repeated (no later reference can find one either).
class Expander {
 public:
  // `shell`: ${NAME} and $NAME too, as a shell expands them; else only the kubelet's $(NAME).
  Expander(const Env& env, size_t budget, bool shell = true) : env_(env), budget_(budget), shell_(shell) {}

  bool Append(std::string_view s, std::string& out) {
    size_t no_paren = std::string_view::npos, no_brace = std::string_view::npos;
    for (size_t i = 0; i < s.size();) {
      const size_t dollar = s.find('$', i);
      if (!Put(s.substr(i, dollar == std::string_view::npos ? s.size() - i : dollar - i), out)) return false;
      if (dollar == std::string_view::npos) break;
      i = dollar;
      if (i + 1 >= s.size()) {
        if (!Put("$", out)) return false;
        ++i;
        continue;
      }
      const char open = s[i + 1];
      if (open == '$' && !shell_) {  // the kubelet's escape: $$ is $
        if (!Put("$", out)) return false;
        i += 2;
        continue;
      }
      if (!shell_ && open != '(') {  // the shell's reference: left for the shell
        if (!Put("$", out)) return false;
        ++i;
        continue;
      }
      size_t name_start = i + 1, name_end, next;
      if (open == '(' || open == '{') {
        size_t& none_after = open == '(' ? no_paren : no_brace;
        size_t close = std::string_view::npos;
        if (none_after == std::string_view::npos || i + 2 < none_after) {
          close = s.find(open == '(' ? ')' : '}', i + 2);
          if (close == std::string_view::npos) none_after = i + 2;
        }
        if (close == std::string_view::npos) {
          if (!Put("$", out)) return false;
          ++i;
          continue;
        }
        name_start = i + 2;
        name_end = close;
        next = close + 1;
      } else {
        name_end = name_start;
        while (name_end < s.size() && IsNameChar(s[name_end])) ++name_end;
        next = name_end;
      }
      std::optional<std::string_view> value;
      if (name_end > name_start) value = env_.Find(s.substr(name_start, name_end - name_start));
      if (!Put(value ? *value : s.substr(i, next - i), out)) return false;
      i = next;
    }
    return true;
  }

 private:
  bool Put(std::string_view piece, std::string& out) {
    used_ += piece.size();
    if (used_ > budget_) return false;
    out.append(piece);
    return true;
  }

  const Env& env_;
  size_t budget_;
  bool shell_;
  size_t used_ = 0;
};

}  // namespace

Env::Env(JsonNode container, const ContainerConfig* config) {
  for (JsonNode e : container.Find("env").Items()) {
    JsonNode name = e.Find("name");
    if (!name.IsString()) continue;
    JsonNode value = e.Find("value");
    bytes_ += name.String().size() + value.String().size();
    // The first entry of a name is the one read, as everywhere in the core (launch_facts.cc).
    values_.try_emplace(name.String(), value.IsString() ? std::optional(value.String()) : std::nullopt);
  }
  // envFrom's variables are set first and env's over them, a later source's over an earlier's
  // (pkg/kubelet/kubelet_pods.go, makeEnvironmentVariables: one map, assigned in that order).
  if (config) {
    for (auto it = config->env.rbegin(); it != config->env.rend(); ++it) {
      bytes_ += it->first.size() + it->second.size();
      values_.try_emplace(std::string_view(it->first), std::optional<std::string_view>(it->second));
    }
  }
}

std::optional<std::string_view> Env::Find(std::string_view name) const {
  auto it = values_.find(name);
  return it == values_.end() ? std::nullopt : it->second;
}

size_t ExpansionBudget(JsonNode container, const Env& env) {
  size_t text = env.bytes();
  for (const char* field : {"command", "args"}) {
    for (JsonNode item : container.Find(field).Items()) text += item.String().size();
  }
  return std::min(kMaxExpansionBytes, std::max(kMinExpansionBytes, text));
}

namespace {

bool IsShell(std::string_view word) {
  const std::string_view b = Basename(word);
  return b == "sh" || b == "bash" || b == "dash" || b == "ash" || b == "zsh" || b == "ksh";
}

// "-c", "-ec", "-lc", "-euxc": a shell's short options that take the script from its next word.
bool IsScriptFlag(std::string_view word) {
  if (word.size() < 2 || word[0] != '-' || word[1] == '-') return false;
  for (char c : word.substr(1)) {
    if (c < 'a' || c > 'z') return false;
  }
  return word.find('c') != std::string_view::npos;
}

// A shell script's words as the shell splits them (POSIX XCU 2.2-2.3): at unquoted blanks and
// operators (';', '&', '|', which end a command and are dropped), a backslash quoting the next
// character (a line continuation is dropped), '...' literal, "..." with \ \" \$ \` escaped; quote
// characters dropped. `$` references were expanded before (Expander). Linear.
// The reference at `script[i]` ('$'): "${NAME}" or "$NAME", or just "$".
size_t ReferenceEnd(std::string_view script, size_t i) {
  if (i + 1 < script.size() && script[i + 1] == '{') {
    const size_t close = script.find('}', i + 2);
    return close == std::string_view::npos ? i + 1 : close + 1;
  }
  size_t end = i + 1;
  while (end < script.size() && IsNameChar(script[end])) ++end;
  return end;
}

bool SplitScript(std::string_view script, Expander& shell, std::vector<std::string>& out) {
  std::string word;
  bool started = false;  // an empty quoted word ('') is still a word
  auto flush = [&] {
    if (started) out.push_back(std::move(word));
    word.clear();
    started = false;
  };
  // A reference's value: its text as it is, split at blanks where it is not quoted (the value
  // is not read for quotes again, as a shell does not).
  auto expand = [&](size_t& i, bool quoted) {
    const size_t end = ReferenceEnd(script, i);
    std::string value;
    if (!shell.Append(script.substr(i, end - i), value)) return false;
    for (char v : value) {
      if (!quoted && IsSpace(v)) {
        flush();
      } else {
        word += v;
        started = true;
      }
    }
    i = end - 1;
    return true;
  };
  for (size_t i = 0; i < script.size(); ++i) {
    const char c = script[i];
    if (c == '$') {
      if (!expand(i, false)) return false;
    } else if (c == '\\') {
      if (i + 1 < script.size() && script[i + 1] != '\n') {
        word += script[i + 1];
        started = true;
      }
      ++i;
    } else if (c == '\'') {
      const size_t close = script.find('\'', i + 1);
      const size_t end = close == std::string_view::npos ? script.size() : close;
      word.append(script.substr(i + 1, end - i - 1));
      started = true;
      i = end;
    } else if (c == '"') {
      started = true;
      for (++i; i < script.size() && script[i] != '"'; ++i) {
        if (script[i] == '$') {
          if (!expand(i, true)) return false;
        } else if (script[i] == '\\' && i + 1 < script.size() &&
                   std::string_view("\\\"$`\n").find(script[i + 1]) != std::string_view::npos) {
          if (script[++i] != '\n') word += script[i];
        } else {
          word += script[i];
        }
      }
    } else if (IsSpace(c) || c == ';' || c == '&' || c == '|') {
      flush();
    } else {
      word += c;
      started = true;
    }
  }
  flush();
  return true;
}

// `words` with every shell's -c script split into its words in place (a script's own shell -c
// script too): "sh -c 'exec vllm serve m'" -> sh, -c, exec, vllm, serve, m.
// false when an expansion passes the budget.
bool SplitScripts(std::vector<std::string> words, Expander& expander, std::vector<std::string>& out, int depth = 0) {
  bool shell = false, script_next = false;
  for (auto& word : words) {
    if (script_next && depth < 4) {
      std::vector<std::string> script;
      if (!SplitScript(word, expander, script)) return false;
      if (!SplitScripts(std::move(script), expander, out, depth + 1)) return false;
      script_next = shell = false;
      continue;
    }
    if (shell && IsScriptFlag(word)) script_next = true;
    if (IsShell(word)) shell = true;
    out.push_back(std::move(word));
  }
  return true;
}

}  // namespace

void Env::Set(std::string_view name, std::string_view value) {
  const std::string& n = owned_.emplace_back(name);
  const std::string& v = owned_.emplace_back(value);
  values_[n] = std::string_view(v);
}

Words SplitLaunch(JsonNode container, const Env& env, size_t budget) {
  Words w;
  Expander expander(env, budget, false);
  std::vector<std::string> items;
  for (const char* field : {"command", "args"}) {
    for (JsonNode item : container.Find(field).Items()) {
      if (!item.IsString()) continue;
      std::string expanded;
      if (!expander.Append(item.String(), expanded)) {
        w.overflow = true;
        return w;
      }
      items.push_back(std::move(expanded));
    }
  }
  Expander shell(env, budget);
  if (!SplitScripts(std::move(items), shell, w.text)) w.overflow = true;
  return w;
}

std::vector<std::pair<std::string, std::string>> ShellAssignments(const std::vector<std::string>& words, size_t end) {
  std::vector<std::pair<std::string, std::string>> out;
  for (size_t i = 0; i < end && i < words.size(); ++i) {
    const std::string& w = words[i];
    const size_t eq = w.find('=');
    if (eq == 0 || eq == std::string::npos || (w[0] >= '0' && w[0] <= '9')) continue;
    if (!std::all_of(w.begin(), w.begin() + static_cast<std::ptrdiff_t>(eq), IsNameChar)) continue;
    out.emplace_back(w.substr(0, eq), w.substr(eq + 1));
  }
  return out;
}

std::string NormalizedFlag(std::string_view word) {
  std::string out(word);
  if (out.rfind("--", 0) != 0) return out;
  const size_t end = std::min(out.find('='), out.size());
  std::replace(out.begin() + 2, out.begin() + static_cast<std::ptrdiff_t>(end), '_', '-');
  return out;
}

std::string_view Basename(std::string_view word) {
  const size_t slash = word.rfind('/');
  return slash == std::string_view::npos ? word : word.substr(slash + 1);
}

namespace {

std::string_view Trimmed(std::string_view s) {
  while (!s.empty() && IsSpace(s.front())) s.remove_prefix(1);
  while (!s.empty() && IsSpace(s.back())) s.remove_suffix(1);
  return s;
}

// Digits with single underscores between them, as Python's number grammar writes them, with the
// underscores taken out; nullopt otherwise ("1__0", "_1", "1_").
std::optional<std::string> Digits(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (c >= '0' && c <= '9') {
      out += c;
    } else if (c == '_' && i > 0 && i + 1 < s.size() && std::isdigit(static_cast<unsigned char>(s[i - 1])) &&
               std::isdigit(static_cast<unsigned char>(s[i + 1]))) {
      continue;
    } else {
      return std::nullopt;
    }
  }
  if (out.empty()) return std::nullopt;
  return out;
}

bool EqualsIgnoringCase(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
         });
}

}  // namespace

std::optional<int64_t> ParsePythonInt(std::string_view s) {
  s = Trimmed(s);
  bool negative = false;
  if (!s.empty() && (s[0] == '+' || s[0] == '-')) {
    negative = s[0] == '-';
    s.remove_prefix(1);
  }
  auto digits = Digits(s);
  if (!digits) return std::nullopt;
  int64_t v = 0;
  for (char c : *digits) {
    if (__builtin_mul_overflow(v, 10, &v) || __builtin_add_overflow(v, c - '0', &v)) return std::nullopt;
  }
  return negative ? -v : v;
}

std::optional<double> ParsePythonFloat(std::string_view s) {
  s = Trimmed(s);
  std::string_view body = s;
  if (!body.empty() && (body[0] == '+' || body[0] == '-')) body.remove_prefix(1);
  for (std::string_view word : {"inf", "infinity", "nan"}) {
    if (EqualsIgnoringCase(body, word)) return word == "nan" ? NAN : (s[0] == '-' ? -INFINITY : INFINITY);
  }
  // digits [. digits] [e [sign] digits], or . digits [...]; each run of digits may hold '_'.
  std::string plain(s.substr(0, s.size() - body.size()));
  size_t i = 0;
  auto run = [&](bool required) -> bool {
    size_t start = i;
    while (i < body.size() && (std::isdigit(static_cast<unsigned char>(body[i])) || body[i] == '_')) ++i;
    if (start == i) return !required;
    auto digits = Digits(body.substr(start, i - start));
    if (!digits) return false;
    plain += *digits;
    return true;
  };
  const size_t before = i;
  if (!run(false)) return std::nullopt;
  const bool whole = i > before;
  if (i < body.size() && body[i] == '.') {
    plain += '.';
    ++i;
    const size_t frac_start = i;
    if (!run(false)) return std::nullopt;
    if (!whole && i == frac_start) return std::nullopt;  // "." alone
  } else if (!whole) {
    return std::nullopt;
  }
  if (i < body.size() && (body[i] == 'e' || body[i] == 'E')) {
    plain += 'e';
    ++i;
    if (i < body.size() && (body[i] == '+' || body[i] == '-')) plain += body[i++];
    if (!run(true)) return std::nullopt;
  }
  if (i != body.size()) return std::nullopt;
  errno = 0;
  char* end = nullptr;
  const double v = std::strtod(plain.c_str(), &end);
  if (end != plain.c_str() + plain.size()) return std::nullopt;
  return v;  // past DBL_MAX strtod gives inf, as Python's float() does
}

std::optional<int64_t> ParseRustUsize(std::string_view s) {
  if (!s.empty() && s[0] == '+') s.remove_prefix(1);
  if (s.empty()) return std::nullopt;
  int64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return std::nullopt;
    if (__builtin_mul_overflow(v, 10, &v) || __builtin_add_overflow(v, c - '0', &v)) return std::nullopt;
  }
  return v;
}

namespace {

// "/etc/vllm//./config.yaml" -> "/etc/vllm/config.yaml"; a relative path is joined to
// `working_dir` first ("" when the spec does not say: the image's WORKDIR).
std::string NormalPath(std::string_view path, std::string_view working_dir) {
  std::string joined = path.starts_with('/') ? std::string(path) : std::string(working_dir) + "/" + std::string(path);
  std::vector<std::string> parts;
  for (size_t start = 0; start <= joined.size();) {
    size_t slash = joined.find('/', start);
    if (slash == std::string::npos) slash = joined.size();
    const std::string part = joined.substr(start, slash - start);
    if (part == "..") {
      if (!parts.empty()) parts.pop_back();
    } else if (!part.empty() && part != ".") {
      parts.push_back(part);
    }
    start = slash + 1;
  }
  std::string out;
  for (const auto& part : parts) out += "/" + part;
  return out.empty() ? "/" : out;
}

}  // namespace

Result<std::optional<std::string_view>> ArgparseMatch(std::string_view name, std::span<const std::string_view> options,
                                                      std::string_view parser) {
  // The options are sorted: those that begin with `name` are one run from its lower bound.
  std::vector<std::string_view> matches;
  for (auto it = std::lower_bound(options.begin(), options.end(), name); it != options.end() && it->starts_with(name);
       ++it) {
    if (*it == name) return std::optional<std::string_view>(*it);
    matches.push_back(*it);
  }
  if (matches.empty()) return std::optional<std::string_view>();
  if (matches.size() == 1) return std::optional<std::string_view>(matches[0]);
  std::string could;
  for (size_t i = 0; i < matches.size() && i < 4; ++i) could += (i ? ", " : "") + std::string(matches[i]);
  if (matches.size() > 4) could += ", …";
  return MakeError(Code::kInvalidInput,
                   "is ambiguous to " + std::string(parser) + "'s parser, which refuses it: it could be " + could);
}

const ConfigFile* FindConfigFile(const ContainerConfig* config, std::string_view path) {
  if (!config) return nullptr;
  auto file = config->files.find(NormalPath(path, config->working_dir));
  return file == config->files.end() ? nullptr : file->second.get();
}

std::string PythonStr(const nlohmann::json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_boolean()) return v.get<bool>() ? "True" : "False";
  if (v.is_null()) return "None";
  return v.dump();
}

}  // namespace shmguard::servers
