// LoadObservations, and a workload sized from the profiles it reads (as `shmguard audit
// --observations FILE` sizes it).
#include "io/config/observations.h"

#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <fstream>
#include <sstream>
#include <thread>

#include "core/checks/checks.h"
#include "core/verdict/evaluation.h"
#include "test_documents.h"
#include "test_util.h"
#include "tls_fixture.h"

namespace shmguard::io {
namespace {

constexpr const char* kList = R"(apiVersion: v1
kind: List
items:
- apiVersion: shmguard.io/v1alpha1
  kind: ShmProfile
  metadata: {name: cronjob.nightly, namespace: team-a}
  spec: {workload: CronJob/nightly}
  status: {peakBytes: 1258291200, sizeBytes: 1073741824, runs: 4, lastObserved: "2026-11-25T03:10:00Z"}
- apiVersion: shmguard.io/v1alpha1
  kind: ShmProfile
  metadata: {name: job.other, namespace: team-b}
  spec: {workload: Job/other}
  status: {peakBytes: 1048576, runs: 1}
)";

// `--observations <(kubectl get shmprofiles -A -o yaml)`: the profiles straight from the cluster
// come through a pipe, which has no size to map.
TEST_CASE("LoadObservations reads a pipe, as a shell's process substitution gives it", "[observations]") {
  int fds[2];
  REQUIRE(::pipe(fds) == 0);
  const std::string text = kList;
  ssize_t written = 0;  // Catch2's assertions are for one thread: checked after the join
  std::thread writer([&] {
    written = ::write(fds[1], text.data(), text.size());
    ::close(fds[1]);
  });
  auto index = LoadObservations("/dev/fd/" + std::to_string(fds[0]));
  writer.join();
  CHECK(written == static_cast<ssize_t>(text.size()));
  ::close(fds[0]);
  REQUIRE(index);
  CHECK(index->size() == 2);
}

TEST_CASE("LoadObservations reads a List of ShmProfiles, and single documents", "[observations]") {
  test::TempDir dir;
  std::ofstream(dir.File("list.yaml")) << kList;
  auto index = LoadObservations(dir.File("list.yaml"));
  REQUIRE(index);
  CHECK(index->size() == 2);
  REQUIRE(index->Find("team-a", {"CronJob/nightly"}));
  CHECK(index->Find("team-a", {"CronJob/nightly"})->runs == 4);
  std::ofstream(dir.File("docs.yaml")) << "apiVersion: shmguard.io/v1alpha1\nkind: ShmProfile\n"
                                          "metadata: {name: job.a, namespace: ns-a}\nspec: {workload: Job/a}\n---\n"
                                          "apiVersion: shmguard.io/v1alpha1\nkind: ShmProfile\n"
                                          "metadata: {name: job.b, namespace: ns-a}\nspec: {workload: Job/b}\n";
  auto docs = LoadObservations(dir.File("docs.yaml"));
  REQUIRE(docs);
  CHECK(docs->size() == 2);
}

TEST_CASE("LoadObservations names the file, line and field of what it cannot read", "[observations]") {
  test::TempDir dir;
  struct Case {
    const char* text;
    int line;             // 0: not checked
    const char* pointer;  // the field
  };
  const Case cases[] = {
      {"kind: ShmProfile\nmetadata: {namespace: ns-a}\nspec: {workload: 7}\n", 1, "/spec/workload"},
      {"kind: ShmProfile\nmetadata: {namespace: ns-a}\nspec: {workload: Job/a}\n---\nkind: ShmProfile\n"
       "metadata: {namespace: ns-a}\nspec: {workload: Job/x}\nstatus: {runs: -2}\n",
       4, "/status/runs"},  // the document starts at its "---"
      {"kind: Pod\nmetadata: {name: p}\n", 1, "/kind"},
      {"kind: List\nitems:\n- kind: ShmProfile\n  spec: {workload: Job/x}\n", 1, "/items/0/metadata/namespace"},
      {"kind: ShmProfile\n  bad: [\n", 0, ""},
  };
  for (const auto& c : cases) {
    CAPTURE(c.text);
    std::ofstream(dir.File("bad.yaml"), std::ios::trunc) << c.text;
    auto index = LoadObservations(dir.File("bad.yaml"));
    REQUIRE_FALSE(index);
    CHECK(index.error().where.file == dir.File("bad.yaml"));
    if (c.line) CHECK(index.error().where.line == c.line);
    CHECK(index.error().where.pointer == c.pointer);
  }
  auto missing = LoadObservations(dir.File("none.yaml"));
  REQUIRE_FALSE(missing);
  CHECK(missing.error().code == Code::kIo);
}

TEST_CASE("Observations read from a file size a workload past its manifest's /dev/shm", "[observations]") {
  test::TempDir dir;
  std::ofstream(dir.File("list.yaml")) << kList;
  std::ofstream(dir.File("cron.yaml")) << R"(apiVersion: batch/v1
kind: CronJob
metadata: {name: nightly, namespace: team-a}
spec:
  schedule: "0 3 * * *"
  jobTemplate:
    spec:
      template:
        spec:
          restartPolicy: Never
          volumes: [{name: dshm, emptyDir: {medium: Memory, sizeLimit: 1Gi}}]
          containers:
          - name: t
            resources: {limits: {nvidia.com/gpu: 1, memory: 8Gi}}
            volumeMounts: [{name: dshm, mountPath: /dev/shm}]
)";
  auto index = LoadObservations(dir.File("list.yaml"));
  REQUIRE(index);
  const auto documents = test::ReadDocuments({dir.File("cron.yaml")});
  REQUIRE(documents.size() == 1);
  const nlohmann::json cron = documents[0].object->ToJson();
  auto ids = [&](const ObservationIndex* observations) {
    return test::Ids(Evaluate(cron, Policy{}, {.observations = observations}).AllFindings());
  };
  auto has = [](const std::vector<std::string>& v, const char* id) { return std::count(v.begin(), v.end(), id) > 0; };
  auto plain = ids(nullptr);
  CHECK(has(plain, "shm-sufficient"));  // 1Gi is the floor: enough, by the formula
  CHECK_FALSE(has(plain, "sized-from-observation"));
  auto observed = ids(&*index);
  CHECK(has(observed, "sized-from-observation"));
  CHECK(has(observed, "shm-below-need"));  // 1200Mi × 1.5 = 1800Mi above the manifest's 1Gi
}

TEST_CASE("LoadObservations reads at most 64 MiB, never from a device", "[observations]") {
  auto zero = LoadObservations("/dev/zero");
  REQUIRE_FALSE(zero);
  CHECK(zero.error().ToString() == "/dev/zero: not a regular file (a character device)");
}

}  // namespace
}  // namespace shmguard::io
