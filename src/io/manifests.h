// Reading manifests: files and directories, multi-document YAML split the way kubectl splits it
// (a line starting with "---"), JSON documents, each parsed on its own so that one broken
// document is reported with its line and the others still load.
#pragma once

#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "shmguard/result.h"

namespace shmguard::io {

// kFull keeps every field (for printing objects back); kPruned keeps only what the evaluation
// reads (shmguard/relevant_fields.h), skipping the rest while parsing — several times faster for
// JSON (simdjson), less work for YAML.
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
  // Pruned JSON: where the object's own text is in the file (a view into the file's text, valid
  // while ForEachManifest runs), to locate fields; empty otherwise (use `text`).
  std::string_view object_text;
  int object_line = 1, object_column = 1;
  std::optional<nlohmann::json> object;  // set when it parsed (null for "~" or a bare "---")
  std::optional<Error> error;            // set when it did not: where = "file:line"
  // A pruned JSON object not converted yet (ForEachJsonObjectPruned): ParseDocument converts
  // it. It refers to the file's text, so it must run while ForEachManifest's `text` lives.
  std::function<Result<nlohmann::json>()> pending;
};

// Splits `text` into documents, calling `each` for every one in order, so that a large stream
// is never held parsed all at once. JSON when `name` ends in .json, or (stdin) the text starts
// with '{' or '[' (a JSON file is one document); YAML otherwise. Documents that hold only
// comments or whitespace are dropped. Never fails as a whole: errors are per document.
// Documents come unparsed, for ParseDocument to parse on any thread (the audit parses them in
// parallel): YAML as their text; with kPruned, JSON as `pending` (a List item by item, with
// Document::item set), which must be parsed while `text` lives. Full JSON comes parsed.
void ForEachManifest(std::string_view text, const std::string& name, Fidelity fidelity,
                     const std::function<void(Document&&)>& each);

// Parses a document ForEachManifest handed out, setting `object` or `error`: builds its
// `pending` JSON tree, or parses its YAML text (kPruned skips what the evaluation never reads);
// does nothing to a document that is already parsed.
void ParseDocument(Document& d, Fidelity fidelity);

// ForEachManifest with kFull, parsed and collected (every List is one document; documents that
// parse to null, such as "~", are dropped).
std::vector<Document> ParseManifests(std::string_view text, const std::string& name);

// A parser's location (ParseYaml's line, a List item's) in `file`.
Location InFile(const std::string& file, Location where);

// The files to read for `paths`: a regular file as given; a directory's *.yaml, *.yml and *.json
// files recursively, sorted; "-" as is. Fails with kIo naming the path when it does not exist or
// is something else (a device, a FIFO, a socket: /dev/zero would be read without end).
Result<std::vector<std::string>> ExpandPaths(const std::vector<std::string>& paths);

// The whole content of `path` (FileText, copied). Fails with kIo naming the path and the OS reason.
Result<std::string> ReadFileText(const std::string& path);

}  // namespace shmguard::io
