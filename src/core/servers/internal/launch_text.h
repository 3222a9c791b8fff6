// A container's launch as text: its env indexed by name, its command and args expanded as the
// kubelet and a shell expand them (bounded, in one pass) and split into words, the flags a
// server's parser would find in them, and numbers read as Python's int() and float() and Rust's
// usize parse read them. What every server's reader (servers/*.cc) reads a launch with; no
// server's knowledge is here. Internal to the core.
#pragma once

#include <cstdint>
#include <deque>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/values/container_config.h"
#include "core/values/json_node.h"
#include "core/values/result.h"

namespace shmguard::servers {

// The most bytes a container's expanded command and args may take: its own command, args and
// env text, at least 64 KiB, at most 1 MiB. A launch past it is not read (the pod is sized as if
// it launched no server, with launch-unread saying why); see SECURITY.md.
inline constexpr size_t kMinExpansionBytes = size_t{64} << 10;
inline constexpr size_t kMaxExpansionBytes = size_t{1} << 20;

// A container's env as the kubelet sets it: the first entry of each name with a string value
// (a valueFrom entry is set, but only at run time: its value is unknown here), over envFrom's
// variables (`config`, when known; a later source's over an earlier's).
class Env {
 public:
  explicit Env(JsonNode container, const ContainerConfig* config = nullptr);
  // The value of `name`; nullopt when the env does not set it, or sets it from valueFrom.
  std::optional<std::string_view> Find(std::string_view name) const;
  // The bytes of every name and value: part of what an expansion may grow to.
  size_t bytes() const { return bytes_; }
  // Sets `name` as a shell assignment before the launch does (`export NAME=V; ...`, `NAME=V cmd`):
  // it wins over the container's env.
  void Set(std::string_view name, std::string_view value);

 private:
  std::unordered_map<std::string_view, std::optional<std::string_view>> values_;
  std::deque<std::string> owned_;  // what Set was given
  size_t bytes_ = 0;
};

// The words of a container's command and args: each item expanded ($(NAME) as the kubelet does,
// ${NAME} and $NAME as a shell does, from `env`; a name the env does not set stays as written,
// `$$` is `$`). An item is one word, as exec passes it, except a shell's script (the item after
// `-c` of sh, bash, dash, ash, zsh or ksh), which is split as the shell splits it: at unquoted
// blanks and operators (';', '&&', '||', '|', dropped), quotes honoured and dropped, a line
// continuation dropped; a script's own `sh -c '...'` is split in turn. Linear in the text.
// `overflow` is set, and the words cut short, when the expansion would pass `budget` bytes.
struct Words {
  std::vector<std::string> text;
  bool overflow = false;
};
Words SplitLaunch(JsonNode container, const Env& env, size_t budget);

// The shell assignments among the first `end` words, in order (`export A=1 B=2`, `A=1 vllm ...`):
// each word NAME=VALUE whose NAME is a shell name.
std::vector<std::pair<std::string, std::string>> ShellAssignments(const std::vector<std::string>& words, size_t end);

// The expansion budget of a container (kMinExpansionBytes..kMaxExpansionBytes).
size_t ExpansionBudget(JsonNode container, const Env& env);

// "--tensor_parallel_size=8" -> "--tensor-parallel-size=8": vLLM's and SGLang's parsers take
// either spelling of a long flag (vLLM's FlexibleArgumentParser; SGLang's dataclass fields).
std::string NormalizedFlag(std::string_view word);

std::string_view Basename(std::string_view word);

// argparse's prefix match of a long option (Lib/argparse.py _get_option_tuples, allow_abbrev):
// the option of `options` (sorted as bytes) that `name` is or begins, nullopt for none; an error
// saying `parser` refuses it when several begin with it ("could be --pp-size, --pp-max-...").
Result<std::optional<std::string_view>> ArgparseMatch(std::string_view name, std::span<const std::string_view> options,
                                                      std::string_view parser);

// The file the container's ConfigMaps mount at `path` as the server opens it (a relative path
// from its workingDir; "." and ".." resolved); nullptr when `config` is null or has none there.
const ConfigFile* FindConfigFile(const ContainerConfig* config, std::string_view path);

// str(value) as Python writes a YAML scalar's value: the text of a string, "True"/"False",
// "None", a number as written.
std::string PythonStr(const nlohmann::json& v);

// Numbers as the servers' own parsers read them. Each returns nullopt for what that parser
// refuses.
// Python's int() of a string: surrounding whitespace, a sign, decimal digits with single '_'
// between them ("08", "+8", " 8 ", "1_000"); not "8.0" or "0x8". Values past int64 are refused.
std::optional<int64_t> ParsePythonInt(std::string_view s);
// Python's float() of a string: whitespace, a sign, digits with '_' between them, a '.', an
// exponent, "inf", "infinity" and "nan" in any case ("1.5", "1e1", ".5", "1_0"); not "0x10" or
// "1,5". REQUIRES nothing: every string gives a value or nullopt.
std::optional<double> ParsePythonFloat(std::string_view s);
// Rust's usize::from_str (clap's value parser for a usize): an optional '+' and decimal digits.
std::optional<int64_t> ParseRustUsize(std::string_view s);

}  // namespace shmguard::servers
