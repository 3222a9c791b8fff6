// FileWatcher: one call per change of the watched set, for rewrites in place and for the symlink
// swap Kubernetes uses for mounted Secrets and ConfigMaps; none when nothing changes.
#include "io/files/file_watch.h"

#include <atomic>
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <thread>

#include "tls_fixture.h"

namespace shmguard::io {
namespace {

using namespace std::chrono_literals;

// Waits up to 5 s for `calls` to reach `n`.
bool WaitFor(const std::atomic<int>& calls, int n) {
  for (int i = 0; i < 500 && calls < n; ++i) std::this_thread::sleep_for(10ms);
  return calls >= n;
}

TEST_CASE("StatFile follows symlinks and tells a missing file", "[file_watch]") {
  test::TempDir dir;
  CHECK_FALSE(StatFile(dir.File("none")).exists);
  std::ofstream(dir.File("a")) << "abc";
  std::filesystem::create_symlink(dir.File("a"), dir.File("link"));
  FileStamp a = StatFile(dir.File("a"));
  CHECK(a.exists);
  CHECK(a.size == 3);
  CHECK(StatFile(dir.File("link")) == a);
}

TEST_CASE("FileWatcher calls back on a rewrite and on a symlink swap, not otherwise", "[file_watch]") {
  test::TempDir dir;
  std::filesystem::create_directory(dir.File("v1"));
  std::filesystem::create_directory(dir.File("v2"));
  std::ofstream(dir.File("v1/policy.yaml")) << "a: 1\n";
  std::ofstream(dir.File("v2/policy.yaml")) << "a: 22\n";
  std::filesystem::create_directory_symlink("v1", dir.File("..data"));
  std::filesystem::create_symlink("..data/policy.yaml", dir.File("policy.yaml"));
  std::ofstream(dir.File("other.yaml")) << "x\n";

  std::atomic<int> calls{0};
  FileWatcher watch({dir.File("policy.yaml"), dir.File("other.yaml")}, 20ms, [&] { ++calls; });
  std::this_thread::sleep_for(100ms);
  CHECK(calls == 0);  // nothing changed

  // The kubelet's swap: a new ..data link renamed over the old one.
  std::filesystem::create_directory_symlink("v2", dir.File("..data_tmp"));
  std::filesystem::rename(dir.File("..data_tmp"), dir.File("..data"));
  REQUIRE(WaitFor(calls, 1));
  std::this_thread::sleep_for(100ms);
  CHECK(calls == 1);  // once per change

  std::ofstream(dir.File("other.yaml")) << "longer\n";  // a rewrite in place
  REQUIRE(WaitFor(calls, 2));

  std::filesystem::remove(dir.File("other.yaml"));  // a file going away is a change too
  REQUIRE(WaitFor(calls, 3));
}

}  // namespace
}  // namespace shmguard::io
