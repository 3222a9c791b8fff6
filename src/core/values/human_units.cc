// HumanBytes, FormatPpm and Plural.
#include "core/values/human_units.h"

#include "core/values/int128.h"
#include "core/values/quantity.h"

namespace shmguard {
namespace {

constexpr int64_t kMiB = 1 << 20;

}  // namespace

std::string HumanBytes(int64_t bytes) {
  if (bytes % kMiB == 0 || bytes < kMiB) return FormatBytes(bytes);
  // Tenths of a MiB, rounded half to even as printf("%.1f") rounds an exact binary fraction.
  Int128 scaled = static_cast<Int128>(bytes) * 10;
  auto tenths = static_cast<int64_t>(scaled / kMiB);
  int64_t twice_rest = static_cast<int64_t>(scaled % kMiB) * 2;
  if (twice_rest > kMiB || (twice_rest == kMiB && tenths % 2 == 1)) ++tenths;
  return std::to_string(tenths / 10) + "." + std::to_string(tenths % 10) + "Mi";
}

std::string FormatPpm(int64_t ppm) {
  std::string s = std::to_string(ppm / 1'000'000);
  int64_t frac = ppm % 1'000'000;
  if (frac == 0) return s;
  s += '.';
  for (int64_t unit = 100'000; frac > 0; unit /= 10) {  // six digits at most, trailing zeros dropped
    s += static_cast<char>('0' + frac / unit);
    frac %= unit;
  }
  return s;
}

std::string Plural(int64_t n, const char* word, const char* plural) {
  return std::to_string(n) + " " + (n == 1 ? word : plural ? plural : std::string(word) + "s");
}

}  // namespace shmguard
