// Decimal arithmetic on 128-bit integers for quantities (quantity.cc): powers of ten, a
// comparison of m × 10^e with an integer that never overflows, and printing. Internal to the core.
#pragma once

#include <string>

#include "core/values/int128.h"

namespace shmguard::values {

// 10^n. REQUIRES: 0 <= n <= 37 (10^38 overflows).
Int128 Pow10(int n);
// Compares |m × 10^e| with v (v >= 0): -1, 0 or 1, for any exponent.
int CompareAbs(Int128 m, int e, Int128 v);
// v in decimal, "-" for a negative one, all 128 bits of it.
std::string Int128ToString(Int128 v);

}  // namespace shmguard::values
