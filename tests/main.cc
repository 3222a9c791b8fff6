// The Catch2 test runner: every test file in tests/ builds into this one binary.
// SIGPIPE is ignored, as `shmguard-webhook` does: test clients write to connections a draining
// server has just closed, and that must fail the write, not kill the test process.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>
#include <csignal>

int main(int argc, char* argv[]) {
  std::signal(SIGPIPE, SIG_IGN);
  return Catch::Session().run(argc, argv);
}
