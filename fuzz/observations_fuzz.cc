// libFuzzer target: the ShmProfiles of --observations. Any text either loads or fails with an
// error naming the file and line; a learned size is never negative or wrapped.
#include <cstdlib>
#include <string_view>

#include "io/config/observations.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto index = shmguard::io::ParseObservations(text, "fuzz.yaml");
  if (!index && (index.error().where.file != "fuzz.yaml" || index.error().message.empty())) std::abort();
  return 0;
}
