// Sample: one round of statfs over the table's volumes — what crossed the threshold, the peaks to
// write (at a crossing, else each record interval while they grow), the resizes that took effect
// or ran out of time, and leaked segments left out of the peak.
#include "agent/sampler.h"

#include <catch2/catch.hpp>

#include "test_util.h"

namespace shmguard::agent {
namespace {

using nlohmann::json;

constexpr uint64_t kMi = 1 << 20;

json Pod(const std::string& uid) {
  return test::Yaml("{metadata: {uid: " + uid + ", namespace: ml, name: p-" + uid +
                    R"(}, spec: {volumes: [{name: dshm, emptyDir: {medium: Memory}}],
      containers: [{name: t, volumeMounts: [{name: dshm, mountPath: /dev/shm}]}]}, status: {phase: Running}})");
}

struct Fs {
  std::map<std::string, FsUse> at;
  StatFs statfs() {
    return [this](const std::string& path) -> std::optional<FsUse> {
      auto it = at.find(path);
      if (it == at.end()) return std::nullopt;
      return it->second;
    };
  }
};

TEST_CASE("Sample reports crossings and the peaks to write, at a crossing or each record interval", "[sampler]") {
  PodTable table(0.9);
  table.Upsert(Pod("u1"));
  Fs fs;
  const std::string dir = VolumeDir("/k", "u1", "dshm");
  SamplerOptions o{"/k", std::chrono::seconds(30), std::chrono::seconds(120)};
  const Clock::time_point t0 = Clock::now();

  fs.at[dir] = {10 * kMi, 100 * kMi, true};
  SampleRound r = Sample(table, fs.statfs(), o, t0);
  CHECK(r.crossed.empty());
  CHECK(r.peaks.empty());  // a first peak waits for the interval

  fs.at[dir] = {20 * kMi, 100 * kMi, true};
  r = Sample(table, fs.statfs(), o, t0 + std::chrono::seconds(31));
  REQUIRE(r.peaks.size() == 1);  // grown, and the interval passed
  CHECK(r.peaks[0].Peak().first == 20 * kMi);

  fs.at[dir] = {95 * kMi, 100 * kMi, true};
  r = Sample(table, fs.statfs(), o, t0 + std::chrono::seconds(32));
  REQUIRE(r.crossed.size() == 1);
  CHECK(r.crossed[0].volume == "dshm");
  CHECK(r.peaks.size() == 1);  // at the crossing, whatever the interval

  r = Sample(table, fs.statfs(), o, t0 + std::chrono::seconds(33));
  CHECK(r.crossed.empty());
  CHECK(r.peaks.empty());  // no higher peak
}

TEST_CASE("Sample skips what is not a tmpfs or not there, and leaves leaked segments out of the peak", "[sampler]") {
  PodTable table(0.9);
  table.Upsert(Pod("u1"));
  table.Upsert(Pod("u2"));
  Fs fs;
  fs.at[VolumeDir("/k", "u1", "dshm")] = {50 * kMi, 100 * kMi, false};  // the directory, before the tmpfs
  fs.at[VolumeDir("/k", "u2", "dshm")] = {70 * kMi, 100 * kMi, true};
  table.With([](std::map<std::string, AgentPod>& pods) {
    pods.at("u2").leaks["dshm"].bytes = 60 * kMi;  // what a crashed run left
  });
  Sample(table, fs.statfs(), {"/k"}, Clock::now());
  table.With([](std::map<std::string, AgentPod>& pods) {
    CHECK(pods.at("u1").volumes.at("dshm").size() == 0);  // never sampled
    const ShmWatch& w = pods.at("u2").volumes.at("dshm");
    CHECK(w.used() == 70 * kMi);
    CHECK(w.leaked() == 60 * kMi);
    CHECK(w.peak() == 10 * kMi);
  });
}

TEST_CASE("Sample settles a resize when the tmpfs is remounted larger, or when its time is up", "[sampler]") {
  PodTable table(0.9);
  table.Upsert(Pod("u1"));
  Fs fs;
  const std::string dir = VolumeDir("/k", "u1", "dshm");
  const Clock::time_point t0 = Clock::now();
  table.With([&](std::map<std::string, AgentPod>& pods) {
    pods.at("u1").growth["dshm"] = {int64_t{100} * kMi, int64_t{200} * kMi, t0, false};
  });
  SamplerOptions o{"/k", std::chrono::seconds(30), std::chrono::seconds(120)};
  fs.at[dir] = {10 * kMi, 100 * kMi, true};
  CHECK(Sample(table, fs.statfs(), o, t0 + std::chrono::seconds(10)).resizes.empty());
  fs.at[dir] = {10 * kMi, 200 * kMi, true};
  auto r = Sample(table, fs.statfs(), o, t0 + std::chrono::seconds(20));
  REQUIRE(r.resizes.size() == 1);
  CHECK(r.resizes[0].grown);
  CHECK(Sample(table, fs.statfs(), o, t0 + std::chrono::seconds(30)).resizes.empty());  // once

  table.Upsert(Pod("u9"));
  table.With([&](std::map<std::string, AgentPod>& pods) {
    pods.at("u9").growth["dshm"] = {int64_t{100} * kMi, int64_t{200} * kMi, t0, false};
  });
  fs.at[VolumeDir("/k", "u9", "dshm")] = {10 * kMi, 100 * kMi, true};
  r = Sample(table, fs.statfs(), o, t0 + std::chrono::seconds(121));
  REQUIRE(r.resizes.size() == 1);
  CHECK_FALSE(r.resizes[0].grown);  // timed out
}

}  // namespace
}  // namespace shmguard::agent
