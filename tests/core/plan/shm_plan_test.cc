// PlanShm: the arithmetic of docs/sources.md §1, overflow, and the measured DataLoader peaks
// (tests/testdata/shm-truth, measured with torch 1.13 on this kind of machine).
#include "core/plan/shm_plan.h"

#include <catch2/catch.hpp>
#include <cstdio>
#include <limits>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "core/values/human_units.h"
#include "test_util.h"

namespace shmguard {
namespace {

constexpr int64_t kMiB = 1 << 20;

struct PlanCase {
  ShmInputs in;
  int64_t required;
};

TEST_CASE("PlanShm computes the documented formula", "[shm_plan]") {
  SizingConstants k;
  // By hand: round_up_MiB((dl + nccl + proxy + 64Mi) × 1.2), floor 1Gi when N >= 2.
  const PlanCase cases[] = {
      // W=0: only the base: 64Mi × 1.2 = 76.8Mi -> 77Mi
      {{0, 2, 0, 1, 1}, 77 * kMiB},
      // W=4,P=2,B=8Mi,N=1: (10 × 8Mi + 64Mi) × 1.2 = 172.8Mi -> 173Mi
      {{4, 2, 8 * kMiB, 1, 1}, 173 * kMiB},
      // W=1,P=1,B=1Mi: (3Mi + 64Mi) × 1.2 = 80.4Mi -> 81Mi
      {{1, 1, kMiB, 1, 1}, 81 * kMiB},
      // N=2, small: floor 1Gi
      {{2, 2, kMiB, 2, 1}, 1024 * kMiB},
      // A worked example: N=8,W=8,P=2,B=64Mi: 9Gi + 8×2×2×9637892 + 64Mi = 9574.1Mi × 1.2
      {{8, 2, 64 * kMiB, 8, 1},
       ((9 * 1024 * kMiB + 8 * 2 * 2 * 9637892LL + 64 * kMiB) * 12 / 10 + kMiB - 1) / kMiB * kMiB},
      // multi-node adds N × 34210180
      {{8, 2, 64 * kMiB, 8, 2},
       ((9 * 1024 * kMiB + 8 * 2 * 2 * 9637892LL + 8 * 34210180LL + 64 * kMiB) * 12 / 10 + kMiB - 1) / kMiB * kMiB},
      // N=2 uses one peer per proc: 2×2×1×S
      {{16, 4, 128 * kMiB, 2, 1},
       ((2 * (16 * 4 + 2) * 128 * kMiB + 2 * 2 * 9637892LL + 64 * kMiB) * 12 / 10 + kMiB - 1) / kMiB * kMiB},
  };
  for (const auto& c : cases) {
    CAPTURE(c.in.workers, c.in.prefetch_factor, c.in.batch_bytes, c.in.procs, c.in.nodes);
    auto plan = PlanShm(c.in, k);
    REQUIRE(plan.has_value());
    CHECK(plan->required_bytes == c.required);
    CHECK(plan->required_bytes % kMiB == 0);
  }
}

TEST_CASE("PlanShm reports its terms and arithmetic", "[shm_plan]") {
  auto plan = PlanShm({8, 2, 160 * kMiB, 4, 1}, SizingConstants{});
  REQUIRE(plan.has_value());
  CHECK(plan->dataloader_bytes == 4 * (8 * 2 + 2) * 160 * kMiB);
  CHECK(plan->nccl_shm_bytes == 4 * 2 * 2 * 9637892LL);
  CHECK(plan->nccl_proxy_bytes == 0);
  CHECK(plan->base_bytes == 64 * kMiB);
  CHECK_FALSE(plan->floor_applied);
  CHECK(plan->safe_bytes == 14078 * kMiB);
  CHECK(plan->required_bytes == 14078 * kMiB);
}

TEST_CASE("PlanShm uses every sizing constant of the policy", "[shm_plan]") {
  SizingConstants k;
  k.in_flight_extra = 0;
  k.safety_ppm = 1'000'000;
  k.base_bytes = 0;
  k.multi_gpu_floor_bytes = 0;
  k.nccl_connection_bytes = kMiB;
  k.nccl_proxy_pool_bytes = 2 * kMiB;
  auto plan = PlanShm({2, 3, kMiB, 4, 2}, k);
  REQUIRE(plan.has_value());
  // 4 × 6 × 1Mi + 4 × 2 × 2 × 1Mi + 4 × 2Mi
  CHECK(plan->required_bytes == (24 + 16 + 8) * kMiB);
}

TEST_CASE("PlanShm refuses overflow instead of wrapping", "[shm_plan]") {
  SizingConstants k;
  const ShmInputs overflowing[] = {
      {4096, 1024, std::numeric_limits<int64_t>::max() / 2, 1024, 1},
      {8, 2, int64_t{1} << 62, 1, 1},
      {1, 1, std::numeric_limits<int64_t>::max() - 10, 1, 1},  // × 1.2 overflows
  };
  for (const auto& in : overflowing) {
    auto plan = PlanShm(in, k);
    REQUIRE_FALSE(plan.has_value());
    CHECK_THAT(plan.error().message, Catch::Contains("2^63-1"));
  }
}

// Minimal RFC 4180 reader: quoted fields may hold commas, quotes ("") and newlines.
std::vector<std::map<std::string, std::string>> ReadCsv(const std::string& text) {
  std::vector<std::vector<std::string>> rows(1);
  std::string field;
  bool quoted = false;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (quoted) {
      if (c == '"' && i + 1 < text.size() && text[i + 1] == '"') {
        field += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        field += c;
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      rows.back().push_back(field);
      field.clear();
    } else if (c == '\n') {
      rows.back().push_back(field);
      field.clear();
      rows.emplace_back();
    } else if (c != '\r') {
      field += c;
    }
  }
  if (!field.empty() || !rows.back().empty()) rows.back().push_back(field);
  std::vector<std::map<std::string, std::string>> out;
  for (size_t r = 1; r < rows.size(); ++r) {
    if (rows[r].size() != rows[0].size()) continue;
    std::map<std::string, std::string> m;
    for (size_t i = 0; i < rows[0].size(); ++i) m[rows[0][i]] = rows[r][i];
    out.push_back(std::move(m));
  }
  return out;
}

TEST_CASE("PlanShm never falls below a measured DataLoader peak", "[shm_plan]") {
  auto rows = ReadCsv(test::ReadTestdata("shm-truth/results.csv"));
  REQUIRE(rows.size() >= 300);
  // Per configuration: the smallest tmpfs size from which on no run failed, and the peak used.
  // W, P, B MiB, extra batches the loop keeps alive (keep_refs), the other settings.
  using Config = std::tuple<int64_t, int64_t, std::string, int64_t, std::string>;
  std::map<Config, std::vector<std::pair<double, bool>>> runs;
  std::map<Config, double> peaks;
  for (const auto& r : rows) {
    int64_t w = std::stoll(r.at("workers"));
    if (w == 0) continue;
    Config c{w, std::stoll(r.at("prefetch")), r.at("batch_mib"), std::stoll(r.at("keep_refs")),
             r.at("pin_memory") + r.at("persistent_workers") + r.at("fast_consumer") + r.at("strategy") +
                 r.at("batch_size")};
    bool ok = r.at("ok") == "True";
    runs[c].push_back({std::stod(r.at("tmpfs_mib")), ok});
    if (ok && !r.at("peak_net_mib").empty()) peaks[c] = std::max(peaks[c], std::stod(r.at("peak_net_mib")));
  }
  REQUIRE(runs.size() >= 20);
  int thresholds_checked = 0;
  for (const auto& [config, list] : runs) {
    const auto& [w, p, b_mib, keep_refs, rest] = config;
    double threshold = 0;  // smallest size with no failure at it or above
    for (const auto& [size, ok] : list) {
      if (!ok) threshold = std::max(threshold, size + 1);
    }
    auto plan = PlanShm({w, p, static_cast<int64_t>(std::stod(b_mib) * kMiB), 1, 1}, SizingConstants{});
    REQUIRE(plan.has_value());
    double planned_mib = static_cast<double>(plan->required_bytes) / kMiB;
    CAPTURE(w, p, b_mib, keep_refs, rest, threshold, peaks[config], planned_mib);
    CHECK(planned_mib >= threshold);
    CHECK(planned_mib >= peaks[config]);
    // The DataLoader term alone covers the measured (W·P+2)·B peak (+ semaphore pages) unless
    // the training loop itself keeps older batches alive (keep_refs > 1: RESULTS.md adds
    // (K-1)·B for that; the base and safety margin absorb it above).
    if (keep_refs <= 1) {
      CHECK(static_cast<double>(plan->dataloader_bytes) / kMiB + 1 >= peaks[config]);
    }
    if (threshold > 0) ++thresholds_checked;
  }
  CHECK(thresholds_checked >= 8);  // the failure-threshold searches are in the data
}

// HumanBytes counts tenths in integers; printf("%.1f") of the exact double is the reference
// wherever a double holds the byte count exactly.
TEST_CASE("HumanBytes rounds MiB as printf does", "[shm_plan]") {
  for (int64_t bytes = kMiB; bytes < 40 * kMiB; bytes += 65'537) {
    CAPTURE(bytes);
    if (bytes % kMiB == 0) continue;
    char expected[64];
    std::snprintf(expected, sizeof expected, "%.1fMi", static_cast<double>(bytes) / kMiB);
    CHECK(HumanBytes(bytes) == expected);
  }
  for (int64_t quarters = 5; quarters < 120; quarters += 2) {  // x.25 and x.75: the exact halves
    int64_t bytes = quarters * kMiB / 4;
    CAPTURE(bytes);
    char expected[64];
    std::snprintf(expected, sizeof expected, "%.1fMi", static_cast<double>(bytes) / kMiB);
    CHECK(HumanBytes(bytes) == expected);
  }
}

TEST_CASE("HumanBytes and FormatPpm", "[shm_plan]") {
  CHECK(HumanBytes(12 * 1024 * kMiB) == "12Gi");
  CHECK(HumanBytes(4 * 2 * 2 * 9637892LL) == "147.1Mi");
  CHECK(HumanBytes(1000) == "1k");
  CHECK(HumanBytes(kMiB + kMiB / 4) == "1.2Mi");  // exactly 1.25: half to even, as printf
  CHECK(HumanBytes(kMiB + 3 * kMiB / 4) == "1.8Mi");
  CHECK(HumanBytes(10 * kMiB - 1) == "10.0Mi");
  CHECK(HumanBytes(std::numeric_limits<int64_t>::max()) == "8796093022208.0Mi");
  CHECK(FormatPpm(1'200'000) == "1.2");
  CHECK(FormatPpm(500'000) == "0.5");
  CHECK(FormatPpm(1'000'000) == "1");
  CHECK(FormatPpm(1'050'000) == "1.05");
  CHECK(FormatPpm(1'000'001) == "1.000001");
  CHECK(FormatPpm(2'123'450) == "2.12345");
}

TEST_CASE("Plural puts the noun in the count's number", "[shm_plan]") {
  struct Case {
    int64_t n;
    const char* word;
    const char* plural;
    const char* want;
  };
  for (const Case& c : std::vector<Case>{{1, "proc", nullptr, "1 proc"},
                                         {4, "proc", nullptr, "4 procs"},
                                         {0, "GPU", nullptr, "0 GPUs"},
                                         {1, "process", "processes", "1 process"},
                                         {2, "process", "processes", "2 processes"}}) {
    CAPTURE(c.n, c.word);
    CHECK(Plural(c.n, c.word, c.plural) == c.want);
  }
}

}  // namespace
}  // namespace shmguard
