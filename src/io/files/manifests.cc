// ParseManifests, ExpandPaths, ReadFileText.
#include "io/files/manifests.h"

#include <algorithm>
#include <cstring>
#include <filesystem>

#include "io/files/file_text.h"
#include "io/formats/fast_json.h"
#include "io/formats/yaml_json.h"

namespace shmguard::io {
namespace {

namespace fs = std::filesystem;

// kubectl's YAMLReader: a document separator is a line starting with "---" followed by
// nothing, spaces or a comment. YAML also allows "--- " followed by content (kustomize's kyaml
// reads it; kubectl refuses it); we keep the separator line in the next document so both parse.
bool IsSeparator(std::string_view line) {
  if (line.substr(0, 3) != "---") return false;
  return line.size() == 3 || line[3] == ' ' || line[3] == '\t' || line[3] == '\r' || line[3] == '\n';
}

// The end of the line starting at `pos` and where the next one starts. YAML's line breaks are
// LF, CRLF and CR alone (YAML 1.2 §5.4), as libyaml reads them: a file written with CR line
// endings has as many lines as one written with LF.
std::pair<size_t, size_t> LineAt(std::string_view text, size_t pos) {
  const size_t eol = text.find_first_of("\r\n", pos);
  if (eol == std::string_view::npos) return {text.size(), text.size()};
  const size_t next = text[eol] == '\r' && eol + 1 < text.size() && text[eol + 1] == '\n' ? eol + 2 : eol + 1;
  return {eol, next};
}

// A line holds a document's content unless it is blank, a comment, "..." or a separator with
// nothing after it but spaces or a comment ("--- {kind: Pod}" holds content).
bool IsContentLine(std::string_view line) {
  size_t first = line.find_first_not_of(" \t");
  if (first == std::string_view::npos || line[first] == '#' || line.substr(first) == "...") return false;
  std::string_view rest = line.substr(first);
  if (!IsSeparator(rest)) return true;
  size_t after = rest.find_first_not_of(" \t", 3);
  return after != std::string_view::npos && rest[after] != '#';
}

bool HasContent(std::string_view text) {
  for (size_t pos = 0; pos < text.size();) {
    auto [eol, next] = LineAt(text, pos);
    if (IsContentLine(text.substr(pos, eol - pos))) return true;
    pos = next;
  }
  return false;
}

bool EndsWith(const std::string& s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// .json files are JSON and .yaml/.yml files YAML; otherwise (stdin) a leading '{' or '[' means
// JSON, except "{{", which opens a Go/Helm template.
bool LooksLikeJson(std::string_view text, const std::string& name) {
  if (EndsWith(name, ".json")) return true;
  if (EndsWith(name, ".yaml") || EndsWith(name, ".yml")) return false;
  size_t first = text.find_first_not_of(" \t\r\n");
  if (first == std::string_view::npos) return false;
  if (text.substr(first, 2) == "{{") return false;
  return text[first] == '{' || text[first] == '[';
}

// Parse errors in unrendered templates are expected: say what to do about them.
std::string TemplateHint(const std::string& text) {
  return text.find("{{") != std::string::npos
             ? " (this looks like an unrendered Helm/Go template: render it, e.g. `helm template`, "
               "and audit the output)"
             : "";
}

// The items of a JSON List, each handed out alone with the line and column it starts at.
void ForEachListItem(std::string_view text, const std::string& name, const ListLayout& list,
                     const std::function<void(Document&&)>& each) {
  int index = 0;
  // Lines and characters counted from one item to the next: once over the text, however many
  // items, even on one line (the API's lists are).
  size_t counted = 0;
  int line = 1, column = 1;
  for (auto [begin, end] : list.items) {
    while (const void* nl = std::memchr(text.data() + counted, '\n', begin - counted)) {
      ++line;
      counted = static_cast<size_t>(static_cast<const char*>(nl) - text.data()) + 1;
      column = 1;
    }
    column += CountChars(text.substr(counted, begin - counted));
    counted = begin;
    Document d;
    d.file = name;
    d.is_json = true;
    d.item = index++;
    d.list_kind = list.kind;
    d.list_api_version = list.api_version;
    d.object_text = text.substr(begin, end - begin);
    d.object_line = line;
    d.object_column = column;  // in characters, as libyaml counts a YAML document's
    each(std::move(d));
  }
}

}  // namespace

void ForEachManifest(std::string_view text, const std::string& name, JsonLists lists,
                     const std::function<void(Document&&)>& each) {
  if (LooksLikeJson(text, name)) {
    if (!HasContent(text)) return;
    if (ListLayout list; lists == JsonLists::kItemByItem && ScanValidList(text, list)) {
      return ForEachListItem(text, name, list, each);
    }
    // Not a List, or one the scanner gave up on (a bracket that does not close, "items" twice,
    // anything invalid around the items): parsed whole, which says what is wrong if anything is.
    Document d;
    d.file = name;
    d.is_json = true;
    d.object_text = text;
    if (lists == JsonLists::kWhole) d.text = std::string(text);
    return each(std::move(d));
  }
  size_t pos = 0, start = 0;
  int line = 1, start_line = 1, index = 0;
  auto flush = [&](size_t end) {
    std::string_view chunk = text.substr(start, end - start);
    if (!HasContent(chunk)) return;
    Document d;
    d.file = name;
    d.index = index++;
    d.line = start_line;
    d.text = std::string(chunk);
    each(std::move(d));
  };
  while (pos < text.size()) {
    size_t next = LineAt(text, pos).second;
    if (pos != 0 && IsSeparator(text.substr(pos, next - pos))) {
      flush(pos);
      start = pos;
      start_line = line;
    }
    pos = next;
    ++line;
  }
  flush(text.size());
}

void ParseDocument(Document& d, bool locate) {
  if (d.object || d.error) return;
  Result<Tape> parsed =
      d.is_json ? ParseJson(d.object_text, {d.object_line, d.object_column}, locate) : ParseYaml(d.text, d.line);
  if (parsed) {
    d.object = std::move(*parsed);
    return;
  }
  const Error& e = parsed.error();
  d.error =
      MakeError(Code::kInvalidInput, e.message + (d.is_json ? "" : TemplateHint(d.text)), InFile(d.file, e.where));
}

std::vector<Document> ParseManifests(std::string_view text, const std::string& name) {
  std::vector<Document> docs;
  ForEachManifest(text, name, JsonLists::kWhole, [&](Document&& d) {
    ParseDocument(d);
    d.object_text = {};  // a view into `text`
    if (d.error || !d.object->Root().IsNull()) docs.push_back(std::move(d));
  });
  return docs;
}

namespace {

// What a path that is neither a regular file nor a directory is, for its error.
std::string NotAFile(const fs::file_status& status) {
  const char* what = fs::is_character_file(status) ? "a character device"
                     : fs::is_block_file(status)   ? "a block device"
                     : fs::is_fifo(status)         ? "a FIFO"
                     : fs::is_socket(status)       ? "a socket"
                                                   : "not a file";
  return std::string("not a regular file or a directory (") + what + ")";
}

bool IsManifestName(const fs::path& p) {
  const std::string ext = p.extension().string();
  return ext == ".yaml" || ext == ".yml" || ext == ".json";
}

// The manifests under `dir`, recursively (symbolic links to files followed, to directories not,
// as `kubectl apply -R` walks), each with its error when it cannot be read: an unreadable
// directory, a dangling link, a FIFO, a device or a socket named like a manifest.
void Walk(const fs::path& dir, std::vector<InputFile>& out) {
  std::error_code ec;
  fs::directory_iterator it(dir, ec), end;
  if (ec) {
    out.push_back({dir.string(),
                   MakeError(Code::kIo, "cannot read the directory: " + ec.message(), Location::File(dir.string()))});
    return;
  }
  for (; it != end; it.increment(ec)) {
    if (ec) {
      out.push_back({dir.string(),
                     MakeError(Code::kIo, "cannot read the directory: " + ec.message(), Location::File(dir.string()))});
      return;
    }
    const fs::path& path = it->path();
    std::error_code lec, sec;
    const fs::file_status link = it->symlink_status(lec);
    if (fs::is_directory(link)) {
      Walk(path, out);
      continue;
    }
    if (!IsManifestName(path)) continue;
    const fs::file_status status = it->status(sec);
    if (fs::is_regular_file(status)) {
      out.push_back({path.string(), std::nullopt});
    } else if (fs::is_symlink(link) && (sec || !fs::exists(status))) {
      out.push_back({path.string(), MakeError(Code::kIo, "a symbolic link to nothing", Location::File(path.string()))});
    } else if (!fs::is_directory(status)) {
      out.push_back({path.string(), MakeError(Code::kIo, NotAFile(status), Location::File(path.string()))});
    }
  }
}

}  // namespace

std::vector<InputFile> ExpandPaths(const std::vector<std::string>& paths) {
  std::vector<InputFile> out;
  for (const auto& p : paths) {
    if (p == "-") {
      out.push_back({p, std::nullopt});
      continue;
    }
    std::error_code ec;
    auto status = fs::status(p, ec);
    if (ec || !fs::exists(status)) {
      out.push_back({p, MakeError(Code::kIo, "no such file or directory", Location::File(p))});
    } else if (fs::is_regular_file(status)) {
      out.push_back({p, std::nullopt});
    } else if (!fs::is_directory(status)) {
      // A device or a FIFO may never end (/dev/zero): only files, directories and stdin are read.
      out.push_back({p, MakeError(Code::kIo, NotAFile(status) + "; give - to read standard input", Location::File(p))});
    } else {
      std::vector<InputFile> found;
      Walk(p, found);
      std::sort(found.begin(), found.end(), [](const InputFile& a, const InputFile& b) { return a.path < b.path; });
      out.insert(out.end(), std::make_move_iterator(found.begin()), std::make_move_iterator(found.end()));
    }
  }
  return out;
}

}  // namespace shmguard::io
