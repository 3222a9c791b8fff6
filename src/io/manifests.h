// Reading manifests: files and directories, multi-document YAML split the way kubectl splits it
// (a line starting with "---"), JSON documents, each parsed on its own so that one broken
// document is reported with its line and the others still load.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "shmguard/result.h"

namespace shmguard::io {

// kFull keeps every field (for printing objects back); kPruned parses JSON with simdjson and
// keeps only what the evaluation reads (shmguard/relevant_fields.h), several times faster.
enum class Fidelity { kFull, kPruned };

struct Document {
  std::string file;  // the path as given, "-" for stdin
  int index = 0;     // 0-based among the non-empty documents of the file
  int line = 1;      // 1-based line where the document starts
  std::string text;  // the document's own text, byte for byte (empty for pruned JSON)
  bool is_json = false;
  // Set when this is one item of a List handed out alone (kPruned JSON): its index, and the
  // list's kind and apiVersion (items of "PodList" from the API carry no kind of their own).
  std::optional<int> item;
  std::string list_kind, list_api_version;
  std::optional<nlohmann::json> object;  // set when it parsed
  std::optional<Error> error;            // set when it did not: where = "file:line"
};

// Splits and parses `text`, calling `each` for every document in order, so that a large stream
// is never held parsed all at once. JSON when `name` ends in .json, or (stdin) the text starts
// with '{' or '[' (a JSON file is one document); YAML otherwise. Documents that hold only
// comments or whitespace are dropped. Never fails as a whole: errors are per document.
// With kPruned, a JSON List is handed out item by item (Document::item set).
// `text` may hold simdjson's padding in its spare capacity (ReadFileText leaves it there).
void ForEachManifest(const std::string& text, const std::string& name, Fidelity fidelity,
                     const std::function<void(Document&&)>& each);

// ForEachManifest with kFull, collected (every List is one document).
std::vector<Document> ParseManifests(std::string_view text, const std::string& name);

// The files to read for `paths`: a file as given; a directory's *.yaml, *.yml and *.json files
// recursively, sorted; "-" as is. Fails with kIo naming the path when it does not exist.
Result<std::vector<std::string>> ExpandPaths(const std::vector<std::string>& paths);

// The whole content of `path`, with 64 spare bytes of capacity (simdjson's padding). Fails with
// kIo naming the path and the OS reason.
Result<std::string> ReadFileText(const std::string& path);

}  // namespace shmguard::io
