// libFuzzer target: Kubernetes quantity parsing. A parsed quantity's canonical form must parse
// again to the same value, and the canonical form of that to itself (a BinarySI quantity of whole
// bytes that are not whole KiB prints as plain bytes, which read back as DecimalSI: "90131562.5Ki"
// -> "92294720000" -> "92294720k", as apimachinery does); counting bytes must never wrap.
#include <cstdlib>
#include <string>
#include <string_view>

#include "core/values/quantity.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto q = shmguard::ParseQuantity(text);
  if (!q) return 0;
  auto again = shmguard::ParseQuantity(shmguard::FormatQuantity(*q));
  if (!again) std::abort();
  const std::string canonical = shmguard::FormatQuantity(*again);
  auto stable = shmguard::ParseQuantity(canonical);
  if (!stable || shmguard::FormatQuantity(*stable) != canonical) std::abort();
  auto v = shmguard::QuantityValue(*q);
  auto w = shmguard::QuantityValue(*again);
  if (v.has_value() != w.has_value() || (v && *v != *w)) std::abort();
  (void)shmguard::ParseBytes(text, "fuzz");
  return 0;
}
