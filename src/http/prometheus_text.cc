// PrometheusLabel and PrometheusHeader.
#include "http/prometheus_text.h"

namespace shmguard::http {

std::string PrometheusLabel(const std::string& v) {
  std::string out;
  for (char c : v) {
    if (c == '\\' || c == '"') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out;
}

void PrometheusHeader(std::ostream& out, const char* name, const char* type, const char* help) {
  out << "# HELP " << name << " " << help << "\n# TYPE " << name << " " << type << "\n";
}

void WriteSample(std::ostream& out, const char* name, const char* type, const char* help, uint64_t value) {
  PrometheusHeader(out, name, type, help);
  out << name << " " << value << "\n";
}

void WriteCounterBy(std::ostream& out, const char* name, const char* help, const char* label,
                    std::initializer_list<std::pair<const char*, uint64_t>> samples) {
  PrometheusHeader(out, name, "counter", help);
  for (const auto& [value, n] : samples) out << name << "{" << label << "=\"" << value << "\"} " << n << "\n";
}

void WriteBuildInfo(std::ostream& out, const std::string& version) {
  PrometheusHeader(out, "shmguard_build_info", "gauge", "Always 1; the version is a label.");
  out << "shmguard_build_info{version=\"" << PrometheusLabel(version) << "\"} 1\n";
}

}  // namespace shmguard::http
