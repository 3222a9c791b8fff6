// libFuzzer target: what the node agent reads of /proc for leaked segments, as any bytes: a
// process's maps (every file it maps has an inode) and its cgroup (the container of a pod is one
// path component, never a path). Neither may crash or read past its input.
#include <cstdlib>
#include <string_view>

#include "core/node/leaked_segments.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  for (const shmguard::FileId& id : shmguard::MappedFiles(text)) {
    if (id.ino == 0) std::abort();
  }
  // The UID as the API gives it, and one taken from the input's first line (any text).
  const std::string_view first = text.substr(0, text.find('\n'));
  for (std::string_view uid : {std::string_view("8a1f2c3d-0000-4b5e-9c7d-112233445566"), first}) {
    if (auto container = shmguard::PodContainerOf(text, uid); container && container->find('/') != std::string::npos) {
      std::abort();
    }
  }
  return 0;
}
