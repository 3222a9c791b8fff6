// libFuzzer target: the document splitter over line endings. A text with LF line endings and the
// same text with CR-only ones (classic Mac OS, some Windows tools) must split into the same
// documents, at the same lines, parsing to the same objects or both failing: YAML counts a lone
// CR as a line break (YAML 1.2 §5.4), and kubectl reads such a file.
#include <cstdlib>
#include <string>
#include <vector>

#include "io/manifests.h"

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
  std::string lf;
  for (size_t i = 0; i < size; ++i) {
    if (data[i] != '\r') lf += static_cast<char>(data[i]);
  }
  std::string cr = lf;
  for (char& c : cr) {
    if (c == '\n') c = '\r';
  }
  const auto a = Documents(lf), b = Documents(cr);
  if (a.size() != b.size()) std::abort();
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].line != b[i].line || a[i].failed != b[i].failed || a[i].object != b[i].object) std::abort();
  }
  return 0;
}
