// A server's knowledge as one row: how it is launched, the flags and variables its parser reads
// into a ServerLaunch, and the /dev/shm its own segments take (its plan). A new server is a file
// of servers/ with its row, and a line of the table in server_table.cc. Internal to the core.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/servers/server_plan.h"

namespace shmguard::servers {

// How a flag's value is read.
enum class FlagValue {
  kCount,   // a whole number of ranks, 1 to kMaxRanks, as the parser reads an int (ParseAs)
  kGib,     // a size in GiB, as Python's float() reads it: 0 to 1048576
  kBytes,   // a number of bytes, as Python's int() reads it: 1 to 2^63-1
  kSwitch,  // argparse's store_true: present (or "--flag=true") is true
  kBool,    // a value "true" or "false" (clap's bool; argparse's BooleanOptionalAction takes --no-)
  kWord,    // any word (a choice the setter interprets)
};

// How a server's parser reads a number: the value it refuses is malformed.
enum class NumberParser { kPythonInt, kRustUsize };

// The value read, for a setter: `count` (kCount, kBytes; kGib in bytes), `flag` (kSwitch, kBool)
// or `word` (kWord).
struct FlagRead {
  int64_t count = 0;
  bool flag = false;
  std::string_view word;
  bool unread = false;  // kCount: a variable the spec does not set ("-tp=$(TP)")
};

// Setters for a count: a plain one takes 0 when unread (FillUnread settles it against the GPUs),
// an optional one stays unset.
template <int64_t ServerLaunch::*field>
void SetCount(ServerLaunch& l, const FlagRead& r) {
  l.*field = r.unread ? 0 : r.count;
}
template <std::optional<int64_t> ServerLaunch::*field>
void SetOptionalCount(ServerLaunch& l, const FlagRead& r) {
  if (!r.unread) l.*field = r.count;
}

// One flag: its spellings as the parser takes them, the env variable it falls back to when
// absent (clap's `env`; "" none), and what it sets. A flag absent from the launch sets nothing.
struct FlagRow {
  std::array<std::string_view, 4> names;
  FlagValue value;
  void (*set)(ServerLaunch&, const FlagRead&);
  std::string_view env = {};
  int64_t min = 1;  // kCount: the least the parser takes
  // Every occurrence is read, in order (tritonserver's --backend-config), not only the last.
  bool repeated = false;
};

// An environment variable the server reads (not a flag's fallback), and what it sets; `read`
// returns false for a value the server would refuse.
struct EnvRow {
  std::string_view name;
  bool (*set)(ServerLaunch&, std::string_view value);
  std::string_view expected;  // for the error: "a whole number of MiB from 1 to 1048576"
};

// A launcher: `word` (compared by basename) followed by `next` ("" none); the flags are read
// after it, or from the start of the command when `flags_from_start` (mpirun -n before
// tritonserver).
struct LauncherRow {
  std::string_view word, next;
  bool flags_from_start = false;
};

struct ServerRow {
  Server server;
  std::string_view name, title;
  std::span<const LauncherRow> launchers;
  // Substrings of an image whose entrypoint launches the server ("vllm-openai").
  std::span<const std::string_view> images;
  std::span<const FlagRow> flags;
  std::span<const EnvRow> env;
  NumberParser numbers;
  // The words after the launcher as the server's parser reads them before it matches a flag
  // (vLLM's FlexibleArgumentParser: dotted JSON flags merged, abbreviations spelled out); an
  // error names a word the parser refuses. `config` holds the files ConfigMaps mount in the
  // container (a --config file's flags are read from there); null when none is known. What it
  // read beyond the words goes to `l.read`. nullptr: the words as they are.
  Result<std::vector<std::string>> (*prepare)(std::vector<std::string> words, const ContainerConfig* config,
                                              ServerLaunch& l);
  // Settles what the flags mean together once all are read (SGLang's deprecated
  // --enable-dp-attention, vLLM's connectors in their JSON); returns why the server would refuse
  // the launch, naming the flag ("" when it would not). nullptr when nothing.
  std::string (*settle)(ServerLaunch&);
  Result<ServerPlan> (*plan)(const ServerLaunch&, int64_t gpus, std::optional<int64_t> memory_limit);
};

// The most ranks a count flag may name: far above any machine.
inline constexpr int64_t kMaxRanks = int64_t{1} << 16;

// Each server's row (servers/<server>.cc).
extern const ServerRow kVllmRow, kSglangRow, kTgiRow, kTritonRow, kRayRow;

// What every server's plan shares (server_terms.cc).
// A term of `count` segments of `each` bytes; returns false when the sum would pass 2^63-1.
struct PlanBuilder {
  ServerPlan plan;
  int64_t flag_bytes = 0;  // what the segments' flags and page rounding add (Finish makes it a term)
  int64_t segments = 0;
  // `count` segments of `each` payload bytes, each with `meta` bytes of flags after it, the whole
  // rounded up to a page as tmpfs allocates it.
  void Add(ServerSegment segment, int64_t count, int64_t each, int64_t meta = 0);
  // The plan with its terms summed; kInvalidInput when a sum passes 2^63-1.
  Result<ServerPlan> Finish();
};

// Ray's object store in /dev/shm: `store` bytes × 1.1 (Ray's advice), or a share of the memory
// limit when Ray picks its default; unbounded when there is no limit to take a share of.
void AddRayStore(const ServerLaunch& l, std::optional<int64_t> memory_limit, PlanBuilder& b);

// The server's processes in this pod: all of them, unless they span pods (--nnodes, or more
// ranks than the pod has GPUs: the rest run in the group's other pods).
int64_t LocalRanks(int64_t world, int64_t nnodes, int64_t gpus, bool& multi_node);

// The counts the launch names through a variable the spec does not set (0, SetCount): the first
// takes the GPUs the pod has left once the others are taken (1 without GPUs), the rest 1, so the
// launch fills the pod's GPUs as it most likely does.
void FillUnread(int64_t gpus, std::initializer_list<int64_t*> counts);

// Whether the command line gave one of the flags `names` (l.read: what the reader read, in
// words, "--tp-size=4"), rather than a --config file or a default.
bool GivenOnCommandLine(const ServerLaunch& l, std::initializer_list<std::string_view> names);

}  // namespace shmguard::servers
