// FitWarnings, DecisionWarnings and DenialMessage: a decision's findings as the API server gets
// them.
#include "server/admission_words.h"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "test_util.h"

namespace shmguard::server {
namespace {

using nlohmann::json;

TEST_CASE("FitWarnings keeps warnings within the API server's limits", "[admission_words]") {
  std::string long_reason =
      "dshm needs 14078Mi = (4 procs × (8 workers × 2 + 2) × 160Mi + 147.1Mi NCCL + 64Mi base) × 1.2 "
      "(4 procs from --nproc_per_node=4); memory limit 64Gi leaves 51458Mi for the processes";
  auto fitted = FitWarnings({long_reason, long_reason, "short"});
  REQUIRE(fitted.size() >= 3);
  for (const auto& w : fitted) {
    CHECK(w.size() <= 120);
    CHECK_THAT(w, Catch::StartsWith("shmguard: "));
  }
  CHECK(fitted.back() == "shmguard: short");
  CHECK(fitted.size() == FitWarnings({long_reason, "short"}).size());  // duplicates dropped

  std::vector<std::string> many;
  for (int i = 0; i < 200; ++i) many.push_back("warning number " + std::to_string(i) + " " + std::string(60, 'x'));
  auto capped = FitWarnings(many);
  size_t total = 0;
  for (const auto& w : capped) total += w.size();
  CHECK(total <= 4096);
  CHECK_THAT(capped.back(), Catch::Contains("more warnings left out"));

  auto utf8 = FitWarnings({std::string(200, 'x') + "é"});  // never cut inside a UTF-8 sequence
  for (const auto& w : utf8) CHECK(json(w).dump().find("\\u") == std::string::npos);
}

Decision Denial() {
  Decision d;
  d.allowed = false;
  d.code = 403;
  d.findings.push_back(Finding(Check::kAnnotationsRequired).At(Severity::kError));
  d.findings.back().pod = "replicatedJob workers";
  Finding over(Check::kShmOverMemoryLimit, "/spec/containers/0/resources/limits/memory");
  over.Num("required_bytes", 20ll << 30).Num("memory_limit_bytes", 16ll << 30);
  over.Val("volume", "dshm").Val("limit_source", "sum of container limits");
  over.pod = "replicatedJob launcher";
  d.findings.push_back(over);
  return d;
}

TEST_CASE("DenialMessage names the object and every finding, by pod when there are several", "[admission_words]") {
  Decision d = Denial();
  CHECK(DenialMessage(d, "JobSet", "ml-a", "llm") ==
        "shmguard denied JobSet ml-a/llm: GPU pods in this namespace must declare shmguard.io/num-workers and "
        "shmguard.io/batch-bytes (DataLoader num_workers and bytes per batch); memory limit 16Gi (sum of container "
        "limits) is below the 20Gi dshm needs: raise the limit or lower num-workers/prefetch-factor/batch size");
  d.prefix_pods = true;
  CHECK_THAT(DenialMessage(d, "JobSet", "ml-a", "llm"), Catch::Contains("llm: replicatedJob workers: GPU pods") &&
                                                            Catch::Contains("; replicatedJob launcher: memory"));
}

TEST_CASE("DecisionWarnings puts an allowed decision's findings in fitted words", "[admission_words]") {
  Decision none;
  CHECK(DecisionWarnings(none).empty());
  Decision d = Denial();
  d.allowed = true;
  d.prefix_pods = true;
  auto warnings = DecisionWarnings(d);
  REQUIRE(warnings.size() >= 2);
  CHECK(warnings[0] ==
        "shmguard: replicatedJob workers: GPU pods in this namespace must declare shmguard.io/num-workers and");
  for (const auto& w : warnings) CHECK(w.size() <= 120);
}

}  // namespace
}  // namespace shmguard::server
