// JSON parsing with simdjson (its DOM API, which picks AVX2/AVX-512 kernels at run time; the
// header-only On-Demand API builds to the scalar fallback without -march): viewed in place
// through JsonNode (the server), or built into nlohmann::json keeping only what the evaluation
// reads (shmguard/relevant_fields.h; the audit, whose patched output edits the tree).
// nlohmann's own parser ran at ~60 MB/s and was most of a request's time (bench/README.md).
#pragma once

#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "shmguard/json_node.h"
#include "shmguard/result.h"

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

// Any JSON document (an object, a List...), pruned as above at every object level.
Result<nlohmann::json> ParseJsonPruned(std::string_view text);

// Builds the pruned tree of one object of a parsed document; may run on any thread.
using PendingObject = std::function<Result<nlohmann::json>()>;

// Where a handed-out object's text is in the document: a view into it, and the line and column
// (1-based) its first byte is at. Valid while the document's text lives.
struct ObjectText {
  std::string_view text;
  int line = 1, column = 1;
};

// Like ParseJsonPruned, but a List ({"kind": "...List", "items": [...]}) is handed out one item
// at a time — `each(item_index, item, list_kind, list_api_version, where)` — so no tree of the whole
// list is ever built; any other document is handed out whole with item_index -1. A List's items
// are only located in the text (strings and brackets): each is parsed when its PendingObject
// runs, on whichever thread runs it, so several threads can build the trees; an item that is
// not valid JSON fails alone, with where = "line N" of its start. Any other document is parsed
// and converted here. A PendingObject is valid while `text` lives. Fails, handing out nothing,
// when `text` is not valid JSON around the items.
Result<bool> ForEachJsonObjectPruned(
    std::string_view text,
    const std::function<void(int item, PendingObject&& object, const std::string& list_kind,
                             const std::string& list_api_version, const ObjectText& where)>& each);

}  // namespace shmguard::io
