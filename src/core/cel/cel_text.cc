// CEL text: literals and the expressions policy mode builds from the webhook's arithmetic.
#include "core/cel/internal/cel_text.h"

#include <utility>

#include "core/values/glob.h"

namespace shmguard::cel {

// A CEL string literal holding `s` exactly: quotes and backslashes escaped, and every byte that
// is not printable ASCII as \xHH, so no value can end the literal or hold a raw newline.
std::string CelString(std::string_view s) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out = "'";
  for (char c : s) {
    const auto b = static_cast<unsigned char>(c);
    if (c == '\\' || c == '\'') {
      out += '\\';
      out += c;
    } else if (b < 0x20 || b >= 0x7F) {
      out += "\\x";
      out += kHex[b >> 4];
      out += kHex[b & 0xF];
    } else {
      out += c;
    }
  }
  return out + "'";
}

std::string CelList(const std::vector<std::string>& items) {
  std::string out = "[";
  for (const auto& s : items) out += (out.size() > 1 ? ", " : "") + CelString(s);
  return out + "]";
}

std::string CelBool(bool b) { return b ? "true" : "false"; }

std::string CelInt(int64_t n) { return std::to_string(n); }

// A list of CEL expressions.
std::string CelArray(const std::vector<std::string>& items) {
  std::string out = "[";
  for (const auto& s : items) out += (out.size() > 1 ? ", " : "") + s;
  return out + "]";
}

// One anchored alternation of `globs` as RE2 ("" when there are none); an error naming the glob
// that GlobRegex refuses.
Result<std::string> RegexOf(const std::vector<std::string>& globs) {
  std::string out;
  for (const auto& g : globs) {
    auto r = GlobRegex(g);
    if (!r) return r.error();
    out += (out.empty() ? "" : "|") + r->substr(1, r->size() - 2);
  }
  return out.empty() ? std::string() : "^(?:" + out + ")$";
}

// A quantity field as whole bytes, rounded up as the webhook's ReadQuantityField rounds.
// (Parsing it again costs less CEL than binding it in a one-item list.)
std::string Bytes(const std::string& field) {
  const std::string q = "quantity(string(" + field + "))";
  return "(" + q + ".isInteger() ? " + q + ".asInteger() : int(" + q + ".asApproximateFloat()) + 1)";
}

// The first string value of env NAME in app container `i` ('' when none), as ReadLaunchEnv reads
// it; NAME is one of LaunchEnvNames(), the only variables variables.launchEnv keeps of each app
// container's env, so that each lookup goes over a few entries at most.
std::string Env(const char* name) {
  return std::string("(size(variables.launchEnv[i]) == 0 ? '' : (variables.launchEnv[i].filter(e, e.name == '") + name +
         "').map(e, e.value) + [''])[0])";
}

// The value of `--flag=V` or `--flag V` in launch line `l` (a container's command and args,
// variables.launchLines), unquoted; '' when absent (launch_facts.cc FindFlag). `flags` are
// alternatives of the same length.
std::string Flag(const std::string& alternatives, size_t length) {
  return "[l.find('(^|\\\\s)(" + alternatives + ")(=\\\\S*|\\\\s+\\\\S+)').trim()].map(m, m == '' ? '' : m.substring(" +
         std::to_string(length) +
         ").trim()).map(v, (v.startsWith('=') ? v.substring(1) : v).replace('\"', '').replace(\"'\", ''))[0]";
}

// A count annotation's check: present and not a whole number within [min, max].
std::string CountBad(const char* key, int64_t min, int64_t max) {
  const std::string a = std::string("variables.anns['") + key + "']";
  return std::string("('") + key + "' in variables.anns && !(" + a + ".matches('^[0-9]{1,18}$') && int(" + a +
         ") >= " + std::to_string(min) + " && int(" + a + ") <= " + std::to_string(max) + "))";
}

// A count annotation's value, 0 when it is absent or not a whole number (field_values.cc
// ReadCountAnnotation).
std::string CountAnnotation(const char* key) {
  const std::string a = std::string("variables.anns[?'") + key + "'].orValue('0')";
  return "(" + a + ".matches('^[0-9]{1,18}$') ? int(" + a + ") : 0)";
}

// sum × safety rounded up, then up to a whole MiB (shm_plan.cc WithSafety), in int64 without
// overflow: sum = q×10^6 + r, so ⌈sum×s/10^6⌉ = q×s + ⌈r×s/10^6⌉.
std::string Safe(const std::string& sum) {
  return "(((" + sum + ") / 1000000 * variables.safetyPpm + ((" + sum +
         ") % 1000000 * variables.safetyPpm + 999999) / 1000000 + 1048575) / 1048576 * 1048576)";
}

// ⌊limit × ppm / 10^6⌋ without overflow (memory_limit.cc, shm_estimate.cc Cap).
std::string ShmPath() { return "m.mountPath.matches('^/dev/shm/*$')"; }

std::string Share(const std::string& limit, const std::string& ppm) {
  return "((" + limit + ") / 1000000 * " + ppm + " + (" + limit + ") % 1000000 * " + ppm + " / 1000000)";
}

// A positive byte count as the canonical quantity FormatBytes prints (quantity.cc
// FormatQuantity): the largest power-of-1024 suffix that divides it, else DecimalSI's.
std::string QuantityText(const std::string& n) {
  const std::pair<const char*, const char*> units[] = {
      {"1152921504606846976", "Ei"}, {"1125899906842624", "Pi"}, {"1099511627776", "Ti"},
      {"1073741824", "Gi"},          {"1048576", "Mi"},          {"1024", "Ki"},
      {"1000000000000000000", "E"},  {"1000000000000000", "P"},  {"1000000000000", "T"},
      {"1000000000", "G"},           {"1000000", "M"},           {"1000", "k"}};
  std::string out;
  for (const auto& [unit, suffix] : units) {
    out += n + " % " + unit + " == 0 ? string(" + n + " / " + unit + ") + '" + suffix + "' : ";
  }
  return "(" + out + "string(" + n + "))";
}

}  // namespace shmguard::cel
