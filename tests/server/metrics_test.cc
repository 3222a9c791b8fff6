// Metrics::Render: the Prometheus text format (0.0.4) of what was counted, with cumulative
// histogram buckets and escaped label values.
#include "server/metrics.h"

#include <catch2/catch.hpp>

namespace shmguard::server {
namespace {

TEST_CASE("Metrics renders counters by label and a cumulative latency histogram", "[metrics]") {
  Metrics m;
  m.ObserveRequest("mutate", "Pod", "patched", 0.0003);
  m.ObserveRequest("mutate", "Pod", "patched", 0.002);
  m.ObserveRequest("mutate", "JobSet", "allowed", 2.0);  // above every bucket
  m.ObserveRequest("validate", "Pod", "denied", 0.00005);
  m.CountPatch();
  m.CountDenial();
  m.CountHttpError(415);
  m.CountHttpError(415);
  m.CountConfigReload(false);
  m.CountCertReload(true);
  m.SetCertificateNotAfter(1800000000);
  const std::string text = m.Render("1.2.3");
  auto has = [&](const std::string& line) {
    CAPTURE(line);
    CHECK(text.find(line + "\n") != std::string::npos);
  };
  has("# TYPE shmguard_admission_requests_total counter");
  has(R"(shmguard_admission_requests_total{endpoint="mutate",kind="Pod",decision="patched"} 2)");
  has(R"(shmguard_admission_requests_total{endpoint="mutate",kind="JobSet",decision="allowed"} 1)");
  has(R"(shmguard_admission_requests_total{endpoint="validate",kind="Pod",decision="denied"} 1)");
  has("# TYPE shmguard_admission_duration_seconds histogram");
  has(R"(shmguard_admission_duration_seconds_bucket{endpoint="mutate",le="0.0001"} 0)");
  has(R"(shmguard_admission_duration_seconds_bucket{endpoint="mutate",le="0.0005"} 1)");
  has(R"(shmguard_admission_duration_seconds_bucket{endpoint="mutate",le="0.0025"} 2)");
  has(R"(shmguard_admission_duration_seconds_bucket{endpoint="mutate",le="1"} 2)");
  has(R"(shmguard_admission_duration_seconds_bucket{endpoint="mutate",le="+Inf"} 3)");
  has(R"(shmguard_admission_duration_seconds_count{endpoint="mutate"} 3)");
  has(R"(shmguard_admission_duration_seconds_bucket{endpoint="validate",le="0.0001"} 1)");
  has("shmguard_patches_total 1");
  has("shmguard_denials_total 1");
  has(R"(shmguard_http_errors_total{code="415"} 2)");
  has(R"(shmguard_config_reloads_total{result="failed"} 1)");
  has(R"(shmguard_config_reloads_total{result="ok"} 0)");
  has(R"(shmguard_certificate_reloads_total{result="ok"} 1)");
  has("shmguard_certificate_not_after_seconds 1800000000");
  has(R"(shmguard_build_info{version="1.2.3"} 1)");
  // The sum is the seconds observed.
  auto at = text.find("shmguard_admission_duration_seconds_sum{endpoint=\"mutate\"} ");
  REQUIRE(at != std::string::npos);
  CHECK(std::stod(text.substr(at + 59)) == Approx(2.0023));
}

TEST_CASE("Metrics escapes label values as the text format requires", "[metrics]") {
  Metrics m;
  m.ObserveRequest("mutate", "K\"ind\\\nX", "allowed", 0.001);
  const std::string text = m.Render("v\"1\n");
  CHECK(text.find(R"(kind="other")") != std::string::npos);  // a kind of no table row: KindLabel
  CHECK(text.find(R"(version="v\"1\n")") != std::string::npos);
  // Every sample line is "name{labels} value" or "name value": nothing broke a line.
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    CAPTURE(line);
    CHECK((line.rfind("# ", 0) == 0 || line.rfind("shmguard_", 0) == 0));
  }
}

TEST_CASE("KindLabel keeps the table's kinds and counts every other kind as one", "[metrics]") {
  CHECK(KindLabel("Pod") == "Pod");
  CHECK(KindLabel("JobSet") == "JobSet");
  CHECK(KindLabel("Job") == "Job");  // batch/v1 and Volcano's: one name
  CHECK(KindLabel("") == "");
  CHECK(KindLabel("Compose") == "other");  // a row of the table, but no API kind
  CHECK(KindLabel(std::string(1 << 20, 'K')) == "other");
  CHECK(KindLabel("pod") == "other");
}

}  // namespace
}  // namespace shmguard::server
