// ProfileWatch: ShmProfiles listed and watched into the snapshot the admission path reads, and
// HandleAdmission sizing a workload's pod from it.
#include "server/profile_watch.h"

#include <catch2/catch.hpp>
#include <memory>

#include "kube/fake_api.h"
#include "server/admission_handler.h"
#include "test_util.h"
#include "tls_fixture.h"

namespace shmguard::server {
namespace {

using nlohmann::json;

json Profile(const std::string& ns, const std::string& workload, int64_t peak) {
  json j = json::parse(ShmProfileJson({ns, workload, peak, 0, 1, "2026-11-25T10:00:00Z", "p"}));
  j.erase("kind");  // as a list's items come
  return j;
}

TEST_CASE("ProfileWatch keeps the profiles of lists and events, and skips unreadable ones", "[profile_watch]") {
  ProfileWatch watch(nullptr);
  CHECK_FALSE(watch.synced());
  CHECK(watch.Snapshot()->size() == 0);
  watch.SetProfiles(json::array({Profile("a", "Job/x", 100), Profile("b", "Job/y", 200),
                                 json::parse(R"({"metadata":{"namespace":"a","name":"z"},"spec":{"workload":7}})")}));
  CHECK(watch.synced());
  CHECK(watch.unreadable() == 1);
  auto before = watch.Snapshot();
  CHECK(before->size() == 2);
  watch.UpdateProfile("MODIFIED", Profile("a", "Job/x", 300));
  watch.UpdateProfile("ADDED", Profile("a", "CronJob/z", 5));
  watch.UpdateProfile("DELETED", Profile("b", "Job/y", 200));
  watch.UpdateProfile("BOOKMARK", Profile("b", "Job/q", 1));
  auto after = watch.Snapshot();
  CHECK(after->size() == 2);
  CHECK(after->Find("a", {"Job/x"})->peak_bytes == 300);
  CHECK(after->Find("b", {"Job/y"}) == nullptr);
  CHECK(before->Find("a", {"Job/x"})->peak_bytes == 100);  // a snapshot taken stays as it was
  watch.SetProfiles(json::array());                        // a relist replaces everything
  CHECK(watch.Snapshot()->size() == 0);
}

TEST_CASE("ProfileWatch follows an API server's profiles, and Stop closes the watch and joins",
          "[profile_watch][net]") {
  test::FakeApi api(
      [](const test::FakeRequest& r, size_t n) {
        test::FakeAnswer a;
        if (!r.watch) {
          a.body = json{{"metadata", {{"resourceVersion", "5"}}}, {"items", json::array({Profile("a", "Job/x", 100)})}}
                       .dump();
        } else if (n == 1) {
          json event = {{"type", "ADDED"}, {"object", Profile("b", "Job/y", 200)}};
          event["object"]["metadata"]["resourceVersion"] = "6";
          a.body = event.dump() + "\n";
          a.silence = std::chrono::milliseconds(30000);  // then open and silent
        } else {
          a.silence = std::chrono::milliseconds(30000);
        }
        return a;
      },
      kShmProfilesPath);
  auto client = std::make_shared<kube::KubeClient>(api.Config(), 1000, 100);
  ProfileWatch watch(client);
  CHECK_FALSE(watch.NotReadyReason().empty());
  watch.Start();
  REQUIRE(test::Eventually([&] { return watch.Snapshot()->size() == 2; }));
  CHECK(watch.synced());
  CHECK(watch.NotReadyReason().empty());
  CHECK(watch.Snapshot()->Find("b", {"Job/y"})->peak_bytes == 200);
  auto start = std::chrono::steady_clock::now();
  watch.Stop();
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(2));
  CHECK(api.Seen().size() == 2);
}

TEST_CASE("HandleAdmission sizes a pod of a workload with a profile from its peak", "[profile_watch]") {
  const std::string pod = R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":"train-x",
      "ownerReferences":[{"apiVersion":"batch/v1","kind":"Job","name":"train","controller":true}]},
      "spec":{"containers":[{"name":"t","resources":{"limits":{"nvidia.com/gpu":1,"memory":"8Gi"}}}]}})";
  const std::string review = test::ReviewJson(pod, "team-a");
  ProfileWatch watch(nullptr);
  watch.SetProfiles(json::array({Profile("team-a", "Job/train", 1200 << 20)}));
  auto sized = [&](const ObservationIndex* index) {
    AdmissionExchange x = HandleAdmission({review}, AdmissionRoute{}, {Policy{}, index});
    REQUIRE(x.status == 200);
    return x.required_bytes;
  };
  CHECK(sized(nullptr) == int64_t{2} << 30);             // the estimate: 25 % of 8Gi
  CHECK(sized(watch.Snapshot().get()) == 1800ll << 20);  // 1200Mi × 1.5
}

}  // namespace
}  // namespace shmguard::server
