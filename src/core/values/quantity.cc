// Kubernetes quantity parsing and canonical printing, following apimachinery's
// pkg/api/resource quantity.go (ParseQuantity, CanonicalizeBytes) and suffix.go step by step,
// including its fast path, which decides when the input text is kept as the canonical form.
#include "core/values/quantity.h"

#include <algorithm>
#include <array>
#include <iterator>
#include <limits>

#include "core/values/internal/decimal.h"

namespace shmguard {

using values::CompareAbs;
using values::Int128ToString;
using values::Pow10;
namespace {

using i128 = Int128;
constexpr int kNanoScale = -9;        // apimachinery keeps values down to 1n
constexpr int kMaxInt64Factors = 18;  // quantity.go maxInt64Factors
constexpr int64_t kMaxInt64 = std::numeric_limits<int64_t>::max();

const i128 kMantissaLimit = Pow10(36);  // parsing limit for significant digits
// A parsed quantity keeps fewer digits, so that its canonical form (up to ×100 to reach an
// exponent that is a multiple of 3) still parses: the round trip must always hold.
const i128 kParsedMantissaLimit = Pow10(34);
// Past this decimal exponent a value is above 2^63-1 (refused by QuantityValue), or below 1n
// (rounded up to 1n) all the same: both paths of ParseQuantity keep an exponent within it, so
// that a canonical form parses back to itself.
constexpr int64_t kExponentBound = 1000;

bool IsDigit(char c) { return c >= '0' && c <= '9'; }
bool IsSuffixChar(char c) { return std::string_view("eEinumkKMGTP").find(c) != std::string_view::npos; }

struct QuantityParts {
  bool positive = true;
  std::string_view value, num, denom, suffix;
};

// quantity.go parseQuantityString: splits sign, numerator, denominator and suffix.
bool SplitQuantity(std::string_view str, QuantityParts& p) {
  size_t pos = 0, end = str.size();
  if (pos < end && (str[0] == '-' || str[0] == '+')) {
    p.positive = str[0] == '+';
    ++pos;
  }
  while (true) {  // strip leading zeros
    if (pos >= end) {
      p.num = p.value = "0";
      return true;
    }
    if (str[pos] != '0') break;
    ++pos;
  }
  size_t i = pos;
  while (i < end && IsDigit(str[i])) ++i;
  p.num = str.substr(pos, i - pos);
  if (i >= end) {
    p.value = str;
    return true;
  }
  pos = i;
  if (p.num.empty()) p.num = "0";
  if (str[pos] == '.') {
    ++pos;
    i = pos;
    while (i < end && IsDigit(str[i])) ++i;
    p.denom = str.substr(pos, i - pos);
    if (i >= end) {
      p.value = str;
      return true;
    }
    pos = i;
  }
  p.value = str.substr(0, pos);
  size_t suffix_start = pos;
  i = pos;
  while (i < end && IsSuffixChar(str[i])) ++i;
  if (i >= end) {
    p.suffix = str.substr(suffix_start);
    return true;
  }
  pos = i;
  if (str[pos] == '-' || str[pos] == '+') ++pos;
  for (i = pos; i < end; ++i) {
    if (!IsDigit(str[i])) return false;  // ErrFormatWrong
  }
  p.suffix = str.substr(suffix_start);
  return true;
}

struct SuffixMeaning {
  int base = 10;
  int exponent = 0;
  QuantityFormat format = QuantityFormat::kDecimalSI;
};

struct SuffixEntry {
  std::string_view text;
  int exponent;
};
constexpr std::array<SuffixEntry, 10> kDecimalSuffixes = {{
    {"n", -9},
    {"u", -6},
    {"m", -3},
    {"", 0},
    {"k", 3},
    {"M", 6},
    {"G", 9},
    {"T", 12},
    {"P", 15},
    {"E", 18},
}};
constexpr std::array<SuffixEntry, 6> kBinarySuffixes = {{
    {"Ki", 10},
    {"Mi", 20},
    {"Gi", 30},
    {"Ti", 40},
    {"Pi", 50},
    {"Ei", 60},
}};

// suffix.go interpret.
bool InterpretSuffix(std::string_view s, SuffixMeaning& out) {
  for (const auto& e : kDecimalSuffixes) {
    if (e.text == s) {
      out = {10, e.exponent, QuantityFormat::kDecimalSI};
      return true;
    }
  }
  for (const auto& e : kBinarySuffixes) {
    if (e.text == s) {
      out = {2, e.exponent, QuantityFormat::kBinarySI};
      return true;
    }
  }
  if (s.size() > 1 && (s[0] == 'e' || s[0] == 'E')) {
    // strconv.ParseInt(s[1:], 10, 64), then int32(): a signed decimal integer.
    std::string_view digits = s.substr(1);
    bool negative = false;
    if (!digits.empty() && (digits[0] == '+' || digits[0] == '-')) {
      negative = digits[0] == '-';
      digits.remove_prefix(1);
    }
    if (digits.empty() || digits.size() > 18) return false;
    int64_t v = 0;
    for (char c : digits) {
      if (!IsDigit(c)) return false;
      v = v * 10 + (c - '0');
    }
    out = {10, static_cast<int32_t>(negative ? -v : v), QuantityFormat::kDecimalExponent};
    return true;
  }
  return false;
}

// Parses "[+-]digits[.digits]" (inf.Dec SetString) into m × 10^e, with trailing zeros moved
// into e so that only significant digits count against the mantissa limit.
bool ParseDecimal(std::string_view s, i128& m, int& e) {
  bool negative = false;
  if (!s.empty() && (s[0] == '+' || s[0] == '-')) {
    negative = s[0] == '-';
    s.remove_prefix(1);
  }
  m = 0;
  e = 0;
  int zeros = 0;  // zero digits after the last non-zero one, not yet in m
  bool any_digit = false, seen_dot = false;
  for (char c : s) {
    if (c == '.' && !seen_dot) {
      seen_dot = true;
      continue;
    }
    if (!IsDigit(c)) return false;
    any_digit = true;
    if (seen_dot) --e;
    if (c == '0') {
      if (m != 0) ++zeros;
      continue;
    }
    for (int i = 0; i <= zeros; ++i) {
      if (m >= kMantissaLimit) return false;  // too many significant digits for shmguard
      m *= 10;
    }
    m += c - '0';
    zeros = 0;
  }
  e += zeros;
  if (negative) m = -m;
  return any_digit;
}

Error BadQuantity(std::string_view text, std::string_view why) {
  // Appended piece by piece: GCC 12 at -O3 gives a false -Wrestrict warning for
  // "literal" + std::string(...) here.
  std::string message = "\"";
  message.append(text).append("\" is not a valid quantity: ").append(why);
  return MakeError(Code::kInvalidInput, message);
}

}  // namespace

Result<Quantity> ParseQuantity(std::string_view str) {
  constexpr std::string_view kGrammar =
      "expected a number with an optional suffix Ki|Mi|Gi|Ti|Pi|Ei, m|k|M|G|T|P|E or e<n>";
  if (str.empty()) return BadQuantity(str, "empty");
  if (str == "0") return Quantity{0, 0, QuantityFormat::kDecimalSI, "0"};

  QuantityParts p;
  if (!SplitQuantity(str, p)) return BadQuantity(str, kGrammar);
  SuffixMeaning sfx;
  if (!InterpretSuffix(p.suffix, sfx)) {
    return BadQuantity(str, "unknown suffix \"" + std::string(p.suffix) + "\"; " + std::string(kGrammar));
  }

  // Fast path (quantity.go): small integers in int64, possibly keeping the input text. The scale
  // is int64: an exponent at the int32 edge ("1e-2147483648") minus the fraction's digits.
  int precision = 0;
  int64_t scale = 0;
  int64_t multiplier = 1;
  const int num_digits = static_cast<int>(p.num.size() + p.denom.size());
  if (sfx.format == QuantityFormat::kBinarySI) {
    if (sfx.exponent >= 0 && p.denom.empty()) {
      multiplier = int64_t{1} << sfx.exponent;
      precision = 15 - static_cast<int>(p.num.size()) - static_cast<int>(static_cast<float>(sfx.exponent) * 3 / 10) - 1;
    } else {
      precision = -1;
    }
  } else {
    scale = sfx.exponent;
    precision = kMaxInt64Factors - num_digits;
  }
  if (precision >= 0) {
    scale -= static_cast<int64_t>(p.denom.size());
    // Up to 18 digits' zeros may still move into the exponent: past kExponentBound - 18 the
    // exact path clamps it, as it would the canonical form.
    if (scale >= kNanoScale && scale <= kExponentBound - kMaxInt64Factors) {
      std::string shifted = std::string(p.num) + std::string(p.denom);
      int64_t value = 0;
      for (char c : shifted) value = value * 10 + (c - '0');  // <= 18 digits: fits
      i128 result = static_cast<i128>(value) * multiplier;
      if (result <= kMaxInt64) {
        Quantity q{p.positive ? result : -result, static_cast<int>(scale), sfx.format, {}};
        bool canonical = sfx.format == QuantityFormat::kBinarySI
                             ? (sfx.exponent % 10 == 0 && (value & 0x07) != 0)
                             : (scale % 3 == 0 && !shifted.ends_with("000") && shifted[0] != '0');
        if (canonical) q.original = std::string(str);
        return q;
      }
    }
  }

  // Slow path (inf.Dec in apimachinery): exact decimal arithmetic. The exponent is summed in
  // int64 (the suffix's may be at the int32 edge) and kept within ±kExponentBound, past which a
  // value is above 2^63-1 (refused by QuantityValue) or rounds up to 1n all the same.
  i128 m = 0;
  int digits_exponent = 0;
  if (!ParseDecimal(p.value, m, digits_exponent)) {
    return BadQuantity(str, m == 0 ? std::string(kGrammar) : "too many significant digits");
  }
  int64_t e = digits_exponent;
  if (sfx.base == 10) {
    // Zeros move into the exponent before it is clamped, as FormatQuantity moves them: a
    // canonical form past the bound then clamps to the same value again.
    while (m != 0 && m % 10 == 0) {
      m /= 10;
      ++e;
    }
    e = std::clamp<int64_t>(e + sfx.exponent, -kExponentBound, kExponentBound);
  } else {
    for (int i = 0; i < sfx.exponent; ++i) {
      if (m >= kMantissaLimit || m <= -kMantissaLimit) {
        return BadQuantity(str, "too many significant digits");
      }
      m *= 2;
    }
  }
  bool negative = m < 0;
  if (negative) m = -m;
  if (m != 0 && e < kNanoScale) {  // round up, away from zero, to 1n
    int drop = kNanoScale - e;
    if (drop > 37) {
      m = 1;
    } else {
      i128 div = Pow10(drop);
      i128 rest = m % div;
      m = m / div + (rest != 0 ? 1 : 0);
    }
    e = kNanoScale;
  }
  QuantityFormat format = sfx.format;
  if (format == QuantityFormat::kBinarySI && CompareAbs(m, e, kMaxInt64) > 0) {
    m = kMaxInt64;  // apimachinery caps BinarySI silently: "8Ei" is 2^63-1
    e = 0;
  }
  if (format == QuantityFormat::kBinarySI && m != 0 && CompareAbs(m, e, 1) < 0) {
    format = QuantityFormat::kDecimalSI;
  }
  if (m >= kParsedMantissaLimit) return BadQuantity(str, "too many significant digits");
  return Quantity{negative ? -m : m, static_cast<int>(e), format, {}};
}

std::string FormatQuantity(const Quantity& q) {
  if (!q.original.empty()) return q.original;
  if (q.mantissa == 0) return "0";
  QuantityFormat format = q.format;
  i128 whole = 0;
  if (format == QuantityFormat::kBinarySI) {
    bool integral = q.exponent >= 0;
    if (!integral) {
      i128 div = Pow10(-q.exponent);
      integral = q.mantissa % div == 0;
      whole = q.mantissa / div;
    } else {
      whole = q.mantissa * Pow10(q.exponent);  // BinarySI values are capped at 2^63-1
    }
    if (CompareAbs(q.mantissa, q.exponent, 1024) < 0 || !integral) {
      format = QuantityFormat::kDecimalSI;
    }
  }
  if (format == QuantityFormat::kBinarySI) {
    int times = 0;
    i128 a = whole < 0 ? -whole : whole;
    while (a >= 1024 && a % 1024 == 0) {
      a /= 1024;
      ++times;
    }
    std::string number = Int128ToString(whole < 0 ? -a : a);
    return times == 0 ? number : number + std::string(kBinarySuffixes[times - 1].text);
  }
  // AsCanonicalBytes: move factors of ten into the exponent, then make it a multiple of 3.
  i128 m = q.mantissa < 0 ? -q.mantissa : q.mantissa;
  int e = q.exponent;
  while (m >= 10 && m % 10 == 0) {
    m /= 10;
    ++e;
  }
  while (e % 3 != 0) {
    m *= 10;
    --e;
  }
  std::string number = Int128ToString(q.mantissa < 0 ? -m : m);
  if (format == QuantityFormat::kDecimalSI) {
    for (const auto& s : kDecimalSuffixes) {
      if (s.exponent == e) return number + std::string(s.text);
    }
  }
  return e == 0 ? number : number + "e" + std::to_string(e);
}

Result<int64_t> QuantityValue(const Quantity& q) {
  i128 m = q.mantissa < 0 ? -q.mantissa : q.mantissa;
  if (m == 0) return int64_t{0};  // "e119" is zero whatever its exponent (found by fuzzing)
  i128 v = 0;
  if (q.exponent >= 0) {
    if (CompareAbs(m, q.exponent, kMaxInt64) > 0) {
      return MakeError(Code::kInvalidInput, FormatQuantity(q) + " is larger than 2^63-1 and cannot be counted");
    }
    v = m * Pow10(q.exponent);
  } else {
    if (-q.exponent > 37) {
      v = m == 0 ? 0 : 1;
    } else {
      i128 div = Pow10(-q.exponent);
      v = m / div + (m % div != 0 ? 1 : 0);  // Value() rounds up, away from zero
    }
    if (v > kMaxInt64) {
      return MakeError(Code::kInvalidInput, FormatQuantity(q) + " is larger than 2^63-1 and cannot be counted");
    }
  }
  return static_cast<int64_t>(q.mantissa < 0 ? -v : v);
}

Result<int64_t> ParseBytes(std::string_view text, std::string_view what) {
  auto q = ParseQuantity(text);
  if (!q) return MakeError(Code::kInvalidInput, q.error().message, Location::Field(std::string(what)));
  auto v = QuantityValue(*q);
  if (!v) return MakeError(Code::kInvalidInput, v.error().message, Location::Field(std::string(what)));
  if (*v < 0)
    return MakeError(Code::kInvalidInput, "\"" + std::string(text) + "\" must not be negative",
                     Location::Field(std::string(what)));
  return *v;
}

std::string FormatBytes(int64_t bytes) { return FormatQuantity(Quantity{bytes, 0, QuantityFormat::kBinarySI, {}}); }

}  // namespace shmguard
