// YAML -> JSON for Kubernetes manifests and the policy (JSON -> YAML is io/yaml_emit.h), with
// libyaml, the C parser go-yaml was ported from, so a document parses as kubectl parses it.
// Plain scalars are typed as sigs.k8s.io/yaml types them (io/yaml_scalar.h): "8" is an int,
// "true"/"yes"/"on" are bools, "~" is null, quoted and block scalars are strings. Merge keys
// ("<<: *anchor") are expanded; aliases are bounded so a "billion laughs" document fails
// instead of exhausting memory.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "shmguard/result.h"

namespace shmguard::io {

// Parses the first YAML document of `text` (null when it holds none). `first_line` is the line
// of `text`'s first line in its file, so that errors name the file's line: `where` is "line N".
// Fails with kInvalidInput for a syntax error, bytes that are not UTF-8 (or are control
// characters), a mapping or alias used as a key, a duplicate key, an unknown anchor, an alias
// inside its own anchor, nesting deeper than 128, or more than 5 million nodes after aliases.
// With `prune`, members the evaluation never reads (shmguard/relevant_fields.h) are skipped
// while parsing, as the JSON parser does; the rare document whose alias names an anchor inside
// a skipped member is parsed again in full.
Result<nlohmann::json> ParseYaml(std::string_view text, int first_line = 1, bool prune = false);

// A YAML document for strict readers of small files (the policy): every scalar as written — a
// string, so "0.50" and "off" stay text — except empty values, "~" and "null", which are null;
// and the line of every mapping member (its key's) and list item, by JSON pointer.
struct YamlText {
  nlohmann::json value;
  std::map<std::string, int> lines;  // "" is the root; "/sizing/safety", "/namespaces/0"
  // The line of the node at `pointer`, or of its nearest ancestor that has one.
  int Line(std::string pointer) const;
};

// Parses the first document of `text` as above, with ParseYaml's checks and errors.
Result<YamlText> ParseYamlAsText(std::string_view text);

}  // namespace shmguard::io
