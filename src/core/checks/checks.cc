// The lookups over the catalogue of checks (its rows are in check_catalogue.cc) and Finding's
// accessors.
#include "core/checks/checks.h"

#include <algorithm>
#include <array>
#include <stdexcept>

#include "core/checks/internal/check_catalogue.h"

namespace shmguard {

using checks::kChecks;
namespace {

const std::string kEmpty;

// The first name of a space-separated list, taken off `rest`.
std::string_view NextName(std::string_view& rest) {
  const size_t end = std::min(rest.find(' '), rest.size());
  const std::string_view name = rest.substr(0, end);
  rest.remove_prefix(std::min(end + 1, rest.size()));
  return name;
}

// Whether the space-separated list names name.
bool Names(std::string_view list, std::string_view name) {
  while (!list.empty()) {
    if (NextName(list) == name) return true;
  }
  return false;
}

std::vector<std::string_view> Split(std::string_view list) {
  std::vector<std::string_view> out;
  while (!list.empty()) out.push_back(NextName(list));
  return out;
}

// name must be one of the check's numbers (or values): a finding that sets or reads another is a
// bug of the code that makes or words it, caught by the tests that run it.
void Require(Check c, bool number, std::string_view name) {
  const CheckInfo& info = InfoOf(c);
  if (number ? info.CarriesNumber(name) : info.CarriesValue(name)) return;
  throw std::logic_error("check " + std::string(info.id) + " carries no " + (number ? "number" : "value") + " \"" +
                         std::string(name) + "\" (its row in src/core/checks/check_catalogue.cc)");
}

}  // namespace

bool CheckInfo::CarriesNumber(std::string_view name) const { return Names(numbers, name); }
bool CheckInfo::CarriesValue(std::string_view name) const { return Names(values, name); }
std::vector<std::string_view> CheckInfo::NumberNames() const { return Split(numbers); }
std::vector<std::string_view> CheckInfo::ValueNames() const { return Split(values); }

const char* SeverityName(Severity s) {
  switch (s) {
    case Severity::kInfo: return "info";
    case Severity::kWarning: return "warning";
    case Severity::kError: return "error";
  }
  return "error";
}

std::optional<Severity> ParseSeverity(std::string_view name) { return FindByName(kSeverities, SeverityName, name); }

std::span<const CheckInfo> Catalogue() { return kChecks; }

const CheckInfo& InfoOf(Check c) { return kChecks[static_cast<size_t>(c)]; }

std::optional<Check> FindCheck(std::string_view id) {
  for (const auto& info : kChecks) {
    if (info.id == id) return info.check;
  }
  return std::nullopt;
}

Finding::Finding(Check c, std::string pointer_)
    : check(c), severity(InfoOf(c).severity), pointer(std::move(pointer_)) {}

Finding& Finding::Num(std::string_view name, int64_t v) {
  Require(check, true, name);
  if (numbers.empty()) numbers.reserve(4);  // most findings carry one to four
  numbers.emplace_back(name, v);
  return *this;
}

Finding& Finding::Val(std::string_view name, std::string v) {
  Require(check, false, name);
  if (values.empty()) values.reserve(2);
  values.emplace_back(name, std::move(v));
  return *this;
}

Finding& Finding::At(Severity s) {
  severity = s;
  return *this;
}

int64_t Finding::Number(std::string_view name) const {
  Require(check, true, name);
  for (const auto& [n, v] : numbers) {
    if (n == name) return v;
  }
  return 0;
}

bool Finding::HasNumber(std::string_view name) const {
  Require(check, true, name);
  for (const auto& [n, v] : numbers) {
    if (n == name) return true;
  }
  return false;
}

const std::string& Finding::Value(std::string_view name) const {
  Require(check, false, name);
  for (const auto& [n, v] : values) {
    if (n == name) return v;
  }
  return kEmpty;
}

const char* VerdictName(Verdict v) {
  switch (v) {
    case Verdict::kSkip: return "skip";
    case Verdict::kOk: return "ok";
    case Verdict::kPatch: return "patch";
    case Verdict::kDeny: return "deny";
  }
  return "skip";
}

}  // namespace shmguard
