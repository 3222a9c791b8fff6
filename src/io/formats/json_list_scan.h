// ScanList and ContainerEnd: the items of a `kind: ...List` JSON document located in its text
// without parsing it — strings (with their escapes) and brackets only. Each item is parsed on
// its own later, by simdjson, which validates it; so a List never needs a parse of the whole
// file in memory (2.5x its size) before the first item can go to a worker.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace shmguard::io {

struct ListLayout {
  std::string kind, api_version;                 // the list's own, decoded ("" when absent)
  std::vector<std::pair<size_t, size_t>> items;  // [begin, end) of each item in the text
  std::pair<size_t, size_t> items_array{0, 0};   // [begin, end) of the "items" array, brackets included
};

// Fills `out` when the text is one object whose "items" is an array and whose "kind" ends in
// "List"; false otherwise, and for any bracket or string that does not close or "items" twice.
// Only the items' extents are checked: the caller validates the items and the rest.
bool ScanList(std::string_view text, ListLayout& out);

// One past the bracket that closes the object or array opening at `begin` (text[begin] is '{'
// or '['), or npos when a string or bracket does not close or a bracket closes the wrong kind.
size_t ContainerEnd(std::string_view text, size_t begin);

}  // namespace shmguard::io
