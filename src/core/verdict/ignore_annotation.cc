// ReadIgnore: the checks a shmguard.io/ignore annotation names.
#include "core/verdict/internal/ignore_annotation.h"

#include <string_view>

#include "core/workloads/pod_templates.h"

namespace shmguard::verdict {

std::vector<Check> ReadIgnore(JsonNode value, const std::string& pointer, std::vector<Finding>& findings) {
  std::vector<Check> out;
  if (!value) return out;
  if (!value.IsString()) {
    findings.push_back(Finding(Check::kAnnotationInvalid, pointer)
                           .At(Severity::kWarning)
                           .Val("annotation", kIgnoreAnnotation)
                           .Val("error", "must be a string of check IDs such as \"shm-plan,no-gpus\""));
    return out;
  }
  std::string_view rest = value.String();
  while (!rest.empty()) {
    size_t comma = rest.find(',');
    std::string_view id = rest.substr(0, comma);
    while (!id.empty() && id.front() == ' ') id.remove_prefix(1);
    while (!id.empty() && id.back() == ' ') id.remove_suffix(1);
    if (auto c = FindCheck(id)) {
      out.push_back(*c);
    } else if (!id.empty()) {
      findings.push_back(Finding(Check::kAnnotationInvalid, pointer)
                             .At(Severity::kWarning)
                             .Val("annotation", kIgnoreAnnotation)
                             .Val("error", "\"" + std::string(id) + "\" is not a check ID (docs/checks.md)"));
    }
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
  }
  return out;
}

}  // namespace shmguard::verdict
