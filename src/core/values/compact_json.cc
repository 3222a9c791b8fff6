// CompactJson: a fast path for printable-ASCII strings, nlohmann's serializer for the rest.
#include "core/values/compact_json.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>

namespace shmguard {
namespace {

using nlohmann::json;

std::string Dumped(const json& value) { return value.dump(-1, ' ', false, json::error_handler_t::replace); }

void Append(const json& value, std::string& out) {
  switch (value.type()) {
    case json::value_t::object: {
      out += '{';
      bool first = true;
      for (const auto& [key, member] : value.get_ref<const json::object_t&>()) {
        if (!first) out += ',';
        first = false;
        AppendJsonQuoted(key, out);
        out += ':';
        Append(member, out);
      }
      out += '}';
      return;
    }
    case json::value_t::array: {
      out += '[';
      bool first = true;
      for (const auto& item : value.get_ref<const json::array_t&>()) {
        if (!first) out += ',';
        first = false;
        Append(item, out);
      }
      out += ']';
      return;
    }
    case json::value_t::string: AppendJsonQuoted(value.get_ref<const std::string&>(), out); return;
    case json::value_t::boolean: out += value.get<bool>() ? "true" : "false"; return;
    case json::value_t::null: out += "null"; return;
    case json::value_t::number_integer: out += std::to_string(value.get<int64_t>()); return;
    case json::value_t::number_unsigned: out += std::to_string(value.get<uint64_t>()); return;
    default:  // floats (nlohmann's shortest round-trip form), binary, discarded
      out += Dumped(value);
      return;
  }
}

// For each byte: 0 when it is copied as it is, 1 for '"' and '\\' (a backslash goes before
// them), 2 for control characters and bytes of UTF-8 (dump's own rules).
constexpr auto kEscapeClass = [] {
  std::array<uint8_t, 256> t{};
  for (int c = 0; c < 256; ++c) t[c] = c < 0x20 || c >= 0x80 ? 2 : c == '"' || c == '\\' ? 1 : 0;
  return t;
}();

// True when none of the 8 bytes of `w` is in class 1 or 2 above: no '"', '\\', byte below 0x20
// or at 0x80 and above (the classic has-zero-byte and has-less-than tests, which are exact
// for "any"). Paths and names are copied a word at a time.
bool PlainWord(uint64_t w) {
  constexpr uint64_t kOnes = 0x0101010101010101ULL, kHighs = 0x8080808080808080ULL;
  const uint64_t quote = w ^ (kOnes * '"'), backslash = w ^ (kOnes * '\\');
  const uint64_t found =
      ((quote - kOnes) & ~quote) | ((backslash - kOnes) & ~backslash) | ((w - kOnes * 0x20) & ~w) | w;
  return (found & kHighs) == 0;
}

}  // namespace

std::string CompactJson(const json& value) {
  std::string out;
  Append(value, out);
  return out;
}

void AppendJsonQuoted(std::string_view s, std::string& out) {
  const size_t start = out.size();
  // Room for the worst case (every byte escaped), written through a pointer and cut to what was
  // written: a string full of quotes (a plan annotation in a patch) costs a store per byte, not
  // an append per quote.
  out.resize(start + 2 * s.size() + 2);
  char* to = out.data() + start;
  *to++ = '"';
  for (size_t i = 0; i < s.size();) {
    if (i + 8 <= s.size()) {
      uint64_t w;
      std::memcpy(&w, s.data() + i, sizeof w);
      if (PlainWord(w)) {
        std::memcpy(to, &w, sizeof w);
        to += 8;
        i += 8;
        continue;
      }
    }
    for (const size_t end = std::min(i + 8, s.size()); i < end; ++i) {  // a word with one to escape
      const uint8_t escape = kEscapeClass[static_cast<unsigned char>(s[i])];
      if (escape == 2) {  // control character, UTF-8 or a broken byte: dump's own rules
        out.resize(start);
        out += Dumped(json(s));
        return;
      }
      if (escape == 1) *to++ = '\\';
      *to++ = s[i];
    }
  }
  *to++ = '"';
  out.resize(static_cast<size_t>(to - out.data()));
}

std::string JsonQuoted(std::string_view s) {
  std::string out;
  AppendJsonQuoted(s, out);
  return out;
}

}  // namespace shmguard
