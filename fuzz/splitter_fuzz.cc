// libFuzzer target: the document splitter over line endings. A text with LF line endings and the
// same text with CR-only ones (classic Mac OS, some Windows tools) must split into the same
// documents, at the same lines, parsing to the same objects or both failing: YAML counts a lone
// CR as a line break (YAML 1.2 §5.4), and kubectl reads such a file.
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "io/files/manifests.h"

namespace {

struct Split {
  int line;
  bool failed;
  std::string object;
};

std::vector<Split> Documents(const std::string& text) {
  std::vector<Split> out;
  shmguard::io::ForEachManifest(text, "fuzz.yaml", shmguard::io::JsonLists::kWhole, [&](shmguard::io::Document&& d) {
    shmguard::io::ParseDocument(d);
    out.push_back({d.line, d.error.has_value(), d.object ? d.object->ToJson().dump() : ""});
  });
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // A UTF-16 byte order mark makes libyaml read the text as UTF-16, where bytes 0x0A and 0x0D
  // are halves of characters, not line endings.
  if (size >= 2 && ((data[0] == 0xFE && data[1] == 0xFF) || (data[0] == 0xFF && data[1] == 0xFE))) return 0;
  std::string lf;
  for (size_t i = 0; i < size; ++i) {
    if (data[i] != '\r') lf += static_cast<char>(data[i]);
  }
  std::string cr = lf;
  for (char& c : cr) {
    if (c == '\n') c = '\r';
  }
  const auto a = Documents(lf), b = Documents(cr);
  bool same = a.size() == b.size();
  for (size_t i = 0; same && i < a.size(); ++i) {
    same = a[i].line == b[i].line && a[i].failed == b[i].failed && a[i].object == b[i].object;
  }
  if (!same) {  // what differed, for the regression test
    for (const auto* side : {&a, &b}) {
      std::fprintf(stderr, side == &a ? "LF:\n" : "CR:\n");
      for (const auto& d : *side) std::fprintf(stderr, "  line %d failed %d %s\n", d.line, d.failed, d.object.c_str());
    }
    std::abort();
  }
  return 0;
}
