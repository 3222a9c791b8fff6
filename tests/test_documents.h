// Documents read from files for a test, as the audit reads them (the implementation is in
// test_util.cc). Apart from test_util.h, so that only the tests that read files include io's
// manifests.
#pragma once

#include <string>
#include <vector>

#include "io/files/manifests.h"

namespace shmguard::test {

// Every document of the files under `paths` (directories walked, as the audit walks them), each
// parsed; fails the test on a path that cannot be read.
std::vector<io::Document> ReadDocuments(const std::vector<std::string>& paths);

}  // namespace shmguard::test
