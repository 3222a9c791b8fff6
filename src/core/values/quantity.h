// Kubernetes resource quantities ("1.5Gi", "500m", "3e9"), parsed and printed exactly as
// k8s.io/apimachinery pkg/api/resource does (quantity.go, suffix.go; docs/sources.md §7).
// Values are exact decimals (no floating point); byte counts are exact int64 with overflow checks.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "core/values/int128.h"
#include "core/values/result.h"

namespace shmguard {

// The suffix family a quantity was written in; it is kept when the quantity is printed.
enum class QuantityFormat { kDecimalSI, kBinarySI, kDecimalExponent };

// value = mantissa × 10^exponent, rounded (away from zero) to nano, as apimachinery keeps it.
struct Quantity {
  Int128 mantissa = 0;
  int exponent = 0;
  QuantityFormat format = QuantityFormat::kDecimalSI;
  // apimachinery reuses the input text when it is already canonical ("1Gi", "+1Gi", "5.");
  // empty otherwise.
  std::string original;
};

// Parses a quantity with the grammar of quantity.go: <sign><digits>[.<digits>]<suffix>, where
// the suffix is Ki|Mi|Gi|Ti|Pi|Ei, n|u|m||k|M|G|T|P|E, or e/E followed by a signed integer.
// Leading/trailing spaces are errors (" 1Gi"), as are "1K", "1KiB", "64MB", "1Gi1" and "".
// Quirks kept on purpose: a bare suffix ("Gi") is 0; a BinarySI value is capped at 2^63-1
// ("8Ei"); values finer than 1n are rounded up to 1n.
// Fails with kInvalidInput naming the text; also when the mantissa has more than ~36
// significant digits (beyond what shmguard can represent; such values overflow bytes anyway).
Result<Quantity> ParseQuantity(std::string_view text);

// The canonical form, exactly as Quantity.String(): "1.5Gi" -> "1536Mi", "1.1Ki" -> "1126400m",
// "1000000" -> "1M", "3.3e9" -> "3300e6", "0.1m" -> "100u", zero -> "0".
std::string FormatQuantity(const Quantity& q);

// The value rounded up to a whole unit (Quantity.Value(): "100m" -> 1, "1.5" -> 2), but never
// wrapped: fails with kInvalidInput when it does not fit in int64 ("1e19").
Result<int64_t> QuantityValue(const Quantity& q);

// ParseQuantity then QuantityValue, for byte counts: also fails on negative values.
// `what` names the field, as the error's `where` ("annotation shmguard.io/batch-bytes").
Result<int64_t> ParseBytes(std::string_view text, std::string_view what);

// A byte count printed as Kubernetes prints a BinarySI quantity of that many bytes:
// 1073741824 -> "1Gi", 1610612736 -> "1536Mi", 1000 -> "1k" (below 1Ki Kubernetes prints
// DecimalSI), 0 -> "0".
// REQUIRES: bytes >= 0.
std::string FormatBytes(int64_t bytes);

}  // namespace shmguard
