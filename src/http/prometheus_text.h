// Prometheus's text exposition format (prometheus/docs exposition_formats.md), as the metrics
// ports write it: a metric's HELP and TYPE lines, and label values escaped.
#pragma once

#include <sstream>
#include <string>

namespace shmguard::http {

// A label value for the text format: backslash, double quote and newline escaped.
std::string PrometheusLabel(const std::string& value);
// The "# HELP" and "# TYPE" lines of a metric.
void PrometheusHeader(std::ostringstream& out, const char* name, const char* type, const char* help);

}  // namespace shmguard::http
