// Tape::Locate and TapeBuilder: simdjson's tape layout (its doc/tape.md), written word by word.
#include "io/formats/tape.h"

#include <cstring>

#include "core/values/json_patch.h"

namespace shmguard::io {
namespace {

uint64_t TypeWord(char type) { return static_cast<uint64_t>(static_cast<uint8_t>(type)) << 56; }

// Moves the containers' indexes of words [from, to) by `delta`: an opening word holds the index
// past its closing one, a closing word the index of its opening one.
void Rebase(uint64_t* words, size_t from, size_t to, int64_t delta) {
  for (size_t i = from; i < to; ++i) {
    const char t = JsonTape::Type(words[i]);
    if (t == '{' || t == '[') {
      words[i] = (words[i] & ~uint64_t{0xFFFFFFFF}) |
                 static_cast<uint32_t>(static_cast<int64_t>(words[i] & 0xFFFFFFFF) + delta);
    } else if (t == '}' || t == ']') {
      words[i] = TypeWord(t) | static_cast<uint64_t>(static_cast<int64_t>(words[i] & JsonTape::kPayload) + delta);
    } else if (t == 'l' || t == 'u' || t == 'd') {
      ++i;  // the number's bits
    }
  }
}

}  // namespace

Tape Tape::Own(std::vector<uint64_t>&& words, std::vector<uint8_t>&& strings, std::vector<TextPosition>&& at) {
  auto data = std::make_shared<Data>();
  data->words = std::move(words);
  data->strings = std::move(strings);
  data->at = std::move(at);
  data->view = {data->words.data(), data->strings.data()};
  Tape t;
  t.data_ = std::move(data);
  return t;
}

TextPosition Tape::Locate(std::string_view pointer) const {
  if (!data_ || data_->words.size() < 3) return {};
  const auto& words = data_->words;
  const auto& at = data_->at;
  auto position = [&](size_t i) { return i < at.size() ? at[i] : TextPosition{}; };
  size_t cur = 1;
  TextPosition found = position(cur);
  while (!pointer.empty()) {
    pointer.remove_prefix(1);  // the '/'
    const size_t slash = pointer.find('/');
    const std::string_view token = pointer.substr(0, slash);
    pointer = slash == std::string_view::npos ? std::string_view() : pointer.substr(slash);
    size_t next = 0;
    if (JsonTape::Type(words[cur]) == '{') {
      const std::string key = UnescapePointerToken(token);
      for (size_t k = cur + 1; JsonTape::Type(words[k]) != '}'; k = JsonTape::After(words.data(), k + 1)) {
        if (JsonTape::String(data_->strings.data(), words[k]) == key) next = k;  // a key given twice: its last
      }
      if (!next) break;
      found = position(next);
      cur = next + 1;
    } else if (JsonTape::Type(words[cur]) == '[') {
      size_t index = 0;
      if (token.empty() || token.find_first_not_of("0123456789") != std::string_view::npos) break;
      for (char c : token) index = index * 10 + static_cast<size_t>(c - '0');
      for (size_t i = cur + 1; JsonTape::Type(words[i]) != ']'; i = JsonTape::After(words.data(), i)) {
        if (index-- == 0) {
          next = i;
          break;
        }
      }
      if (!next) break;
      found = position(next);
      cur = next;
    } else {
      break;
    }
  }
  return found;
}

TapeBuilder::TapeBuilder() : data_(std::make_shared<Tape::Data>()) { Word(TypeWord('r'), {}); }

void TapeBuilder::Open(char type, TextPosition at) {
  open_.push_back(size());
  Word(TypeWord(type), at);
}

void TapeBuilder::End() {
  const size_t open = open_.back();
  open_.pop_back();
  auto& words = data_->words;
  const char close = JsonTape::Type(words[open]) == '{' ? '}' : ']';
  Word(TypeWord(close) | open, data_->at[open]);
  words[open] |= static_cast<uint32_t>(size());
}

void TapeBuilder::String(std::string_view s, TextPosition at) {
  auto& strings = data_->strings;
  Word(TypeWord('"') | strings.size(), at);
  const auto size = static_cast<uint32_t>(s.size());
  const size_t start = strings.size();
  strings.resize(start + sizeof size + s.size() + 1);
  std::memcpy(strings.data() + start, &size, sizeof size);
  std::memcpy(strings.data() + start + sizeof size, s.data(), s.size());
  strings.back() = 0;
}

void TapeBuilder::Number(char type, const void* bits, TextPosition at) {
  Word(TypeWord(type), at);
  uint64_t w;
  std::memcpy(&w, bits, sizeof w);
  Word(w, at);
}

TapeFragment TapeBuilder::CopyOut(size_t begin) const {
  TapeFragment f;
  f.words.assign(data_->words.begin() + static_cast<std::ptrdiff_t>(begin), data_->words.end());
  f.at.assign(data_->at.begin() + static_cast<std::ptrdiff_t>(begin), data_->at.end());
  Rebase(f.words.data(), 0, f.words.size(), -static_cast<int64_t>(begin));
  return f;
}

TapeFragment TapeBuilder::Cut(size_t begin) {
  TapeFragment f = CopyOut(begin);
  data_->words.resize(begin);
  data_->at.resize(begin);
  return f;
}

void TapeBuilder::Paste(const TapeFragment& f, size_t from, size_t to, TextPosition at) {
  const size_t start = size();
  auto& words = data_->words;
  words.insert(words.end(), f.words.begin() + static_cast<std::ptrdiff_t>(from),
               f.words.begin() + static_cast<std::ptrdiff_t>(to));
  if (at.line) {
    data_->at.resize(words.size(), at);
  } else {
    data_->at.insert(data_->at.end(), f.at.begin() + static_cast<std::ptrdiff_t>(from),
                     f.at.begin() + static_cast<std::ptrdiff_t>(to));
  }
  Rebase(words.data(), start, words.size(), static_cast<int64_t>(start) - static_cast<int64_t>(from));
}

size_t TapeBuilder::After(const TapeFragment& f, size_t i) { return JsonTape::After(f.words.data(), i); }

std::string_view TapeBuilder::StringOf(const TapeFragment& f, size_t i) const {
  return JsonTape::String(data_->strings.data(), f.words[i]);
}

Tape TapeBuilder::Finish() {
  auto& words = data_->words;
  words[0] |= size() + 1;  // the root word holds the index past the last one
  Word(TypeWord('r'), {});
  data_->view = {words.data(), data_->strings.data()};
  Tape t;
  t.data_ = std::move(data_);
  return t;
}

}  // namespace shmguard::io
