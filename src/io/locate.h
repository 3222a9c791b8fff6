// Where a JSON pointer lands in a manifest's text: the line and column a finding is reported
// at. YAML and JSON alike (a JSON document is YAML flow style, and libyaml marks both).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace shmguard::io {

struct TextPosition {
  int line = 0, column = 0;  // 1-based; 0 when the text does not parse
};

// The position of each of `pointers` (RFC 6901) in the first document of `text`: a mapping
// member at its key, a list item at its first character; for a pointer to a missing field, the
// nearest ancestor that is written ("" is the document itself). `first_line` and `first_column`
// say where `text` starts in its file, so positions are the file's.
std::vector<TextPosition> LocatePointers(std::string_view text, const std::vector<std::string>& pointers,
                                         int first_line = 1, int first_column = 1);

}  // namespace shmguard::io
