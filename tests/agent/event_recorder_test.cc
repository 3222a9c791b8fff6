// EventRecorder against the agent's API fake: one Event per pod, reason and volume, a repeat
// counted on it by a merge patch (as client-go's EventCorrelator folds repeats), a refusal
// counted as failed, and nothing without a client.
#include "agent/event_recorder.h"

#include <catch2/catch.hpp>

#include "agent/rest_fake.h"
#include "test_util.h"

namespace shmguard::agent {
namespace {

using nlohmann::json;

AgentPod InTable(PodTable& table) {
  table.Upsert(test::Yaml(R"({metadata: {uid: u1, namespace: ml, name: train-0},
      spec: {volumes: [{name: dshm, emptyDir: {medium: Memory}}],
             containers: [{name: t, volumeMounts: [{name: dshm, mountPath: /dev/shm}]}]}})"));
  AgentPod pod;
  table.With([&](std::map<std::string, AgentPod>& pods) { pod = pods.at("u1").Summary(); });
  return pod;
}

TEST_CASE("EventRecorder creates an Event once per reason and volume, and counts a repeat on it",
          "[event_recorder][net]") {
  test::RestFake api;
  PodTable table(0.9);
  const AgentPod pod = InTable(table);
  EventRecorder events(api.Client(), "node-1", table);
  events.Record(pod, "dshm", AgentEvent::kShmNearFull, "91% full");
  events.Record(pod, "dshm", AgentEvent::kShmNearFull, "95% full");
  events.Record(pod, "dshm", AgentEvent::kShmLeaked, "300 MiB leaked");
  REQUIRE(api.Events().size() == 2);  // the repeat is a patch of the first
  const json first = api.Events()[0];
  CHECK(first["reason"] == "ShmNearFull");
  CHECK(first["type"] == "Warning");
  CHECK(first["count"] == 1);
  CHECK(first["involvedObject"] == json::parse(R"({"apiVersion":"v1","kind":"Pod","name":"train-0",
      "namespace":"ml","uid":"u1"})"));
  CHECK(first["source"] == json::parse(R"({"component":"shmguard-agent","host":"node-1"})"));
  CHECK(first["metadata"]["generateName"] == "train-0.shm-");
  CHECK(api.Events()[1]["reason"] == "ShmLeaked");
  const auto seen = api.Seen();
  CHECK(std::count(seen.begin(), seen.end(), "PATCH /api/v1/namespaces/ml/events/ev0") == 1);
  CHECK(events.results().ok() == 3);
  CHECK(events.results().failed() == 0);
  table.With(
      [](std::map<std::string, AgentPod>& pods) { CHECK(pods.at("u1").events.at("ShmNearFull/dshm").count == 2); });
}

TEST_CASE("EventRecorder counts an Event the API refuses as failed, and records nothing without a client",
          "[event_recorder][net]") {
  test::RestFake api;
  api.refuse_events = true;  // no RBAC for Events
  PodTable table(0.9);
  const AgentPod pod = InTable(table);
  std::vector<ApiFailure> failures;
  EventRecorder events(api.Client(), "node-1", table, [&](const ApiFailure& f) { failures.push_back(f); });
  events.Record(pod, "dshm", AgentEvent::kShmNearFull, "x");
  CHECK(events.results().failed() == 1);
  CHECK(events.results().ok() == 0);
  REQUIRE(failures.size() == 1);  // and reported, for the log
  CHECK(failures[0].what == "Event ShmNearFull ml/" + pod.name);
  CHECK(failures[0].status == 403);
  table.With([](std::map<std::string, AgentPod>& pods) { CHECK(pods.at("u1").events.empty()); });  // tried anew
  EventRecorder none(nullptr, "node-1", table);
  none.Record(InTable(table), "dshm", AgentEvent::kShmNearFull, "x");
  CHECK(none.results().ok() == 0);
  CHECK(none.results().failed() == 0);
}

}  // namespace
}  // namespace shmguard::agent
