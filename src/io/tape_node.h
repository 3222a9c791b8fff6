// JsonNode over a document simdjson's DOM parser has written: the values are read straight off
// its tape (simdjson's doc/tape.md), so a lookup is a short loop over 64-bit words and a view is
// a tape index — no element objects, iterators or error results on the way.
#pragma once

#include <simdjson.h>

#include "shmguard/json_node.h"

namespace shmguard::io {

// A view of the root of `doc`, valid while `doc` holds this parse.
JsonNode TapeRoot(const simdjson::dom::document& doc);

}  // namespace shmguard::io
