// Pow10, CompareAbs and Int128ToString.
#include "core/values/internal/decimal.h"

#include <cstdint>
#include <iterator>
#include <limits>

namespace shmguard::values {

using i128 = Int128;

i128 Pow10(int n) {
  i128 r = 1;
  for (int i = 0; i < n; ++i) r *= 10;
  return r;
}

// Compares |m × 10^e| with v (v >= 0): -1, 0 or 1.
int CompareAbs(i128 m, int e, i128 v) {
  if (m < 0) m = -m;
  if (e >= 0) {
    for (int i = 0; i < e; ++i) {
      if (m > v) return 1;
      m *= 10;
    }
    return m < v ? -1 : (m > v ? 1 : 0);
  }
  // Divide rather than scale v up: v × 10^k overflows int128 for v near 2^63 (found by fuzzing).
  if (-e > 37) return m == 0 ? (v == 0 ? 0 : -1) : (v == 0 ? 1 : -1);  // 0 < |value| < 1
  i128 div = Pow10(-e);
  i128 whole = m / div, rest = m % div;
  if (whole != v) return whole < v ? -1 : 1;
  return rest > 0 ? 1 : 0;
}

std::string Int128ToString(i128 v) {
  if (v >= std::numeric_limits<int64_t>::min() && v <= std::numeric_limits<int64_t>::max()) {
    return std::to_string(static_cast<int64_t>(v));  // every quantity this program prints
  }
  bool negative = v < 0;
  UInt128 u = negative ? -static_cast<UInt128>(v) : static_cast<UInt128>(v);
  char digits[40];  // 2^127 has 39
  char* at = std::end(digits);
  for (; u > 0; u /= 10) *--at = static_cast<char>('0' + static_cast<int>(u % 10));
  if (negative) *--at = '-';
  return std::string(at, std::end(digits));
}

}  // namespace shmguard::values
