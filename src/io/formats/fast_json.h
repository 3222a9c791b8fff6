// JSON parsing with simdjson (its DOM API, which picks AVX2/AVX-512 kernels at run time; the
// header-only On-Demand API builds to the scalar fallback without -march): viewed in place
// through JsonNode (the server), or as an owned Tape with each value's line and column (the
// audit and every other reader of files). nlohmann's own parser ran at ~60 MB/s and was most of
// a request's time (bench/README.md).
#pragma once

#include <string>
#include <string_view>

#include "core/values/json_node.h"
#include "core/values/result.h"
#include "io/formats/json_list_scan.h"
#include "io/formats/tape.h"

namespace shmguard::io {

inline constexpr int kMaxJsonNesting = 128;  // Kubernetes objects nest ~20 deep

// simdjson reads up to this many bytes past the end of a text. A caller whose buffer has them
// (any content) passes `padded` and the text is parsed where it lies; otherwise it is copied.
inline constexpr size_t kJsonReadAhead = 64;

// Parses `text` and views it in place (no tree is built): the server's reader of reviews.
// The view is valid until this thread's next parse here (any function of this file) and while
// `text` lives. Fails with kInvalidInput on invalid JSON, nesting deeper than kMaxJsonNesting,
// or a document that is not one JSON value.
Result<JsonNode> ParseJsonView(std::string_view text, bool padded = false);

// Parses `text` into a Tape of its own, each value and key located: `first` is where `text`
// starts in its file (a List item handed out alone starts inside a line). Without `locate`, no
// position is kept (Tape::Locate gives {0, 0}), which saves a tenth of an audit's instructions
// where its output shows no places. Fails as ParseJsonView does; the error's `where` is the
// line libyaml finds the fault on when it finds one, else `first`'s.
Result<Tape> ParseJson(std::string_view text, TextPosition first = {1, 1}, bool locate = true);

// The items of a JSON `kind: ...List` located in `text` (ScanList) once the rest of the List —
// kind, metadata, keys — is known to be valid JSON; false for any other document, or a List the
// scanner gives up on. Each item is validated when it is parsed.
bool ScanValidList(std::string_view text, ListLayout& out);

}  // namespace shmguard::io
