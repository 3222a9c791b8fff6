// Tape: a parsed document as shmguard reads it, whatever its format. It is simdjson's tape
// layout (JsonTape, core/values/json_node.h), owned, with where each value and each key starts in
// the text. Both parsers build one: simdjson for JSON (io/fast_json.h) and libyaml's events for
// YAML (io/yaml_json.h). The core reads it through JsonNode; the audit locates a finding's JSON
// pointer on it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "core/values/json_node.h"

namespace shmguard::io {

struct TextPosition {
  int line = 0, column = 0;  // 1-based; 0 when not known
};

// The characters of UTF-8 `text`, as libyaml counts a column: its bytes that do not continue a
// character (10xxxxxx), eight at a time.
inline int CountChars(std::string_view text) {
  size_t continuing = 0, i = 0;
  for (; i + 8 <= text.size(); i += 8) {
    uint64_t w;
    std::memcpy(&w, text.data() + i, sizeof w);
    const uint64_t marks = (w & ~(w << 1) & 0x8080808080808080ull) >> 7;       // 1 in each such byte
    continuing += static_cast<size_t>((marks * 0x0101010101010101ull) >> 56);  // their sum
  }
  for (; i < text.size(); ++i) continuing += (static_cast<unsigned char>(text[i]) & 0xC0) == 0x80;
  return static_cast<int>(text.size() - continuing);
}

class Tape {
 public:
  Tape() = default;  // no document: its root is absent

  // The document's value. Valid while this Tape or a copy of it lives (copies share the words).
  JsonNode Root() const { return data_ ? JsonNode::Root(data_->view) : JsonNode(); }
  // A copy as nlohmann::json (null when there is no document), for a tree to edit or write.
  nlohmann::json ToJson() const { return Root().Copy(); }

  // Where `pointer` (RFC 6901) is in the text: a mapping member at its key, a list item at its
  // first character, "" at the document's first node; a pointer to a missing field at its
  // nearest ancestor that is written. {0, 0} when there is no document.
  TextPosition Locate(std::string_view pointer) const;

  // A tape in simdjson's layout as it stands (words[0] the root word, `strings` what its string
  // words point into), with a position per word (empty: none known).
  static Tape Own(std::vector<uint64_t>&& words, std::vector<uint8_t>&& strings, std::vector<TextPosition>&& at);

 private:
  friend class TapeBuilder;
  struct Data {
    std::vector<uint64_t> words;
    std::vector<uint8_t> strings;
    std::vector<TextPosition> at;  // per word: where its value (or key) starts
    JsonTape view;
  };
  std::shared_ptr<const Data> data_;
};

// Words cut from a tape or copied out of it (a whole value, or an object's members), to be put
// back elsewhere: a YAML anchor's value, a merge key's mapping. Their containers' indexes count
// from the first word; their strings stay in the builder they came from.
struct TapeFragment {
  std::vector<uint64_t> words;
  std::vector<TextPosition> at;
};

// Builds a Tape value by value, in document order: an object's words are its keys and values,
// alternating.
class TapeBuilder {
 public:
  TapeBuilder();

  void StartObject(TextPosition at) { Open('{', at); }
  void StartArray(TextPosition at) { Open('[', at); }
  void End();  // of the innermost open object or array
  void Key(std::string_view key, TextPosition at) { String(key, at); }
  void String(std::string_view s, TextPosition at);
  void Int64(int64_t v, TextPosition at) { Number('l', &v, at); }
  void Uint64(uint64_t v, TextPosition at) { Number('u', &v, at); }
  void Double(double v, TextPosition at) { Number('d', &v, at); }
  void Bool(bool v, TextPosition at) { Word(static_cast<uint64_t>(v ? 't' : 'f') << 56, at); }
  void Null(TextPosition at) { Word(static_cast<uint64_t>('n') << 56, at); }

  size_t size() const { return data_->words.size(); }  // the index the next word gets
  // The words from `begin` to the end, removed (Cut) or copied (CopyOut).
  TapeFragment Cut(size_t begin);
  TapeFragment CopyOut(size_t begin) const;
  // Appends the words [from, to) of `f`, every position replaced by `at` when it is known.
  void Paste(const TapeFragment& f, size_t from, size_t to, TextPosition at);
  // The index just past the value (or key) at word `i` of `f`.
  static size_t After(const TapeFragment& f, size_t i);
  // The type byte of word `i` of `f`, and a string word's text (in this builder's strings).
  static char Type(const TapeFragment& f, size_t i) { return JsonTape::Type(f.words[i]); }
  std::string_view StringOf(const TapeFragment& f, size_t i) const;

  // The document: exactly one value must have been added, every container ended.
  Tape Finish();

 private:
  void Open(char type, TextPosition at);
  void Number(char type, const void* bits, TextPosition at);
  void Word(uint64_t w, TextPosition at) {
    data_->words.push_back(w);
    data_->at.push_back(at);
  }
  std::shared_ptr<Tape::Data> data_;
  std::vector<size_t> open_;  // the words of the open containers
};

}  // namespace shmguard::io
