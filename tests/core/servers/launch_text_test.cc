// SplitLaunch, Env and the servers' number parsers, as the kubelet, a shell, Python and Rust read
// the same text.
#include "core/servers/internal/launch_text.h"

#include <catch2/catch.hpp>

#include "test_util.h"

namespace shmguard::servers {
namespace {

using nlohmann::json;

std::vector<std::string> WordsOf(const char* container, size_t budget = kMaxExpansionBytes) {
  const json c = test::Yaml(container);
  const Env env(c);
  Words w = SplitLaunch(c, env, budget);
  CHECK_FALSE(w.overflow);
  return w.text;
}

TEST_CASE("SplitLaunch expands as the kubelet and a shell do, and splits as a shell does", "[launch_text]") {
  using V = std::vector<std::string>;
  CHECK(WordsOf("{command: [vllm, serve, m, -tp, $(TP)], env: [{name: TP, value: '8'}]}") ==
        V{"vllm", "serve", "m", "-tp", "8"});
  CHECK(WordsOf("{command: [sh, -c, 'vllm serve m -tp ${TP} -pp $PP'], env: [{name: TP, value: '4'}, {name: PP, "
                "value: '2'}]}") == V{"sh", "-c", "vllm", "serve", "m", "-tp", "4", "-pp", "2"});
  // The first entry of a name is the one the kubelet sets; $$ is $; an unset name stays.
  CHECK(WordsOf("{command: [echo, $(A), $$(A), $(B)], env: [{name: A, value: x}, {name: A, value: y}]}") ==
        V{"echo", "x", "$(A)", "$(B)"});
  // A valueFrom name is set, but only at run time: it stays as written.
  CHECK(WordsOf("{command: [echo, $(A)], env: [{name: A, valueFrom: {fieldRef: {fieldPath: x}}}]}") ==
        V{"echo", "$(A)"});
  // Quotes dropped, a continuation's backslash and a command's ';' and '&&' dropped.
  CHECK(WordsOf("{command: [sh, -c, \"ray start --head; exec vllm serve 'm' \\\\\\n --port 8 && true\"]}") ==
        V{"sh", "-c", "ray", "start", "--head", "exec", "vllm", "serve", "m", "--port", "8", "true"});
  // Unclosed references are kept as written.
  CHECK(WordsOf("{command: [echo, '$(A', '${B', '$']}") == V{"echo", "$(A", "${B", "$"});
}

TEST_CASE("SplitLaunch stops at its budget, and ExpansionBudget is the launch's text within 64 KiB..1 MiB",
          "[launch_text]") {
  const json c = test::Yaml("{command: [echo, $(A), $(A), $(A)], env: [{name: A, value: '0123456789'}]}");
  const Env env(c);
  CHECK(SplitLaunch(c, env, 33).overflow);  // echo and three 10-byte values: 34 bytes
  CHECK_FALSE(SplitLaunch(c, env, 34).overflow);
  CHECK(ExpansionBudget(c, env) == kMinExpansionBytes);
  json big = {{"command", {std::string(2 << 20, 'x')}}};
  CHECK(ExpansionBudget(big, Env(big)) == kMaxExpansionBytes);
  json mid = {{"command", {std::string(100 << 10, 'x')}}};
  CHECK(ExpansionBudget(mid, Env(mid)) == (100 << 10));
}

TEST_CASE("ParsePythonInt, ParsePythonFloat and ParseRustUsize read what their languages read", "[launch_text]") {
  const struct {
    const char* text;
    std::optional<int64_t> python_int;
    std::optional<double> python_float;
    std::optional<int64_t> rust_usize;
  } cases[] = {
      {"8", 8, 8.0, 8},
      {"+8", 8, 8.0, 8},
      {" 8\n", 8, 8.0, std::nullopt},
      {"-8", -8, -8.0, std::nullopt},
      {"08", 8, 8.0, 8},
      {"1_000", 1000, 1000.0, std::nullopt},
      {"1__0", std::nullopt, std::nullopt, std::nullopt},
      {"_1", std::nullopt, std::nullopt, std::nullopt},
      {"8.0", std::nullopt, 8.0, std::nullopt},
      {".5", std::nullopt, 0.5, std::nullopt},
      {"5.", std::nullopt, 5.0, std::nullopt},
      {"1e3", std::nullopt, 1000.0, std::nullopt},
      {"1E-1", std::nullopt, 0.1, std::nullopt},
      {"0x10", std::nullopt, std::nullopt, std::nullopt},
      {"1,5", std::nullopt, std::nullopt, std::nullopt},
      {"", std::nullopt, std::nullopt, std::nullopt},
      {".", std::nullopt, std::nullopt, std::nullopt},
      {"9223372036854775808", std::nullopt, 9223372036854775808.0, std::nullopt},
  };
  for (const auto& c : cases) {
    CAPTURE(c.text);
    CHECK(ParsePythonInt(c.text) == c.python_int);
    CHECK(ParsePythonFloat(c.text) == c.python_float);
    CHECK(ParseRustUsize(c.text) == c.rust_usize);
  }
  CHECK(std::isinf(*ParsePythonFloat("-Infinity")));
  CHECK(std::isnan(*ParsePythonFloat("nan")));
}

TEST_CASE("NormalizedFlag spells a long flag's underscores as dashes, up to its value", "[launch_text]") {
  CHECK(NormalizedFlag("--tensor_parallel_size=a_b") == "--tensor-parallel-size=a_b");
  CHECK(NormalizedFlag("-tp_x") == "-tp_x");
  CHECK(Basename("/usr/bin/vllm") == "vllm");
}

}  // namespace
}  // namespace shmguard::servers
