// shmguard's version (CMakeLists.txt's project VERSION), compiled into one file only, so that a
// new version rebuilds that file and relinks, not every file that prints it.
#pragma once

namespace shmguard::io {

// "0.2.0": what --version prints, shmguard_build_info's label, SARIF's driver version.
const char* Version();

}  // namespace shmguard::io
