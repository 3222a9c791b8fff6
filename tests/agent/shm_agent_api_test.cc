// ShmAgent against a fake API server (TLS on loopback, objects kept by path with
// resourceVersions): what it writes to ShmProfiles, how it counts runs, how it finds a Job's
// CronJob, and growth in place — the resize asked for, the kubelet's refusal read and undone, the
// API server's refusals, and no second try.
#include <httplib.h>

#include <catch2/catch.hpp>
#include <fstream>
#include <mutex>
#include <thread>

#include "agent/rest_fake.h"
#include "agent/shm_agent.h"
#include "core/plan/shm_profile.h"
#include "core/values/quantity.h"
#include "test_util.h"
#include "tls_fixture.h"

namespace shmguard::agent {
namespace {

using nlohmann::json;

using test::RestFake;

constexpr const char* kPods = "/api/v1/namespaces/ml/pods/";
constexpr const char* kProfiles = "/apis/shmguard.io/v1alpha1/namespaces/ml/shmprofiles/";

json JobPod(const std::string& uid, const std::string& job, const std::string& size_limit = "100Mi",
            const std::string& memory = "1Gi") {
  json pod = json::parse(R"({"apiVersion":"v1","kind":"Pod","metadata":{"namespace":"ml"},
      "spec":{"volumes":[{"name":"dshm","emptyDir":{"medium":"Memory"}}],
              "containers":[{"name":"t","resources":{"limits":{}},
                             "volumeMounts":[{"name":"dshm","mountPath":"/dev/shm"}]}]},
      "status":{"phase":"Running"}})");
  pod["metadata"]["uid"] = uid;
  pod["metadata"]["name"] = job + "-" + uid;
  pod["metadata"]["ownerReferences"] = json::array({{{"kind", "Job"}, {"name", job}, {"controller", true}}});
  if (!size_limit.empty()) pod["spec"]["volumes"][0]["emptyDir"]["sizeLimit"] = size_limit;
  if (!memory.empty()) pod["spec"]["containers"][0]["resources"]["limits"]["memory"] = memory;
  return pod;
}

struct Node {
  std::map<std::string, std::pair<uint64_t, uint64_t>> use;  // by pod UID: used, size
  StatFs statfs() {
    return [this](const std::string& path) -> std::optional<FsUse> {
      for (const auto& [uid, u] : use) {
        if (path.find("/pods/" + uid + "/") != std::string::npos) return FsUse{u.first, u.second, true};
      }
      return std::nullopt;
    };
  }
};

AgentOptions Options() {
  AgentOptions o;
  o.kubelet_dir = "/k";
  o.node_name = "n1";
  o.record_interval = std::chrono::hours(1);  // written at crossings and ends only, unless a test says
  return o;
}

constexpr uint64_t kMi = 1 << 20;

// A counter or gauge without labels, from the agent's metrics text; -1 when absent.
int64_t agentCounterOf(const std::string& metrics, const std::string& name) {
  const size_t at = metrics.find("\n" + name + " ");
  if (at == std::string::npos) return -1;
  return std::stoll(metrics.substr(at + name.size() + 2));
}

TEST_CASE("ShmAgent records a workload's peak at the crossing and a run at the pod's end", "[shm_agent][net]") {
  RestFake api;
  Node node;
  ShmAgent agent(Options(), api.Client(), node.statfs());
  json pod = JobPod("u1", "nightly-29400360");
  api.Put("/apis/batch/v1/namespaces/ml/jobs/nightly-29400360", json::parse(R"({"metadata":{"name":"nightly-29400360",
              "ownerReferences":[{"kind":"CronJob","name":"nightly","controller":true}]}})"));
  agent.SetPods(json::array({pod}));
  node.use["u1"] = {50 * kMi, 100 * kMi};
  agent.SampleOnce();
  CHECK_FALSE(api.Get(std::string(kProfiles) + "cronjob.nightly"));  // below the threshold: nothing yet
  node.use["u1"] = {95 * kMi, 100 * kMi};
  REQUIRE(agent.SampleOnce().size() == 1);
  auto profile = api.Get(std::string(kProfiles) + "cronjob.nightly");
  REQUIRE(profile);
  auto o = ReadShmProfile(*profile);
  REQUIRE(o);
  CHECK(o->workload == "CronJob/nightly");  // the Job's owner, read from the API
  CHECK(o->peak_bytes == 95 * kMi);
  CHECK(o->size_bytes == 100 * kMi);
  CHECK(o->runs == 0);
  CHECK(o->last_pod == "nightly-29400360-u1");
  REQUIRE(api.Events().size() == 1);
  CHECK(api.Events()[0]["reason"] == "ShmNearFull");

  node.use["u1"] = {30 * kMi, 100 * kMi};
  pod["status"]["phase"] = "Succeeded";
  agent.UpdatePod("MODIFIED", pod);
  agent.UpdatePod("DELETED", pod);  // ended once, counted once
  agent.SampleOnce();
  o = ReadShmProfile(*api.Get(std::string(kProfiles) + "cronjob.nightly"));
  CHECK(o->runs == 1);
  CHECK(o->peak_bytes == 95 * kMi);  // a lower use never lowers the peak

  // The next run of the CronJob: its Job's owner is asked once more, the profile is updated.
  api.Put("/apis/batch/v1/namespaces/ml/jobs/nightly-29400420", json::parse(R"({"metadata":{"name":"nightly-29400420",
              "ownerReferences":[{"kind":"CronJob","name":"nightly","controller":true}]}})"));
  json next = JobPod("u2", "nightly-29400420");
  agent.UpdatePod("ADDED", next);
  node.use["u2"] = {99 * kMi, 100 * kMi};
  agent.SampleOnce();
  agent.UpdatePod("DELETED", next);
  agent.SampleOnce();
  o = ReadShmProfile(*api.Get(std::string(kProfiles) + "cronjob.nightly"));
  CHECK(o->runs == 2);
  CHECK(o->peak_bytes == 99 * kMi);
}

// Options whose device checkpoint has MPS's daemon mount its tmpfs at pod u1's container t's
// /dev/shm, where JobPod's dshm hides it.
AgentOptions WithMpsCheckpoint(test::TempDir& dir) {
  AgentOptions o = Options();
  o.device_checkpoint = dir.File("kubelet_internal_checkpoint");
  std::ofstream(o.device_checkpoint) << test::DeviceCheckpoint(
      {{"u1", "t", "nvidia.com/gpu.shared", {{"/dev/shm", "/run/nvidia/mps/shm"}}}});
  return o;
}

TEST_CASE("ShmAgent records a Warning, once, on a pod whose volume hides a device plugin's /dev/shm",
          "[shm_agent][net]") {
  RestFake api;
  Node node;
  test::TempDir dir;
  AgentOptions o = WithMpsCheckpoint(dir);
  ShmAgent agent(o, api.Client(), node.statfs());
  agent.SetPods(json::array({JobPod("u1", "train")}));  // dshm at /dev/shm, over the daemon's tmpfs
  agent.SampleOnce();
  agent.SampleOnce();
  REQUIRE(api.Events().size() == 1);
  const json event = api.Events()[0];
  CHECK(event["reason"] == "ShmHidesDeviceMount");
  CHECK(event["type"] == "Warning");
  CHECK(event["involvedObject"]["uid"] == "u1");
  CHECK_THAT(event["message"].get<std::string>(),
             Catch::Contains("container t") && Catch::Contains("/run/nvidia/mps/shm") &&
                 Catch::Contains("Add nvidia.com/gpu.shared to the shmguard policy's mpsResources"));
}

TEST_CASE("ShmAgent reports each write the API refuses to on_api_failure", "[shm_agent][net]") {
  RestFake api;
  api.refuse_events = true;  // no RBAC for Events
  Node node;
  test::TempDir dir;
  AgentOptions o = WithMpsCheckpoint(dir);
  std::mutex mu;
  std::vector<ApiFailure> failures;
  o.on_api_failure = [&](const ApiFailure& f) {
    std::lock_guard<std::mutex> lock(mu);
    failures.push_back(f);
  };
  ShmAgent agent(o, api.Client(), node.statfs());
  agent.SetPods(json::array({JobPod("u1", "train")}));
  agent.SampleOnce();
  std::lock_guard<std::mutex> lock(mu);
  REQUIRE(failures.size() == 1);
  CHECK(failures[0].what == "Event ShmHidesDeviceMount ml/train-u1");
  CHECK(failures[0].status == 403);
  CHECK_FALSE(failures[0].namespace_terminating);
}

TEST_CASE("ShmAgent writes a growing peak every record interval, and reads again on a conflict", "[shm_agent][net]") {
  RestFake api;
  Node node;
  AgentOptions options = Options();
  options.record_interval = std::chrono::milliseconds(0);
  ShmAgent agent(options, api.Client(), node.statfs());
  agent.SetPods(json::array({JobPod("u1", "train")}));
  node.use["u1"] = {10 * kMi, 100 * kMi};
  agent.SampleOnce();
  REQUIRE(api.Get(std::string(kProfiles) + "job.train"));
  CHECK(ReadShmProfile(*api.Get(std::string(kProfiles) + "job.train"))->peak_bytes == 10 * kMi);
  // Another node's agent writes a higher peak between this agent's read and its write.
  api.before_put = [&] {
    ObservedShm other{"ml", "Job/train", 40 * kMi, 100 * kMi, 1, "t", "train-other"};
    api.Put(std::string(kProfiles) + "job.train", json::parse(ShmProfileJson(other)));
  };
  node.use["u1"] = {20 * kMi, 100 * kMi};
  agent.SampleOnce();
  auto o = ReadShmProfile(*api.Get(std::string(kProfiles) + "job.train"));
  CHECK(o->peak_bytes == 40 * kMi);  // read again: 20Mi is not news
  CHECK(o->runs == 1);
  node.use["u1"] = {60 * kMi, 100 * kMi};
  agent.SampleOnce();
  CHECK(ReadShmProfile(*api.Get(std::string(kProfiles) + "job.train"))->peak_bytes == 60 * kMi);
}

TEST_CASE("ShmAgent grows /dev/shm in place only where it is on, once, and reads the outcome", "[shm_agent][net]") {
  struct Case {
    const char* name;
    bool label;               // the namespace's shmguard.io/grow-in-place=true
    bool rule;                // a policy rule's growInPlace
    RestFake::Resize resize;  // what the API server does with the resize
    const char* size_limit;   // the pod's
    const char* memory;       // its memory limit
    std::string asked;        // the sizeLimit asked for, "" when none
    const char* reason;       // the growth Event's reason, "" when none
  };
  const Case cases[] = {
      {"off: not asked", false, false, RestFake::Resize::kApply, "100Mi", "1Gi", "", ""},
      {"the namespace label", true, false, RestFake::Resize::kApply, "100Mi", "1Gi", "200Mi", "ShmGrown"},
      {"a policy rule", false, true, RestFake::Resize::kApply, "100Mi", "1Gi", "200Mi", "ShmGrown"},
      {"up to half the memory limit", true, false, RestFake::Resize::kApply, "400Mi", "1Gi", "512Mi", "ShmGrown"},
      {"no room left", true, false, RestFake::Resize::kApply, "512Mi", "1Gi", "", "ShmGrowthRefused"},
      {"no sizeLimit", true, false, RestFake::Resize::kApply, "", "1Gi", "", "ShmGrowthRefused"},
      {"no memory limit", true, false, RestFake::Resize::kApply, "100Mi", "", "", "ShmGrowthRefused"},
      {"the API server's gate off", true, false, RestFake::Resize::kDropVolumes, "100Mi", "1Gi", "200Mi",
       "ShmGrowthRefused"},
      {"the API server refuses", true, false, RestFake::Resize::kReject, "100Mi", "1Gi", "200Mi", "ShmGrowthRefused"},
  };
  for (const auto& c : cases) {
    SECTION(c.name) {
      RestFake api;
      api.resize = c.resize;
      json ns = {{"metadata", {{"name", "ml"}, {"labels", json::object()}}}};
      if (c.label) ns["metadata"]["labels"]["shmguard.io/grow-in-place"] = "true";
      api.Put("/api/v1/namespaces/ml", ns);
      Node node;
      AgentOptions options = Options();
      if (c.rule) options.policy.namespaces.insert(options.policy.namespaces.begin(), NamespaceRule{{"ml"}});
      if (c.rule) options.policy.namespaces.front().grow_in_place = true;
      ShmAgent agent(options, api.Client(), node.statfs());
      json pod = JobPod("u1", "train", c.size_limit, c.memory);
      api.Put(kPods + std::string("train-u1"), pod);
      agent.SetPods(json::array({pod}));
      const uint64_t size = *ParseBytes(c.size_limit[0] ? c.size_limit : "1Gi", "");
      node.use["u1"] = {size - size / 20, size};
      agent.SampleOnce();
      auto resizes = api.Resizes();
      if (c.asked.empty()) {
        CHECK(resizes.empty());
      } else {
        REQUIRE(resizes.size() == 1);
        CHECK(json::parse(resizes[0]) == json::parse(ResizeVolumePatch("dshm", *ParseBytes(c.asked, ""))));
      }
      if (c.resize == RestFake::Resize::kApply && !c.asked.empty()) {
        node.use["u1"] = {size - size / 20, *ParseBytes(c.asked, "")};  // the kubelet remounts it
        agent.SampleOnce();
      }
      std::vector<std::string> reasons;
      for (const auto& e : api.Events()) reasons.push_back(e["reason"]);
      std::vector<std::string> want = {"ShmNearFull"};
      if (*c.reason) want.push_back(c.reason);
      CHECK(reasons == want);
      // A second crossing never asks again.
      node.use["u1"] = {0, size};
      agent.SampleOnce();
      node.use["u1"] = {size, size};
      agent.SampleOnce();
      CHECK(api.Resizes().size() == resizes.size());
    }
  }
}

TEST_CASE("ShmAgent reads the kubelet's refusal of a resize, puts the sizeLimit back and records the peak",
          "[shm_agent][net]") {
  RestFake api;
  api.Put("/api/v1/namespaces/ml", json{{"metadata", {{"labels", {{"shmguard.io/grow-in-place", "true"}}}}}});
  Node node;
  ShmAgent agent(Options(), api.Client(), node.statfs());
  json pod = JobPod("u1", "train");
  api.Put(kPods + std::string("train-u1"), pod);
  agent.SetPods(json::array({pod}));
  node.use["u1"] = {95 * kMi, 100 * kMi};
  agent.SampleOnce();
  REQUIRE(api.Resizes().size() == 1);
  // The kubelet on a cgroup v1 node (pkg/kubelet/allocation/handlers.go).
  pod["status"]["conditions"] = json::parse(R"([{"type":"PodResizePending","status":"True","reason":"Infeasible",
      "message":"Memory-backed emptyDir volume resize is not supported on cgroups v1"}])");
  agent.UpdatePod("MODIFIED", pod);
  agent.UpdatePod("MODIFIED", pod);  // read once
  agent.SampleOnce();
  auto resizes = api.Resizes();
  REQUIRE(resizes.size() == 2);
  CHECK(json::parse(resizes[1]) == json::parse(ResizeVolumePatch("dshm", 100 * kMi)));  // put back
  auto events = api.Events();
  REQUIRE(events.size() == 2);
  CHECK(events[1]["reason"] == "ShmGrowthRefused");
  CHECK(events[1]["type"] == "Warning");
  CHECK(events[1]["message"].get<std::string>().find("not supported on cgroups v1") != std::string::npos);
  auto o = ReadShmProfile(*api.Get(std::string(kProfiles) + "job.train"));
  REQUIRE(o);
  CHECK(o->peak_bytes == 95 * kMi);
}

// ShmProfiles are one per workload (per Job name): the agents delete those not observed for
// observed.retentionDays, reading them a page at a time, each with its resourceVersion as a
// precondition, so one written again meanwhile stays.
TEST_CASE("ProfileRecorder::Sweep deletes the profiles not observed within the retention", "[shm_agent_api][net]") {
  RestFake api;
  const int64_t now = *ParseRfc3339Utc("2026-11-27T12:00:00Z");
  auto profile = [&](const std::string& ns, const std::string& workload, const std::string& last) {
    ObservedShm o{ns, workload, 1 << 20, 1 << 30, 1, last, "p"};
    api.Put("/apis/shmguard.io/v1alpha1/namespaces/" + ns + "/shmprofiles/" + ProfileName(workload),
            json::parse(ShmProfileJson(o)));
  };
  for (int i = 0; i < 700; ++i) profile("ml", "Job/old-" + std::to_string(i), "2026-09-01T00:00:00Z");
  profile("ml", "Deployment/serve", "2026-11-20T08:00:00Z");
  profile("team-a", "Job/recent", "2026-11-27T11:59:00Z");
  PodTable table(0.9);
  ProfileRecorder recorder(api.Client(), table);
  auto deleted = recorder.Sweep(now, 30);
  REQUIRE(deleted);
  CHECK(*deleted == 700);
  CHECK(api.Get("/apis/shmguard.io/v1alpha1/namespaces/ml/shmprofiles/" + ProfileName("Deployment/serve")));
  CHECK(api.Get("/apis/shmguard.io/v1alpha1/namespaces/team-a/shmprofiles/" + ProfileName("Job/recent")));
  CHECK_FALSE(api.Get("/apis/shmguard.io/v1alpha1/namespaces/ml/shmprofiles/" + ProfileName("Job/old-1")));
  // A week later, with a 10-day retention, the Deployment's (last seen 14 days before) goes too.
  CHECK(recorder.Sweep(now + 7 * 86400, 10) == std::optional<uint64_t>(1));
  CHECK(recorder.deletes().ok() == 701);
  CHECK(recorder.deletes().failed() == 0);
}

}  // namespace
}  // namespace shmguard::agent

namespace shmguard::agent {
namespace {

TEST_CASE("ShmAgent keeps sampling while the API server holds its Event writes, and writes them after",
          "[shm_agent][net]") {
  RestFake api(true);
  std::mutex gate;
  std::unique_lock<std::mutex> held(gate);  // the API server answers no Event until released
  api.before_event = [&] { std::lock_guard<std::mutex> wait_for(gate); };
  Node node;
  AgentOptions o = Options();
  o.interval = std::chrono::milliseconds(20);
  o.metrics_port = 0;
  o.bind_address = "127.0.0.1";
  ShmAgent agent(o, api.Client(), node.statfs());
  std::vector<json> pods;
  for (int i = 0; i < 20; ++i) {
    pods.push_back(JobPod("u" + std::to_string(i), "train"));
    node.use["u" + std::to_string(i)] = {95 * kMi, 100 * kMi};  // twenty crossings at once
  }
  agent.SetPods(pods);
  REQUIRE(agent.Start());
  auto samples = [&] { return agentCounterOf(agent.RenderMetrics(), "shmguard_agent_samples_total"); };
  // The first Event is held by the API server; the samples go on meanwhile.
  REQUIRE(test::Eventually([&] { return api.Seen().size() > 0 && samples() >= 10; }, 10));
  CHECK(api.Events().empty());
  CHECK(agentCounterOf(agent.RenderMetrics(), "shmguard_agent_api_queue_depth") > 0);
  held.unlock();
  CHECK(test::Eventually([&] { return api.Events().size() == 20; }, 20));
  CHECK(agentCounterOf(agent.RenderMetrics(), "shmguard_agent_api_queue_dropped_total") == 0);
  agent.Stop();
}

}  // namespace
}  // namespace shmguard::agent
