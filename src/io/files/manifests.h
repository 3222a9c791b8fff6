// Reading manifests: files and directories, multi-document YAML split the way kubectl splits it
// (a line starting with "---"), JSON documents, each parsed on its own so that one broken
// document is reported with its line and the others still load.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/values/result.h"
#include "io/files/file_text.h"
#include "io/files/input_limits.h"
#include "io/formats/tape.h"

namespace shmguard::io {

// How a JSON List comes out of ForEachManifest: whole, to be printed back (-o patched), or item
// by item, so that no document of the whole List is ever held and its items parse in parallel.
enum class JsonLists { kWhole, kItemByItem };

struct Document {
  std::string file;  // the path as given, "-" for stdin
  int index = 0;     // 0-based among the non-empty documents of the file
  int line = 1;      // 1-based line where the document starts
  std::string text;  // the document's own text, byte for byte (YAML; JSON with JsonLists::kWhole)
  bool is_json = false;
  // Set when this is one item of a List handed out alone: its index, and the list's kind and
  // apiVersion (items of "PodList" from the API carry no kind of their own).
  std::optional<int> item;
  std::string list_kind, list_api_version;
  // JSON: the text to parse, a view into the file's text (valid while ForEachManifest runs), and
  // the line and column it starts at.
  std::string_view object_text;
  int object_line = 1, object_column = 1;
  std::optional<Tape> object;  // set when it parsed (null for "~" or a bare "---")
  std::optional<Error> error;  // set when it did not: where = "file:line"
};

// Splits `text` into documents, calling `each` for every one in order, so that a large stream
// is never held parsed all at once. JSON when `name` ends in .json, or (stdin) the text starts
// with '{' or '[' (a JSON file is one document, or a List's items); YAML otherwise. Documents
// that hold only comments or whitespace are dropped. Never fails as a whole: errors are per
// document. Documents come unparsed, for ParseDocument to parse on any thread (the audit parses
// them in parallel) while `text` lives.
void ForEachManifest(std::string_view text, const std::string& name, JsonLists lists,
                     const std::function<void(Document&&)>& each);

// Parses a document ForEachManifest handed out, setting `object` or `error`; does nothing to a
// document that is already parsed. Without `locate`, a JSON document keeps no positions (YAML's
// come with libyaml's events).
void ParseDocument(Document& d, bool locate = true);

// ForEachManifest with JsonLists::kWhole, parsed and collected (every List is one document; documents that
// parse to null, such as "~", are dropped).
std::vector<Document> ParseManifests(std::string_view text, const std::string& name);

// A file to read, or why a path cannot be read (kIo naming it).
struct InputFile {
  std::string path;
  std::optional<Error> error;
};

// The files to read for `paths`, in order: a regular file as given; a directory's *.yaml, *.yml
// and *.json files recursively, sorted by path; "-" as is. Nothing is passed over in silence:
// a path that does not exist or is something else (a device, a FIFO, a socket: /dev/zero would
// be read without end), a directory or subdirectory that cannot be read, and a dangling link or
// a special file named like a manifest each come as an entry with its error.
std::vector<InputFile> ExpandPaths(const std::vector<std::string>& paths);

}  // namespace shmguard::io
