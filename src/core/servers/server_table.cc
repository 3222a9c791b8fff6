// The table of servers, and what reads a launch through a server's row: which server a
// container launches, its flags and variables, its plan; their names and words.
#include <algorithm>
#include <array>
#include <map>

#include "core/plan/shm_plan.h"
#include "core/servers/internal/launch_text.h"
#include "core/servers/internal/server_rows.h"
#include "core/values/quantity.h"

namespace shmguard {
namespace servers {
namespace {

constexpr const ServerRow* kRows[] = {&kVllmRow, &kSglangRow, &kTgiRow, &kTritonRow, &kRayRow};

const ServerRow* RowOf(Server s) {
  for (const ServerRow* row : kRows) {
    if (row->server == s) return row;
  }
  return nullptr;
}

// Whether a word of command or args names a launcher of some row, before anything is expanded
// or split: most pods launch no server, and the admission path reads every pod. A launcher named
// only through a variable ($(SERVER) serve) is therefore not recognised.
bool NamesLauncher(std::string_view s) {
  for (const ServerRow* row : kRows) {
    for (const LauncherRow& l : row->launchers) {
      const std::string_view key = l.word == "-m" ? l.next.substr(0, l.next.find('.')) : l.word;
      if (s.find(key) != std::string_view::npos) return true;
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

// The server the words launch: its row, the index the flags are read from, and how it was
// launched; no row when none.
struct Launch {
  const ServerRow* row = nullptr;
  size_t from = 0;
  std::string by;
  size_t at = 0;  // the launcher's first word
};

Launch FindLauncher(const Words& w) {
  for (size_t i = 0; i < w.text.size(); ++i) {
    const std::string_view word = w.text[i];
    const std::string_view next = i + 1 < w.text.size() ? std::string_view(w.text[i + 1]) : std::string_view();
    for (const ServerRow* row : kRows) {
      if (row->server == Server::kRay) continue;  // `ray start` alone: a Ray node (below)
      for (const LauncherRow& l : row->launchers) {
        const bool module = l.word == "-m";
        if ((module ? word != l.word : Basename(word) != l.word) || (!l.next.empty() && next != l.next)) continue;
        const size_t after = i + (l.next.empty() ? 1 : 2);
        std::string by = module ? "python -m " + std::string(next)
                                : std::string(l.word) + (l.next.empty() ? "" : " " + std::string(l.next));
        return {row, l.flags_from_start ? 0 : after, std::move(by), i};
      }
    }
  }
  return {};
}

Launch FromImage(std::string_view image) {
  for (const ServerRow* row : kRows) {
    for (std::string_view part : row->images) {
      if (image.find(part) != std::string_view::npos) return {row, 0, "image " + std::string(image)};
    }
  }
  return {};
}

// The index of `ray start`'s flags, when the words run it.
std::optional<size_t> RayStart(const Words& w) {
  for (size_t i = 0; i + 1 < w.text.size(); ++i) {
    if (Basename(w.text[i]) == "ray" && w.text[i + 1] == "start") return i + 2;
  }
  return std::nullopt;
}

Error Malformed(const std::string& written, std::string_view want, const std::string& pointer) {
  return MakeError(Code::kInvalidInput, written + " is not " + std::string(want), Location::Pointer(pointer));
}

// The last value each of a row's flags is given in `words` from `from` (argparse and clap keep
// the last), as written.
struct Given {
  std::string name;                  // the spelling written, normalized ("--tensor-parallel-size")
  std::optional<std::string> value;  // "--flag V" or "--flag=V"; nullopt for a bare switch
  bool negated = false;              // --no-flag (argparse's BooleanOptionalAction)
};

// Every word that names one of `row`'s flags, as (row index, given): the last one of each flag,
// or all of a repeated one in order. `unknown` collects the words that look like flags and name
// none of them (for ReadServerArgs).
std::map<size_t, std::vector<Given>> FindFlags(const ServerRow& row, const std::vector<std::string>& words, size_t from,
                                               std::vector<std::string>* unknown) {
  std::map<size_t, std::vector<Given>> out;
  for (size_t i = from; i < words.size(); ++i) {
    if (words[i].size() < 2 || words[i][0] != '-') continue;
    const std::string word = NormalizedFlag(words[i]);
    const size_t eq = word.find('=');
    std::string name = word.substr(0, eq);
    bool negated = false;
    std::optional<size_t> index;
    for (size_t k = 0; k < row.flags.size() && !index; ++k) {
      for (std::string_view n : row.flags[k].names) {
        if (n.empty()) break;
        if (name == n) {
          index = k;
        } else if (row.flags[k].value == FlagValue::kSwitch && n.starts_with("--") &&
                   name == "--no-" + std::string(n.substr(2))) {
          index = k;
          negated = true;
        }
        if (index) break;
      }
    }
    if (!index) {
      if (unknown) unknown->push_back(words[i]);
      continue;
    }
    Given g{std::string(row.flags[*index].names[0]), std::nullopt, negated};
    g.name = name;
    if (eq != std::string::npos) {
      g.value = word.substr(eq + 1);
    } else if (row.flags[*index].value != FlagValue::kSwitch && i + 1 < words.size()) {
      g.value = words[++i];
    }
    auto& given = out[*index];
    if (!row.flags[*index].repeated) given.clear();
    given.push_back(std::move(g));
  }
  return out;
}

std::string_view WantOf(FlagValue v, NumberParser numbers) {
  switch (v) {
    case FlagValue::kCount:
      return numbers == NumberParser::kRustUsize ? "a whole number from 1 to 65536 (digits only)"
                                                 : "a whole number from 1 to 65536";
    case FlagValue::kGib: return "a size in GiB from 0 to 1048576, as Python's float() reads it";
    case FlagValue::kBytes: return "a number of bytes from 1 to 2^63-1, as Python's int() reads it";
    case FlagValue::kBool: return "true or false";
    case FlagValue::kSwitch:
    case FlagValue::kWord: break;
  }
  return "";
}

// One flag's value, read as its row says, into `l`; an error naming it when the server's parser
// would refuse it. A count whose value is a variable nobody set goes to `l.unread`.
std::optional<Error> Apply(const ServerRow& row, const FlagRow& flag, const std::string& written,
                           std::optional<std::string_view> value, bool negated, ServerLaunch& l,
                           const std::string& pointer) {
  FlagRead r;
  l.read.push_back(written);
  if (flag.value == FlagValue::kSwitch) {
    r.flag = !negated && (!value || *value != "false");
    flag.set(l, r);
    return std::nullopt;
  }
  if (!value) return Malformed(written, "followed by its value", pointer);
  if (value->find('$') != std::string_view::npos) {
    if (flag.value == FlagValue::kCount) {
      l.unread.push_back(written);
      r.unread = true;
      flag.set(l, r);
    }
    return std::nullopt;
  }
  const std::string want = flag.value == FlagValue::kCount && flag.min != 1
                               ? "a whole number from " + std::to_string(flag.min) + " to 65536"
                               : std::string(WantOf(flag.value, row.numbers));
  switch (flag.value) {
    case FlagValue::kCount: {
      auto n = row.numbers == NumberParser::kRustUsize ? ParseRustUsize(*value) : ParsePythonInt(*value);
      if (!n || *n < flag.min || *n > kMaxRanks) return Malformed(written, want, pointer);
      r.count = *n;
      break;
    }
    case FlagValue::kGib: {
      auto gib = ParsePythonFloat(*value);
      if (!gib || !(*gib >= 0 && *gib <= 1024.0 * 1024)) return Malformed(written, want, pointer);
      // vLLM multiplies by 2^30 and truncates (int(gb * GiB_bytes)).
      r.count = static_cast<int64_t>(*gib * static_cast<double>(int64_t{1} << 30));
      break;
    }
    case FlagValue::kBytes: {
      auto n = ParsePythonInt(*value);
      if (!n || *n < 1) return Malformed(written, want, pointer);
      r.count = *n;
      break;
    }
    case FlagValue::kBool:
      if (*value != "true" && *value != "false") return Malformed(written, want, pointer);
      r.flag = *value == "true";
      break;
    case FlagValue::kWord: r.word = *value; break;
    case FlagValue::kSwitch: break;
  }
  flag.set(l, r);
  return std::nullopt;
}

// The flags of `row` in `words` from `from`, then the variables it reads from `env` (a flag's
// fallback, and the row's own), into `l`.
std::optional<Error> ReadRow(const ServerRow& row, const std::vector<std::string>& words, size_t from, const Env* env,
                             const ContainerConfig* config, ServerLaunch& l, const std::string& pointer,
                             std::vector<std::string>* unknown) {
  std::vector<std::string> tail(words.begin() + static_cast<std::ptrdiff_t>(std::min(from, words.size())), words.end());
  if (row.prepare) {
    auto prepared = row.prepare(std::move(tail), config, l);
    if (!prepared) return MakeError(prepared.error().code, prepared.error().message, Location::Pointer(pointer));
    tail = std::move(*prepared);
  }
  const std::map<size_t, std::vector<Given>> given = FindFlags(row, tail, 0, unknown);
  for (size_t k = 0; k < row.flags.size(); ++k) {
    const FlagRow& flag = row.flags[k];
    auto it = given.find(k);
    std::optional<Error> error;
    if (it != given.end()) {
      for (const Given& g : it->second) {
        const std::string written = g.negated ? g.name : g.value ? g.name + "=" + *g.value : g.name;
        error = Apply(row, flag, written, g.value ? std::optional<std::string_view>(*g.value) : std::nullopt, g.negated,
                      l, pointer);
        if (error) break;
      }
    } else if (!flag.env.empty() && env) {
      if (auto v = env->Find(flag.env)) {
        error =
            Apply(row, flag, "env " + std::string(flag.env) + "=" + std::string(*v), *v, false, l, pointer + "/env");
      }
    }
    if (error) return error;
  }
  if (env) {
    for (const EnvRow& e : row.env) {
      auto v = env->Find(e.name);
      if (!v) continue;
      const std::string written = "env " + std::string(e.name) + "=" + std::string(*v);
      l.read.push_back(written);
      if (!e.set(l, *v)) return Malformed(written, e.expected, pointer + "/env");
    }
  }
  if (row.settle) {
    if (std::string refused = row.settle(l); !refused.empty()) {
      return MakeError(Code::kInvalidInput, std::move(refused), Location::Pointer(pointer));
    }
  }
  return std::nullopt;
}

}  // namespace
}  // namespace servers

using servers::kRows;

std::string_view ServerName(Server s) {
  const servers::ServerRow* row = servers::RowOf(s);
  return row ? row->name : "";
}

std::string_view ServerTitle(Server s) {
  const servers::ServerRow* row = servers::RowOf(s);
  return row ? row->title : "";
}

std::optional<Server> ParseServer(std::string_view name) {
  for (const servers::ServerRow* row : kRows) {
    if (name == row->name) return row->server;
  }
  return std::nullopt;
}

std::string ServerFlagsText(const ServerLaunch& launch) {
  std::string out;
  for (const auto& word : launch.read) out += (out.empty() ? "" : ", ") + word;
  return out;
}

Result<std::optional<ServerLaunch>> ReadServerLaunch(JsonNode container, std::string_view pointer,
                                                     const ContainerConfig* config) {
  using namespace servers;
  JsonNode image = container.Find("image");
  const bool no_command = !container.Find("command").IsArray();
  if (!MayLaunchServer(container) && (!no_command || !image.IsString() || FromImage(image.String()).row == nullptr)) {
    return std::optional<ServerLaunch>();
  }
  Env env(container, config);
  Words w = SplitLaunch(container, env, ExpansionBudget(container, env));
  std::string where = std::string(pointer) + "/command";
  Launch launch = w.overflow ? Launch{} : FindLauncher(w);
  // What the shell sets before the launch (`export VLLM_...=256; exec vllm serve`, `A=1 vllm
  // serve`) is the server's env: read again with it, so its $REFERENCES expand too.
  if (launch.row) {
    const auto assignments = ShellAssignments(w.text, launch.at);
    for (const auto& [name, value] : assignments) env.Set(name, value);
    if (!assignments.empty()) {
      w = SplitLaunch(container, env, ExpansionBudget(container, env));
      launch = w.overflow ? Launch{} : FindLauncher(w);
    }
  }
  if (w.overflow) {
    return MakeError(Code::kUnsupportedKind,
                     "its command and args expand past " + std::to_string(ExpansionBudget(container, env)) +
                         " bytes, the most shmguard reads (its own text, at least 64 KiB and at most 1 MiB)",
                     Location::Pointer(where));
  }
  if (!launch.row && no_command) {
    launch = FromImage(image.String());
    where = std::string(pointer) + (container.Find("args").IsArray() ? "/args" : "/image");
  }
  // `ray start` alone is a Ray node; before a server it is the server's Ray.
  const std::optional<size_t> ray_at = RayStart(w);
  if (!launch.row && ray_at) launch = {&kRayRow, *ray_at, "ray start"};
  if (!launch.row) return std::optional<ServerLaunch>();

  ServerLaunch l;
  l.server = launch.row->server;
  l.launched_by = launch.by;
  l.pointer = where;
  for (const char* kind : {"limits", "requests"}) {
    l.rocm = l.rocm || bool(container.Find("resources").Find(kind).Find("amd.com/gpu"));
  }
  if (auto e = ReadRow(*launch.row, w.text, launch.from, &env, config, l, where, nullptr)) return *e;
  if (ray_at && l.server != Server::kRay) {
    l.ray_started = true;
    if (auto e = ReadRow(kRayRow, w.text, *ray_at, nullptr, nullptr, l, where, nullptr)) return *e;
  } else if (l.server == Server::kRay) {
    l.ray_started = true;
  }
  return std::optional<ServerLaunch>(std::move(l));
}

Result<ServerLaunch> ReadServerArgs(Server server, const std::vector<std::string>& args) {
  using namespace servers;
  const ServerRow* row = RowOf(server);
  if (!row) return MakeError(Code::kInvalidInput, "no server", Location::Field("--server"));
  ServerLaunch l;
  l.server = server;
  l.launched_by = "--server " + std::string(row->name);
  l.ray_started = server == Server::kRay;
  std::vector<std::string> unknown;
  if (auto e = ReadRow(*row, args, 0, nullptr, nullptr, l, "", &unknown)) {
    return MakeError(Code::kInvalidInput, e->message, Location::Field(l.read.empty() ? "" : l.read.back()));
  }
  if (!unknown.empty()) {
    std::string known;
    for (std::string_view n : ServerFlagNames(server)) known += (known.empty() ? "" : ", ") + std::string(n);
    return MakeError(Code::kInvalidInput,
                     "is not a flag shmguard reads for " + std::string(row->title) + " (it reads " + known + ")",
                     Location::Field(unknown.front()));
  }
  return l;
}

std::vector<std::string_view> ServerFlagNames(Server server) {
  std::vector<std::string_view> out;
  if (const servers::ServerRow* row = servers::RowOf(server)) {
    for (const servers::FlagRow& f : row->flags) out.push_back(f.names[0]);
  }
  return out;
}

Result<ServerPlan> PlanServer(const ServerLaunch& launch, int64_t gpus, std::optional<int64_t> memory_limit) {
  const servers::ServerRow* row = servers::RowOf(launch.server);
  if (!row) return ServerPlan{};
  return row->plan(launch, gpus, memory_limit);
}

}  // namespace shmguard
