// The shmguard binary's command line (src/cli/commands/main.cc): subcommands, flag checks, --config and exit
// codes, as a user or CI meets them. What each subcommand prints is in its own test.
#include <sys/wait.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "io/words/version.h"
#include "test_util.h"

namespace {

namespace fs = std::filesystem;

struct Run {
  int code = -1;
  std::string out, err;
};

// Runs `shmguard ARGS` (ARGS as the shell reads them) from the repository's root, stdin empty.
Run Shmguard(const std::string& args) {
  const fs::path dir = fs::temp_directory_path() / ("shmguard-main-test-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string command = "cd '" SOURCE_DIR "' && '" SHMGUARD_BINARY "' " + args + " </dev/null >'" +
                              (dir / "out").string() + "' 2>'" + (dir / "err").string() + "'";
  const int status = std::system(command.c_str());
  Run r;
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.out = shmguard::test::ReadText((dir / "out").string());
  r.err = shmguard::test::ReadText((dir / "err").string());
  fs::remove_all(dir);
  return r;
}

TEST_CASE("shmguard version and --version print the version and exit 0", "[main]") {
  for (const char* args : {"version", "--version"}) {
    INFO(args);
    Run r = Shmguard(args);
    CHECK(r.code == 0);
    CHECK_THAT(r.out, Catch::Contains(shmguard::io::Version()));
  }
}

TEST_CASE("shmguard refuses a missing subcommand, an unknown flag or a value out of its list with exit 2", "[main]") {
  struct Case {
    const char* args;
    const char* says;
  };
  for (const Case& c : {
           Case{"", "A subcommand is required"},
           Case{"frobnicate", "unknown subcommand 'frobnicate'"},
           // The webhook and the agent are programs of their own: the old subcommands say so.
           Case{"serve --tls-cert-file a --port 1", "run shmguard-webhook with the same flags"},
           Case{"agent --node-name n", "run shmguard-agent with the same flags"},
           Case{"audit", "paths is required"},
           Case{"audit -o xml examples", "--output"},
           Case{"audit --fail-on never examples", "--fail-on"},
           Case{"audit -j 0 examples", "--jobs"},
           Case{"plan --batch-bytes 48Mi", "--num-workers is required"},
           Case{"plan --num-workers 4 -o yaml", "--output"},
           Case{"plan --num-workers many", "--num-workers"},
           // A count past int64 is quoted as typed, not as the largest int64 it would become.
           Case{"plan --num-workers 99999999999999999999999 --batch-bytes 1Mi",
                "--num-workers: \"99999999999999999999999\" is not a whole number of at most 18 digits"},
           Case{"plan --num-workers 1 --batch-bytes 1Mi --gpus -3", "--gpus"},
           Case{"audit --ignore shm-plan,no-such-check examples", "\"no-such-check\" is not a check ID"},
           Case{"audit -o policyreport --report-api kyverno examples", "--report-api"},
           Case{"audit -o sarif --docs-url docs/checks.md examples", "--docs-url: an absolute http(s) URL"},
           Case{"audit -o sarif --docs-url https://example.com/my#checks examples", "--docs-url"},
       }) {
    INFO(c.args);
    Run r = Shmguard(c.args);
    CHECK(r.code == 2);
    CHECK_THAT(r.err, Catch::Contains(c.says));
    CHECK(r.out.empty());
  }
}

TEST_CASE("shmguard audit and plan name a --config that does not load and exit 2", "[main]") {
  Run audit = Shmguard("audit --config no-such-policy.yaml examples");
  CHECK(audit.code == 2);
  CHECK_THAT(audit.err, Catch::StartsWith("shmguard audit: config no-such-policy.yaml"));
  Run plan = Shmguard("plan --num-workers 4 --config no-such-policy.yaml");
  CHECK(plan.code == 2);
  CHECK_THAT(plan.err, Catch::StartsWith("shmguard plan: config no-such-policy.yaml"));
}

TEST_CASE("shmguard audit exits 1 at --fail-on's level and 0 below it", "[main]") {
  // A pod that needs a patch: warnings, no error (the default level).
  CHECK(Shmguard("audit examples/pod-needs-patch.yaml").code == 0);
  CHECK(Shmguard("audit --fail-on warn examples/pod-needs-patch.yaml").code == 1);
  CHECK(Shmguard("audit --fail-on warning examples/pod-needs-patch.yaml").code == 1);
  CHECK(Shmguard("audit --fail-on info examples/pod-already-right.yaml").code == 1);
  CHECK(Shmguard("audit examples/pod-denied.yaml").code == 1);
  CHECK(Shmguard("audit --fail-on warn examples/pod-already-right.yaml").code == 0);
  Run json = Shmguard("audit -o json examples/pod-needs-patch.yaml");
  CHECK(json.code == 0);
  const auto records = nlohmann::json::parse(json.out).at("records");
  REQUIRE(records.size() == 1);
  CHECK(records[0].at("verdict") == "patch");
}

TEST_CASE("shmguard audit --ignore takes IDs, comma-separated or repeated, and the paths after it", "[main]") {
  // The denial exempted: the audit no longer fails; the finding is still there, suppressed.
  Run r = Shmguard(
      "audit -o json --ignore shm-plan,shm-over-memory-limit examples/pod-denied.yaml --ignore "
      "memory-headroom examples/pod-needs-patch.yaml");
  CHECK(r.code == 0);
  const auto records = nlohmann::json::parse(r.out).at("records");
  REQUIRE(records.size() == 2);
  std::vector<std::string> suppressed;
  for (const auto& rec : records) {
    for (const auto& f : rec.at("findings")) {
      if (f.at("suppressed").get<bool>()) suppressed.push_back(f.at("id"));
    }
  }
  CHECK(suppressed == std::vector<std::string>{"shm-plan", "shm-over-memory-limit", "shm-plan", "memory-headroom"});
  CHECK(nlohmann::json::parse(r.out).at("summary").at("suppressed") == 4);
}

TEST_CASE("shmguard plan runs on built-in defaults and exits 1 when the size does not fit the limit", "[main]") {
  Run fits = Shmguard("plan --num-workers 8 --batch-bytes 48Mi --gpus 4 --memory-limit 256Gi");
  CHECK(fits.code == 0);
  CHECK_THAT(fits.out, Catch::Contains("Kubernetes:"));
  CHECK(fits.err.empty());
  Run over = Shmguard("plan --num-workers 8 --batch-bytes 160Mi --procs 4 --memory-limit 16Gi");
  CHECK(over.code == 1);
}

}  // namespace
