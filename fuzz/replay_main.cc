// A libFuzzer target without libFuzzer: runs its LLVMFuzzerTestOneInput on the empty input, then
// once on each file named. The plain and ASan builds link every target in fuzz/ with it, so a
// target that no longer compiles fails the build at once, and CTest replays the inputs a fuzzer
// once crashed on (tests/testdata/fuzz-regressions/<target>-*) under the suite's own sanitizers.
// A target reports a broken invariant by aborting, which fails the test.
#include <cstddef>
#include <cstdint>
#include <fstream>
#include <iostream>
#include <iterator>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

int main(int argc, char** argv) {
  LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(""), 0);
  for (int i = 1; i < argc; ++i) {
    std::ifstream in(argv[i], std::ios::binary);
    if (!in) {
      std::cerr << argv[i] << ": cannot read\n";
      return 1;
    }
    const std::string data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::cerr << argv[i] << " (" << data.size() << " bytes)\n";  // named before it runs
    LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(data.data()), data.size());
  }
  return 0;
}
