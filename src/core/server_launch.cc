// ReadServerLaunch: which inference server a container runs, and the flags that size it.
#include <cmath>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "shmguard/field_values.h"
#include "shmguard/server_plan.h"

namespace shmguard {
namespace {

constexpr int64_t kMaxRanks = 1 << 16;  // GPUs a launch may name: far above any machine

using Env = std::vector<std::pair<std::string_view, std::string_view>>;

Env ReadEnv(JsonNode container) {
  Env env;
  for (JsonNode e : container.Find("env").Items()) {
    JsonNode name = e.Find("name"), value = e.Find("value");
    if (name.IsString() && value.IsString()) env.emplace_back(name.String(), value.String());
  }
  return env;
}

std::optional<std::string_view> Lookup(const Env& env, std::string_view name) {
  for (const auto& [n, v] : env) {
    if (n == name) return v;  // the first, as the kubelet sets it
  }
  return std::nullopt;
}

bool IsNameChar(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
}

// `s` with $(NAME) (the kubelet's expansion of command and args), ${NAME} and $NAME (a shell's,
// from the same env) replaced by the env's value; a reference to a variable the env does not
// set stays as written.
std::string Expand(std::string_view s, const Env& env) {
  std::string out;
  for (size_t i = 0; i < s.size();) {
    if (s[i] != '$' || i + 1 >= s.size()) {
      out += s[i++];
      continue;
    }
    const char open = s[i + 1];
    size_t name_start = i + 1, name_end, next;
    if (open == '(' || open == '{') {
      const size_t close = s.find(open == '(' ? ')' : '}', i + 2);
      if (close == std::string_view::npos) {
        out += s[i++];
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
    auto value = Lookup(env, s.substr(name_start, name_end - name_start));
    if (name_end == name_start || !value) {
      out += s.substr(i, next - i);
    } else {
      out += *value;
    }
    i = next;
  }
  return out;
}

// The words of command and args, each item expanded and split as a shell splits a `-c` string:
// at whitespace, quotes dropped, a line continuation's backslash and a command's ';' or '&&'
// dropped.
struct Words {
  std::vector<std::string> text;
};

Words Split(JsonNode container, const Env& env) {
  Words w;
  for (const char* field : {"command", "args"}) {
    for (JsonNode item : container.Find(field).Items()) {
      if (!item.IsString()) continue;
      const std::string s = Expand(item.String(), env);
      std::string word;
      auto flush = [&] {
        while (!word.empty() && (word.back() == ';' || word.back() == '\\')) word.pop_back();
        if (!word.empty() && word != "&&" && word != "||" && word != "|") {
          w.text.push_back(std::move(word));
        }
        word.clear();
      };
      for (char c : s) {
        if (c == ' ' || (c >= '\t' && c <= '\r')) {
          flush();
        } else if (c != '"' && c != '\'') {
          word += c;
        }
      }
      flush();
    }
  }
  return w;
}

std::string_view Basename(std::string_view word) {
  const size_t slash = word.rfind('/');
  return slash == std::string_view::npos ? word : word.substr(slash + 1);
}

// "--tensor_parallel_size=8" -> "--tensor-parallel-size=8": vLLM's and SGLang's parsers take
// either spelling of a long flag.
std::string Normalized(std::string_view word) {
  std::string out(word);
  if (out.rfind("--", 0) != 0) return out;
  const size_t end = std::min(out.find('='), out.size());
  for (size_t i = 2; i < end; ++i) {
    if (out[i] == '_') out[i] = '-';
  }
  return out;
}

// A flag's value after word `from`: "--flag=V" or "--flag V", the last one given (argparse keeps
// the last); with the word as written for the findings.
struct FlagValue {
  std::string value;
  std::string written;
};

std::optional<FlagValue> Flag(const Words& w, size_t from, std::initializer_list<std::string_view> names) {
  std::optional<FlagValue> found;
  for (size_t i = from; i < w.text.size(); ++i) {
    const std::string word = Normalized(w.text[i]);
    for (std::string_view name : names) {
      if (word == name && i + 1 < w.text.size()) {
        found = FlagValue{w.text[i + 1], std::string(name) + "=" + w.text[i + 1]};
      } else if (word.size() > name.size() && word.compare(0, name.size(), name) == 0 && word[name.size()] == '=') {
        found = FlagValue{word.substr(name.size() + 1), word};
      }
    }
  }
  return found;
}

bool HasWord(const Words& w, size_t from, std::initializer_list<std::string_view> names) {
  for (size_t i = from; i < w.text.size(); ++i) {
    const std::string word = Normalized(w.text[i]);
    for (std::string_view name : names) {
      if (word == name || (word.size() > name.size() && word.compare(0, name.size(), name) == 0 &&
                           word[name.size()] == '=' && word.substr(name.size() + 1) != "false")) {
        return true;
      }
    }
  }
  return false;
}

Error Malformed(const std::string& written, const char* want, std::string_view pointer) {
  return MakeError(Code::kInvalidInput, written + " is not " + want, Location::Pointer(std::string(pointer)));
}

// A count flag into `out` (left as it is when absent, or when its value is a variable the env
// does not set, which only the running shell knows).
Result<bool> ReadCount(const Words& w, size_t from, std::initializer_list<std::string_view> names, int64_t& out,
                       ServerLaunch& l, std::string_view pointer) {
  auto v = Flag(w, from, names);
  if (!v) return false;
  l.read.push_back(v->written);
  if (v->value.find('$') != std::string::npos) return false;
  auto n = ParseCount(v->value);
  if (!n || *n < 1 || *n > kMaxRanks) return Malformed(v->written, "a whole number from 1 to 65536", pointer);
  out = *n;
  return true;
}

// A size in GiB (a decimal, as vLLM's float flags take it) into bytes, rounded to a whole MiB.
Result<bool> ReadGib(const Words& w, size_t from, std::string_view name, int64_t& out, ServerLaunch& l,
                     std::string_view pointer) {
  auto v = Flag(w, from, {name});
  if (!v) return false;
  l.read.push_back(v->written);
  if (v->value.find('$') != std::string::npos) return false;
  char* end = nullptr;
  const double gib = std::strtod(v->value.c_str(), &end);
  if (v->value.empty() || end != v->value.c_str() + v->value.size() || !std::isfinite(gib) || gib < 0 ||
      gib > 1024 * 1024) {
    return Malformed(v->written, "a size in GiB from 0 to 1048576", pointer);
  }
  out = static_cast<int64_t>(std::llround(gib * 1024)) << 20;
  return true;
}

// The server the words launch, and the index after its launcher word; kNone when none.
struct Launcher {
  Server server = Server::kNone;
  size_t after = 0;
  std::string by;
};

Launcher FindLauncher(const Words& w) {
  for (size_t i = 0; i < w.text.size(); ++i) {
    const std::string_view word = Basename(w.text[i]);
    const std::string_view next = i + 1 < w.text.size() ? std::string_view(w.text[i + 1]) : std::string_view();
    if (word == "vllm" && next == "serve") return {Server::kVllm, i + 2, "vllm serve"};
    if (word == "sglang" && next == "serve") return {Server::kSglang, i + 2, "sglang serve"};
    if (w.text[i] == "-m" && (next == "vllm.entrypoints.openai.api_server" || next == "vllm.entrypoints.api_server" ||
                              next == "dynamo.vllm")) {
      return {Server::kVllm, i + 2, "python -m " + std::string(next)};
    }
    if (w.text[i] == "-m" && next == "sglang.launch_server")
      return {Server::kSglang, i + 2, "python -m sglang.launch_server"};
    if (word == "text-generation-launcher") return {Server::kTgi, i + 1, "text-generation-launcher"};
    // mpirun alone launches anything (NCCL's tests too): Triton when it runs Triton's server;
    // its -n is read from the start.
    if (word == "tritonserver" || word == "launch_triton_server.py" || word == "trtllm-serve") {
      return {Server::kTriton, i + 1, std::string(word)};
    }
  }
  return {};
}

// The image's own entrypoint, for a container that sets no command.
Launcher FromImage(std::string_view image) {
  if (image.find("vllm-openai") != std::string_view::npos) return {Server::kVllm, 0, "image " + std::string(image)};
  if (image.find("text-generation-inference") != std::string_view::npos) {
    return {Server::kTgi, 0, "image " + std::string(image)};
  }
  return {};
}

// Whether a word of command or args names a launcher FindLauncher knows, before anything is
// expanded or split: most pods launch no server, and the admission path reads every pod. A
// launcher named only through a variable ($(SERVER) serve) is therefore not recognised.
bool NamesLauncher(std::string_view s) {
  auto at = [&](size_t i, std::string_view name) {
    return s.size() - i >= name.size() && s.substr(i, name.size()) == name;
  };
  // One pass, a comparison only where a name's first two bytes are.
  for (size_t i = 0; i + 1 < s.size(); ++i) {
    const char c = s[i], d = s[i + 1];
    if ((c == 'v' && d == 'l' && at(i, "vllm")) || (c == 's' && d == 'g' && at(i, "sglang")) ||
        (c == 'r' && d == 'a' && at(i, "ray")) || (c == 'l' && d == 'a' && at(i, "launch_triton_server")) ||
        (c == 't' && ((d == 'e' && at(i, "text-generation-launcher")) ||
                      (d == 'r' && (at(i, "tritonserver") || at(i, "trtllm-serve")))))) {
      return true;
    }
  }
  return false;
}

bool MayLaunchServer(JsonNode container) {
  for (const char* field : {"command", "args"}) {
    for (JsonNode item : container.Find(field).Items()) {
      if (item.IsString() && NamesLauncher(item.String())) return true;
    }
  }
  return false;
}

}  // namespace

std::string_view ServerName(Server s) {
  switch (s) {
    case Server::kVllm: return "vllm";
    case Server::kSglang: return "sglang";
    case Server::kTgi: return "tgi";
    case Server::kTriton: return "triton";
    case Server::kRay: return "ray";
    case Server::kNone: break;
  }
  return "";
}

std::string_view ServerTitle(Server s) {
  switch (s) {
    case Server::kVllm: return "vLLM";
    case Server::kSglang: return "SGLang";
    case Server::kTgi: return "TGI";
    case Server::kTriton: return "Triton";
    case Server::kRay: return "Ray";
    case Server::kNone: break;
  }
  return "";
}

std::string ServerFlagsText(const ServerLaunch& launch) {
  std::string out;
  for (const auto& word : launch.read) out += (out.empty() ? "" : ", ") + word;
  return out;
}

std::optional<Server> ParseServer(std::string_view name) {
  for (Server s : {Server::kVllm, Server::kSglang, Server::kTgi, Server::kTriton, Server::kRay}) {
    if (name == ServerName(s)) return s;
  }
  return std::nullopt;
}

Result<std::optional<ServerLaunch>> ReadServerLaunch(JsonNode container, std::string_view pointer) {
  if (!MayLaunchServer(container)) {
    const bool no_command = !container.Find("command").IsArray();
    JsonNode image = container.Find("image");
    if (!no_command || !image.IsString() || FromImage(image.String()).server == Server::kNone) {
      return std::optional<ServerLaunch>();
    }
  }
  const Env env = ReadEnv(container);
  const Words w = Split(container, env);
  Launcher launcher = FindLauncher(w);
  std::string where = std::string(pointer) + "/command";
  if (launcher.server == Server::kNone && !container.Find("command").IsArray()) {
    launcher = FromImage(container.Find("image").IsString() ? container.Find("image").String() : std::string_view());
    where = std::string(pointer) + (container.Find("args").IsArray() ? "/args" : "/image");
  }
  // `ray start` alone is a Ray node; before a server it is the server's Ray.
  std::optional<size_t> ray_at;
  for (size_t i = 0; i + 1 < w.text.size() && !ray_at; ++i) {
    if (Basename(w.text[i]) == "ray" && w.text[i + 1] == "start") ray_at = i + 2;
  }
  if (launcher.server == Server::kNone && ray_at) launcher = {Server::kRay, *ray_at, "ray start"};
  if (launcher.server == Server::kNone) return std::optional<ServerLaunch>();

  ServerLaunch l;
  l.server = launcher.server;
  l.launched_by = launcher.by;
  l.pointer = where;
  for (const char* kind : {"limits", "requests"}) {
    l.rocm = l.rocm || bool(container.Find("resources").Find(kind).Find("amd.com/gpu"));
  }
  const size_t from = launcher.after;
  auto check = [](const Result<bool>& r) -> std::optional<Error> {
    if (!r) return r.error();
    return std::nullopt;
  };
  std::optional<Error> error;
  auto count = [&](std::initializer_list<std::string_view> names, int64_t& out) {
    if (!error) error = check(ReadCount(w, from, names, out, l, where));
  };
  switch (l.server) {
    case Server::kVllm: {
      count({"--tensor-parallel-size", "-tp"}, l.tensor_parallel);
      count({"--pipeline-parallel-size", "-pp"}, l.pipeline_parallel);
      count({"--data-parallel-size", "-dp"}, l.data_parallel);
      int64_t local = 0;
      if (!error) {
        auto r = ReadCount(w, from, {"--data-parallel-size-local", "-dpl"}, local, l, where);
        if (!r) error = r.error();
        if (r && *r) l.data_parallel_local = local;
      }
      count({"--nnodes", "-n"}, l.nnodes);
      if (auto v = Flag(w, from, {"--mm-processor-cache-type"})) {
        l.read.push_back(v->written);
        l.mm_cache_shm = v->value == "shm";
      }
      if (!error) error = check(ReadGib(w, from, "--mm-processor-cache-gb", l.mm_cache_bytes, l, where));
      if (!error) error = check(ReadGib(w, from, "--kv-offloading-size", l.kv_offload_bytes, l, where));
      l.tensor_arena = HasWord(w, from, {"--enable-shm-tensor-arena"});
      if (l.tensor_arena) l.read.push_back("--enable-shm-tensor-arena");
      if (auto v = Flag(w, from, {"--distributed-executor-backend"})) {
        l.read.push_back(v->written);
        l.ray_backend = v->value == "ray";
      }
      if (auto mb = Lookup(env, "VLLM_MQ_MAX_CHUNK_BYTES_MB")) {
        l.read.push_back("env VLLM_MQ_MAX_CHUNK_BYTES_MB=" + std::string(*mb));
        auto n = ParseCount(*mb);
        if (!n || *n < 1 || *n > 1 << 20) {
          error = MakeError(
              Code::kInvalidInput,
              "env VLLM_MQ_MAX_CHUNK_BYTES_MB=" + std::string(*mb) + " is not a whole number of MiB from 1 to 1048576",
              Location::Pointer(std::string(pointer) + "/env"));
        } else {
          l.mq_chunk_bytes = *n << 20;
        }
      }
      break;
    }
    case Server::kSglang:
      // argparse takes an unambiguous prefix of a long flag: --tp for --tp-size.
      count({"--tensor-parallel-size", "--tp-size", "--tp"}, l.tensor_parallel);
      count({"--pipeline-parallel-size", "--pp-size", "--pp"}, l.pipeline_parallel);
      count({"--data-parallel-size", "--dp-size", "--dp"}, l.data_parallel);
      count({"--nnodes"}, l.nnodes);
      // sglang/srt/arg_groups/fields/parallel.py: attn_dp_size, attn_cp_size, dcp_size and their
      // long aliases; the deprecated --dp-size N --enable-dp-attention is --attn-dp-size N
      // (arg_groups/parallel_hook.py, _handle_deprecated_dp_attention).
      count({"--attn-dp-size", "--attention-data-parallel-size"}, l.attention_dp);
      count({"--attn-cp-size", "--attention-context-parallel-size"}, l.attention_cp);
      count({"--dcp-size", "--decode-context-parallel-size"}, l.decode_cp);
      if (HasWord(w, from, {"--enable-dp-attention"})) {
        l.read.push_back("--enable-dp-attention");
        if (l.attention_dp == 1) {
          l.attention_dp = l.data_parallel;
          l.data_parallel = 1;
        }
      }
      if (auto v = Lookup(env, "SGLANG_USE_MESSAGE_QUEUE_BROADCASTER")) {
        l.read.push_back("env SGLANG_USE_MESSAGE_QUEUE_BROADCASTER=" + std::string(*v));
        l.mq_broadcaster = !(*v == "0" || *v == "false" || *v == "False");
      }
      break;
    case Server::kTgi: {
      int64_t shards = 0;
      if (!error) {
        auto r = ReadCount(w, from, {"--num-shard"}, shards, l, where);
        if (!r) error = r.error();
        if (r && *r) l.world_size = shards;
      }
      if (!l.world_size) {
        if (auto v = Lookup(env, "NUM_SHARD")) {
          l.read.push_back("env NUM_SHARD=" + std::string(*v));
          auto n = ParseCount(*v);
          if (n && *n >= 1 && *n <= kMaxRanks) l.world_size = *n;
        }
      }
      break;
    }
    case Server::kTriton: {
      int64_t n = 0;
      if (!error) {
        auto r = ReadCount(w, 0, {"-n", "-np", "--world-size"}, n, l, where);
        if (!r) error = r.error();
        if (r && *r) l.world_size = n;
      }
      count({"--tp-size", "--tp"}, l.tensor_parallel);
      count({"--pp-size", "--pp"}, l.pipeline_parallel);
      break;
    }
    case Server::kRay:
    case Server::kNone: break;
  }
  if (error) return *error;
  if (ray_at) {
    l.ray_started = true;
    if (auto v = Flag(w, *ray_at, {"--object-store-memory"})) {
      l.read.push_back(v->written);
      if (v->value.find('$') == std::string::npos) {
        auto n = ParseCount(v->value);
        if (!n || *n < 1) return Malformed(v->written, "a number of bytes", where);
        l.object_store_bytes = *n;
      }
    }
  }
  return std::optional<ServerLaunch>(std::move(l));
}

}  // namespace shmguard
