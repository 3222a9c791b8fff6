// libFuzzer target: Kubernetes quantity parsing. A parsed quantity's canonical form must parse
// again to the same canonical form, and counting bytes must never wrap.
#include <cstdlib>
#include <string_view>

#include "shmguard/values/quantity.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto q = shmguard::ParseQuantity(text);
  if (!q) return 0;
  std::string canonical = shmguard::FormatQuantity(*q);
  auto again = shmguard::ParseQuantity(canonical);
  if (!again || shmguard::FormatQuantity(*again) != canonical) std::abort();
  auto v = shmguard::QuantityValue(*q);
  auto w = shmguard::QuantityValue(*again);
  if (v.has_value() != w.has_value() || (v && *v != *w)) std::abort();
  (void)shmguard::ParseBytes(text, "fuzz");
  return 0;
}
