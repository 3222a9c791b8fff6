// PrometheusLabel and PrometheusHeader; ReadPrometheusSample, which reads back what they write.
#include "http/prometheus_text.h"

#include <algorithm>
#include <cstdlib>

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

namespace {

// Reads `name="value",...}` from `s` at `i` (just after the '{') into `labels`, `i` left on the
// '}'; false when the text is not that.
bool ReadLabels(std::string_view s, size_t& i, std::map<std::string, std::string>& labels) {
  while (i < s.size() && s[i] != '}') {
    size_t eq = s.find('=', i);
    if (eq == std::string_view::npos || eq + 1 >= s.size() || s[eq + 1] != '"') return false;
    std::string name(s.substr(i, eq - i)), value;
    for (i = eq + 2; i < s.size() && s[i] != '"'; ++i) {
      if (s[i] == '\\' && i + 1 < s.size()) {
        ++i;
        value += s[i] == 'n' ? '\n' : s[i];
      } else {
        value += s[i];
      }
    }
    if (i >= s.size()) return false;
    labels[name] = std::move(value);
    ++i;  // the closing quote
    if (i < s.size() && s[i] == ',') ++i;
  }
  return i < s.size();
}

}  // namespace

std::optional<PrometheusSample> ReadPrometheusSample(std::string_view line) {
  if (line.empty() || line.front() == '#') return std::nullopt;
  PrometheusSample sample;
  size_t i = line.find_first_of("{ ");
  if (i == std::string_view::npos || i == 0) return std::nullopt;
  sample.name = std::string(line.substr(0, i));
  if (line[i] == '{') {
    ++i;
    if (!ReadLabels(line, i, sample.labels)) return std::nullopt;
    ++i;  // the '}'
  }
  std::string number(line.substr(std::min(i, line.size())));
  const char* begin = number.c_str();
  while (*begin == ' ') ++begin;
  char* end = nullptr;
  sample.value = std::strtod(begin, &end);
  if (end == begin) return std::nullopt;
  return sample;
}

}  // namespace shmguard::http
