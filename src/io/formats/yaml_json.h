// YAML -> the document tape (io/tape.h) for Kubernetes manifests and the policy (JSON -> YAML is
// io/yaml_emit.h), with libyaml, the C parser go-yaml was ported from, so a document parses as
// kubectl parses it. Plain scalars are typed as sigs.k8s.io/yaml types them (io/yaml_scalar.h):
// "8" is an int, "true"/"yes"/"on" are bools, "~" is null, quoted and block scalars are strings.
// Merge keys ("<<: *anchor") are expanded; aliases are bounded so a "billion laughs" document
// fails instead of exhausting memory. Every value and key keeps its line and column.
#pragma once

#include <algorithm>
#include <string>
#include <string_view>

#include "core/values/result.h"
#include "io/formats/tape.h"

namespace shmguard::io {

// Parses the first YAML document of `text` (null when it holds none). `first_line` is the line
// of `text`'s first line in its file, so that errors and positions name the file's line: an
// error's `where` is that line. Fails with kInvalidInput for a syntax error, bytes that are not
// UTF-8 (or are control characters), a mapping or alias used as a key, a duplicate key, an
// unknown anchor, an alias inside its own anchor, nesting deeper than 128, or more than 5
// million nodes after aliases. A mapping's members are written in the document's order, merged
// ones after its own (JsonNode::Members reads them by key); whatever an alias copies is located
// where the alias is written.
Result<Tape> ParseYaml(std::string_view text, int first_line = 1);

// A YAML document for strict readers of small files (the policy): every scalar as written — a
// string, so "0.50" and "off" stay text — except empty values, "~" and "null", which are null.
struct YamlText {
  Tape tape;
  JsonNode Root() const { return tape.Root(); }
  // The line of the node at `pointer` ("" is the root; "/sizing/safety", "/namespaces/0"): a
  // member's is its key's; a missing one's is its nearest ancestor's.
  int Line(const std::string& pointer) const { return std::max(1, tape.Locate(pointer).line); }
};

// Parses the first document of `text` as above, with ParseYaml's checks and errors.
Result<YamlText> ParseYamlAsText(std::string_view text);

}  // namespace shmguard::io
