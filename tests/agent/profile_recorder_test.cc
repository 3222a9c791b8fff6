// ProfileRecorder against the agent's API fake: a workload's ShmProfile created, raised only by a
// higher peak, a run counted, a write that loses a race read again, a Job's pod kept under the
// Job's controller, and nothing without a client or a peak.
#include "agent/profile_recorder.h"

#include <catch2/catch.hpp>
#include <sstream>

#include "agent/rest_fake.h"
#include "core/plan/shm_profile.h"
#include "test_util.h"

namespace shmguard::agent {
namespace {

using nlohmann::json;

constexpr char kProfiles[] = "/apis/shmguard.io/v1alpha1/namespaces/ml/shmprofiles/";

// A pod of Job `job` in the table, whose volume was seen at `peak` of 100 MiB.
AgentPod Sampled(PodTable& table, const std::string& uid, const std::string& job, uint64_t peak) {
  table.Upsert(test::Yaml("{metadata: {uid: " + uid + ", namespace: ml, name: " + job + "-" + uid +
                          ", ownerReferences: [{kind: Job, name: " + job + R"(, controller: true}]},
      spec: {volumes: [{name: dshm, emptyDir: {medium: Memory}}],
             containers: [{name: t, volumeMounts: [{name: dshm, mountPath: /dev/shm}]}]}})"));
  AgentPod pod;
  table.With([&](std::map<std::string, AgentPod>& pods) {
    pods.at(uid).volumes.at("dshm").Observe(peak, 100 << 20);
    pod = pods.at(uid).Summary();
  });
  return pod;
}

ObservedShm Profile(test::RestFake& api, const std::string& name) {
  auto stored = api.Get(kProfiles + name);
  REQUIRE(stored);
  auto o = ReadShmProfile(*stored);
  REQUIRE(o);
  return *o;
}

TEST_CASE("ProfileRecorder creates a workload's profile, raises it only with a higher peak, and counts runs",
          "[profile_recorder][net]") {
  test::RestFake api;
  PodTable table(0.9);
  ProfileRecorder profiles(api.Client(), table);
  CHECK(profiles.Record(Sampled(table, "u1", "train", 40 << 20), false));
  ObservedShm o = Profile(api, "job.train");
  CHECK(o.workload == "Job/train");  // the Job has no controller of its own (404 here)
  CHECK(o.peak_bytes == 40 << 20);
  CHECK(o.size_bytes == 100 << 20);
  CHECK(o.runs == 0);
  CHECK(o.last_pod == "train-u1");

  const size_t writes = profiles.results().ok();
  CHECK(profiles.Record(Sampled(table, "u2", "train", 30 << 20), false));  // lower: nothing written
  CHECK(profiles.results().ok() == writes);
  CHECK(profiles.Record(Sampled(table, "u2", "train", 30 << 20), true));  // a run is always counted
  o = Profile(api, "job.train");
  CHECK(o.peak_bytes == 40 << 20);
  CHECK(o.runs == 1);
  CHECK(o.last_pod == "train-u2");
  CHECK(profiles.runs() == 1);

  // Another agent writes in between the read and the write: read again, both kept.
  api.before_put = [&] {
    json other = *api.Get(std::string(kProfiles) + "job.train");
    other["status"]["runs"] = 7;
    api.Put(std::string(kProfiles) + "job.train", other);
  };
  CHECK(profiles.Record(Sampled(table, "u3", "train", 60 << 20), true));
  o = Profile(api, "job.train");
  CHECK(o.peak_bytes == 60 << 20);
  CHECK(o.runs == 8);
  CHECK(profiles.results().failed() == 0);
}

TEST_CASE("ProfileRecorder keeps a Job's pod under the Job's controller, and writes nothing without a peak",
          "[profile_recorder][net]") {
  test::RestFake api;
  api.Put("/apis/batch/v1/namespaces/ml/jobs/nightly-29400360", json::parse(R"({"metadata":{"name":"nightly-29400360",
      "ownerReferences":[{"kind":"CronJob","name":"nightly","controller":true}]}})"));
  PodTable table(0.9);
  ProfileRecorder profiles(api.Client(), table);
  CHECK(profiles.Record(Sampled(table, "u1", "nightly-29400360", 10 << 20), true));
  CHECK(Profile(api, "cronjob.nightly").workload == "CronJob/nightly");
  table.With([](std::map<std::string, AgentPod>& pods) { CHECK(pods.at("u1").workload == "CronJob/nightly"); });
  CHECK_FALSE(profiles.Record(Sampled(table, "u2", "idle", 0), true));  // never used: no profile
  CHECK_FALSE(api.Get(std::string(kProfiles) + "job.idle"));
  ProfileRecorder none(nullptr, table);
  CHECK_FALSE(none.Record(Sampled(table, "u3", "train", 10 << 20), true));
}

TEST_CASE("ProfileRecorder counts and reports a write refused as its namespace goes", "[profile_recorder][net]") {
  test::RestFake api;
  api.terminating = true;  // the namespace is being deleted: its creates are refused
  PodTable table(0.9);
  std::vector<ApiFailure> failures;
  ProfileRecorder profiles(api.Client(), table, [&](const ApiFailure& f) { failures.push_back(f); });
  CHECK_FALSE(profiles.Record(Sampled(table, "u1", "train", 40 << 20), true));
  CHECK(profiles.results().namespace_terminating() == 1);
  CHECK(profiles.results().failed() == 0);  // expected as a namespace goes: not a failure
  CHECK(profiles.results().ok() == 0);
  REQUIRE(failures.size() == 1);
  CHECK(failures[0].what == "ShmProfile ml/job.train");
  CHECK(failures[0].status == 403);
  CHECK_THAT(failures[0].why, Catch::Contains("being terminated"));
  CHECK(failures[0].namespace_terminating);
}

// The retention sweep's failures are logged: a delete the API refuses (here, without RBAC for
// it) is counted failed and reported with the profile's name; a list it cannot read is reported
// and the sweep says so. A delete answered 409 (the profile was written in between: its
// precondition keeps it) is as meant, neither deleted nor failed.
TEST_CASE("ProfileRecorder's retention sweep reports a refused delete and a refused list", "[profile_recorder][net]") {
  test::RestFake api;
  const int64_t now = *ParseRfc3339Utc("2026-11-27T12:00:00Z");
  ObservedShm old{"ml", "Job/old", 1 << 20, 1 << 30, 1, "2026-09-01T00:00:00Z", "p"};
  api.Put("/apis/shmguard.io/v1alpha1/namespaces/ml/shmprofiles/" + ProfileName(old.workload),
          json::parse(ShmProfileJson(old)));
  PodTable table(0.9);
  std::vector<ApiFailure> failures;
  ProfileRecorder profiles(api.Client(), table, [&](const ApiFailure& f) { failures.push_back(f); });

  api.refuse_deletes = true;
  CHECK(profiles.Sweep(now, 30) == std::optional<uint64_t>(0));
  CHECK(profiles.deletes().failed() == 1);
  REQUIRE(failures.size() == 1);
  CHECK(failures[0].what == "ShmProfile ml/" + ProfileName(old.workload) + " (expired)");
  CHECK(failures[0].status == 403);
  CHECK_THAT(failures[0].why, Catch::Contains("cannot delete"));

  api.refuse_deletes = false;
  api.refuse_profile_list = true;
  CHECK_FALSE(profiles.Sweep(now, 30));
  REQUIRE(failures.size() == 2);
  CHECK(failures[1].what == "ShmProfile list (the retention sweep)");
  CHECK(failures[1].status == 403);
  CHECK(profiles.deletes().failed() == 1);  // a list is not a delete

  api.refuse_profile_list = false;
  const std::string path = "/apis/shmguard.io/v1alpha1/namespaces/ml/shmprofiles/" + ProfileName(old.workload);
  api.before_delete = [&] { api.Put(path, *api.Get(path)); };  // another agent writes it meanwhile
  CHECK(profiles.Sweep(now, 30) == std::optional<uint64_t>(0));
  CHECK(api.Get(path));  // its precondition kept it
  CHECK(profiles.deletes().failed() == 1);
  CHECK(failures.size() == 2);

  CHECK(profiles.Sweep(now, 30) == std::optional<uint64_t>(1));
  CHECK(profiles.deletes().ok() == 1);
  CHECK(failures.size() == 2);
  std::ostringstream metrics;
  profiles.Collect(metrics);
  CHECK_THAT(metrics.str(), Catch::Contains(R"(shmguard_agent_profile_deletes_total{result="ok"} 1)"));
  CHECK_THAT(metrics.str(), Catch::Contains(R"(shmguard_agent_profile_deletes_total{result="failed"} 1)"));
}

}  // namespace
}  // namespace shmguard::agent
