// Prometheus's text exposition format (prometheus/docs exposition_formats.md), as the metrics
// ports write it: a metric's HELP and TYPE lines, and label values escaped; and a sample line
// read back, as `shmguard top` reads the agents' ports.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <map>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <utility>

namespace shmguard::http {

// A label value for the text format: backslash, double quote and newline escaped.
std::string PrometheusLabel(const std::string& value);
// The "# HELP" and "# TYPE" lines of a metric.
void PrometheusHeader(std::ostream& out, const char* name, const char* type, const char* help);
// One family of one unlabelled sample: `type` "counter" or "gauge".
void WriteSample(std::ostream& out, const char* name, const char* type, const char* help, uint64_t value);
// A counter with a sample per value of one label: name{label="ok"} N, in the order given.
void WriteCounterBy(std::ostream& out, const char* name, const char* help, const char* label,
                    std::initializer_list<std::pair<const char*, uint64_t>> samples);
// shmguard_build_info{version} 1: every metrics port's last family.
void WriteBuildInfo(std::ostream& out, const std::string& version);

// One sample line, `name{label="value",...} number`, as WriteSample and PrometheusLabel write it:
// label values unescaped; a line without labels has none. nullopt for anything else (a comment,
// a malformed line, a number that does not parse).
struct PrometheusSample {
  std::string name;
  std::map<std::string, std::string> labels;
  double value = 0;
};
std::optional<PrometheusSample> ReadPrometheusSample(std::string_view line);

}  // namespace shmguard::http
