// ParseJsonView, ParseJson and ScanValidList over simdjson's DOM API.
#include "io/formats/fast_json.h"

#include <simdjson.h>

#include <algorithm>
#include <cstring>
#include <string>

#include "io/formats/yaml_json.h"

namespace shmguard::io {
namespace {

namespace dom = simdjson::dom;

bool IsNumber(char type) { return type == 'l' || type == 'u' || type == 'd'; }

// The end of the strings the first `n` words of `doc`'s tape use (4 bytes of length, the
// bytes, a NUL each), for a copy of them.
size_t StringsEnd(const dom::document& doc, size_t n) {
  const uint64_t* words = doc.tape.get();
  size_t end = 0;
  for (size_t i = 1; i + 1 < n; i += IsNumber(JsonTape::Type(words[i])) ? 2 : 1) {
    if (JsonTape::Type(words[i]) != '"') continue;
    const size_t size = JsonTape::String(doc.string_buf.get(), words[i]).size();
    end = std::max<size_t>(end, (words[i] & JsonTape::kPayload) + sizeof(uint32_t) + size + 1);
  }
  return end;
}

// Line and column (1-based, the column in characters as libyaml counts them) of increasing byte
// offsets of `text`, which starts at `first` in its file: once over the text however many
// offsets are asked for, even on one long line.
class Positions {
 public:
  Positions(std::string_view text, TextPosition first) : text_(text), line_(first.line), shift_(first.column - 1) {}
  TextPosition At(size_t offset) {
    while (const void* nl = std::memchr(text_.data() + counted_, '\n', offset - counted_)) {
      ++line_;
      counted_ = static_cast<size_t>(static_cast<const char*>(nl) - text_.data()) + 1;
      chars_ = shift_ = 0;
    }
    chars_ += CountChars(text_.substr(counted_, offset - counted_));
    counted_ = offset;
    return {line_, chars_ + 1 + shift_};
  }

 private:
  std::string_view text_;
  int line_, shift_;  // shift_: the first line's column offset, 0 after it
  size_t counted_ = 0;
  int chars_ = 0;  // characters from the line's start to counted_
};

// Whether a tape word of `type` can be the value that starts with `c`.
bool Starts(char type, char c) {
  switch (type) {
    case '{':
    case '}':
    case '[':
    case ']':
    case '"': return c == type;
    case 't': return c == 't';
    case 'f': return c == 'f';
    case 'n': return c == 'n';
    default: return c == '-' || (c >= '0' && c <= '9');
  }
}

// Where each of the `n` words of a tape parsed from `text` starts. Each value and key is one
// structural character of simdjson's stage 1, in order, once the commas and colons between
// them are passed over (a string's is its opening quote). All unknown if they ever disagree.
std::vector<TextPosition> Locate(std::string_view text, TextPosition first, const std::vector<uint64_t>& words,
                                 const uint32_t* index, size_t count) {
  const size_t n = words.size();
  std::vector<TextPosition> at(n);
  Positions positions(text, first);
  for (size_t i = 1, s = 0; i + 1 < n; ++i) {
    while (s < count && (text[index[s]] == ',' || text[index[s]] == ':')) ++s;
    const char type = JsonTape::Type(words[i]);
    if (s >= count || !Starts(type, text[index[s]])) return std::vector<TextPosition>(n);
    at[i] = positions.At(index[s++]);
    if (IsNumber(type)) {  // its bits' word
      at[i + 1] = at[i];
      ++i;
    }
  }
  return at;
}

Error ParseError(simdjson::error_code err) {
  if (err == simdjson::DEPTH_ERROR) {
    return MakeError(Code::kInvalidInput, "JSON nested deeper than " + std::to_string(kMaxJsonNesting) + " levels");
  }
  return MakeError(Code::kInvalidInput, std::string("not valid JSON (") + simdjson::error_message(err) + ")");
}

dom::parser& Parser() {
  thread_local dom::parser parser = [] {
    dom::parser p;  // reused: its buffers grow to the largest document seen, at this depth
    if (p.allocate(simdjson::SIMDJSON_PADDING, kMaxJsonNesting)) throw std::bad_alloc();
    return p;
  }();
  return parser;
}

// Parses `text` into this thread's parser (valid until its next parse). simdjson reads up to
// kJsonReadAhead bytes past the end: unless the caller's buffer has them, `text` is copied into
// a buffer that does.
static_assert(kJsonReadAhead == simdjson::SIMDJSON_PADDING);
Result<dom::element> ParseDom(std::string_view text, bool padded = false) {
  const char* data = text.data();
  if (!padded) {
    thread_local std::string copy;
    copy.reserve(text.size() + kJsonReadAhead);
    copy.assign(text.data(), text.size());
    data = copy.data();
  }
  dom::element doc;
  if (auto err = Parser().parse(data, text.size(), /*realloc_if_needed=*/false).get(doc); err) {
    return ParseError(err);
  }
  return doc;
}

// The List without its items ("items": []) is valid JSON. The scanner only finds where values
// end, and each item is validated when it is parsed: this is the rest — kind, metadata, keys.
bool ValidOutsideItems(std::string_view text, const ListLayout& list) {
  auto [begin, end] = list.items_array;
  std::string rest;
  rest.reserve(begin + 2 + (text.size() - end) + kJsonReadAhead);  // parsed where it is
  rest.append(text.substr(0, begin)).append("[]").append(text.substr(end));
  return ParseDom(rest, /*padded=*/true).has_value();
}

}  // namespace

Result<JsonNode> ParseJsonView(std::string_view text, bool padded) {
  auto doc = ParseDom(text, padded);
  if (!doc) return doc.error();
  thread_local JsonTape tape;  // this thread's parse, as the views read it
  tape = {Parser().doc.tape.get(), Parser().doc.string_buf.get()};
  return JsonNode::Root(tape);
}

bool ScanValidList(std::string_view text, ListLayout& out) {
  return ScanList(text, out) && !out.items.empty() && ValidOutsideItems(text, out);
}

Result<Tape> ParseJson(std::string_view text, TextPosition first, bool locate) {
  auto doc = ParseDom(text);
  if (!doc) {
    // simdjson does not say where: libyaml, which reads JSON as YAML's flow style, finds the
    // line of most faults.
    auto yaml = ParseYaml(text, first.line);
    Location where = yaml ? Location::Line(first.line) : yaml.error().where;
    return MakeError(doc.error().code, doc.error().message, where);
  }
  const dom::parser& p = Parser();
  const uint64_t* tape = p.doc.tape.get();
  const size_t n = tape[0] & JsonTape::kPayload;  // the root word holds the index past the last one
  std::vector<uint64_t> words(tape, tape + n);
  std::vector<uint8_t> strings(p.doc.string_buf.get(), p.doc.string_buf.get() + StringsEnd(p.doc, n));
  std::vector<TextPosition> at;
  if (locate) {
    at = Locate(text, first, words, p.implementation->structural_indexes.get(), p.implementation->n_structural_indexes);
  }
  return Tape::Own(std::move(words), std::move(strings), std::move(at));
}

}  // namespace shmguard::io
