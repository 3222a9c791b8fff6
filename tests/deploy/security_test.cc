// Security posture: shmguard runs no other programs and writes no files (it only reads its
// config and certificate and writes logs to stderr), so a read-only root filesystem and a
// non-root user cost it nothing. The only files it ever opens for writing are those a person names
// on their own machine: `shmguard report --json FILE` and `shmguard policy export --static DIR`.
#include <catch2/catch.hpp>
#include <filesystem>
#include <regex>
#include <set>

#include "io/files/manifests.h"

namespace shmguard::test {
namespace {

namespace fs = std::filesystem;

TEST_CASE("shmguard's sources start no processes and open no file for writing", "[security]") {
  const std::regex spawn(R"(\b(system|popen|fork|vfork|execv|execvp|execve|execl|execlp|posix_spawn)\s*\()");
  const std::regex write_file(R"(\b(ofstream|fopen\s*\([^)]*"[wa]|creat\s*\(|O_WRONLY|O_RDWR))");
  // The files that may write, and only what their user names (`report --json FILE`,
  // `policy export --static DIR`): the command line's, never the webhook's or the agent's.
  const std::set<std::string> writes_named_file = {std::string(SOURCE_DIR) + "/src/cli/commands/report_command.cc",
                                                   std::string(SOURCE_DIR) + "/src/cli/commands/policy_command.cc"};
  int files = 0;
  for (const auto& e : fs::recursive_directory_iterator(std::string(SOURCE_DIR) + "/src")) {
    if (!e.is_regular_file()) continue;
    auto text = io::ReadFileText(e.path().string());
    REQUIRE(text.has_value());
    CAPTURE(e.path().string());
    CHECK_FALSE(std::regex_search(*text, spawn));
    if (writes_named_file.count(e.path().string())) {
      CHECK(std::regex_search(*text, write_file));  // the allowance ends when it no longer writes
    } else {
      CHECK_FALSE(std::regex_search(*text, write_file));
    }
    ++files;
  }
  CHECK(files > 40);
}

}  // namespace
}  // namespace shmguard::test
