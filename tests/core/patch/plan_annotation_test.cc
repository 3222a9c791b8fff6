// PlanAnnotation: the shmguard.io/plan annotation from SizePod's numbers, compact with sorted keys.
#include "core/patch/plan_annotation.h"

#include <catch2/catch.hpp>

#include "test_util.h"

namespace shmguard {
namespace {

using nlohmann::json;

constexpr int64_t kMi = int64_t{1} << 20;

TEST_CASE("PlanAnnotation writes each sizing's numbers as sorted compact JSON", "[plan_annotation]") {
  PlanNote plan;
  plan.kind = SizingKind::kPlan;
  plan.gpus = 4;
  plan.nodes = 2;
  plan.procs = 4;
  plan.required_bytes = 3000 * kMi;
  plan.workers = 6;
  plan.prefetch_factor = 2;
  plan.batch_bytes = 16 * kMi;
  PlanNote server = plan;
  server.kind = SizingKind::kServer;
  server.server = Server::kVllm;
  server.server_bytes = 6200 * kMi;
  PlanNote estimate = plan;
  estimate.kind = SizingKind::kEstimate;
  estimate.estimated = "a quarter of the memory limit";
  estimate.floor_bytes = 1024 * kMi;
  struct Case {
    const char* name;
    const PlanNote& note;
    const char* expected;
  };
  const Case cases[] = {
      {"a plan", plan,
       R"({"batchBytes":"16Mi","gpus":4,"nodes":2,"prefetchFactor":2,"procs":4,"required":"3000Mi","workers":6})"},
      {"a server", server,
       R"({"gpus":4,"nodes":2,"procs":4,"required":"3000Mi","server":"vllm","serverBytes":"6200Mi"})"},
      {"an estimate", estimate,
       R"({"estimated":"a quarter of the memory limit","floor":"1Gi","gpus":4,"nodes":2,"procs":4,"required":"3000Mi"})"},
  };
  for (const auto& c : cases) {
    SECTION(c.name) {
      const std::string text = PlanAnnotation(c.note);
      CHECK(text == c.expected);
      CHECK(json::parse(text).dump() == text);  // what json::dump writes: compact, keys sorted
    }
  }
  SECTION("nothing sized") { CHECK(PlanAnnotation(PlanNote{}) == "{}"); }
}

TEST_CASE("PlanAnnotation records the profile a size was learned from, quoted", "[plan_annotation]") {
  const ObservedShm seen{"ml", "Job/\"train\"", 3 * 1024 * kMi, 4 * 1024 * kMi, 2, "2026-11-25T10:00:00Z", "p"};
  for (SizingKind kind : {SizingKind::kPlan, SizingKind::kServer, SizingKind::kEstimate}) {
    PlanNote note;
    note.kind = kind;
    note.observed = &seen;
    const std::string text = PlanAnnotation(note);
    CAPTURE(text);
    const json parsed = json::parse(text);
    CHECK(parsed.dump() == text);
    CHECK(parsed["observed"] ==
          json{{"last", "2026-11-25T10:00:00Z"}, {"peak", "3Gi"}, {"runs", 2}, {"workload", "Job/\"train\""}});
  }
}

TEST_CASE("PlannedShmBytes reads the size of the plan a pod carries, and nothing else", "[plan_annotation]") {
  auto with_plan = [](const char* plan) {
    json pod = json::parse(R"({"metadata":{"name":"p","annotations":{}}})");
    pod["metadata"]["annotations"]["shmguard.io/plan"] = plan;
    return pod;
  };
  const struct {
    const char* name;
    json pod;
    std::optional<int64_t> want;
  } cases[] = {
      {"the webhook's plan", with_plan(R"({"gpus":8,"required":"17332Mi","workers":8})"), 17332LL << 20},
      {"the policies' plan", with_plan(R"({"policyMode":true,"required":"1Gi"})"), 1LL << 30},
      {"no annotation", json::parse(R"({"metadata":{"name":"p"}})"), std::nullopt},
      {"not JSON", with_plan("17332Mi"), std::nullopt},
      {"required not a string", with_plan(R"({"required":17332})"), std::nullopt},
      {"required not a quantity", with_plan(R"({"required":"lots"})"), std::nullopt},
      {"required negative", with_plan(R"({"required":"-1Gi"})"), std::nullopt},
      {"required zero", with_plan(R"({"required":"0"})"), std::nullopt},
  };
  for (const auto& c : cases) {
    SECTION(c.name) { CHECK(PlannedShmBytes(c.pod) == c.want); }
  }
}

}  // namespace
}  // namespace shmguard
