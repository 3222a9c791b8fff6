// Version: the one place SHMGUARD_VERSION (a definition of this file's alone) is read.
#include "io/words/version.h"

namespace shmguard::io {

const char* Version() { return SHMGUARD_VERSION; }

}  // namespace shmguard::io
