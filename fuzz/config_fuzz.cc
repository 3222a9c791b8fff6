// libFuzzer target: policy loading. Any text either loads or fails with a located error.
#include <cstdlib>
#include <string_view>

#include "io/config/config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto p = shmguard::io::ParsePolicy(text, "fuzz.yaml");
  if (!p && (p.error().where.file != "fuzz.yaml" || p.error().message.empty())) std::abort();
  if (p) (void)shmguard::MatchNamespace(*p, "ml-team");
  return 0;
}
