// ValidUtf8 and Printable: one pass over the bytes, a UTF-8 sequence at a time (RFC 3629 §3: no
// overlong forms, no surrogates, nothing past U+10FFFF).
#include "io/words/printable.h"

#include <algorithm>
#include <cstdint>

namespace shmguard::io {
namespace {

constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD

// The length of the valid UTF-8 sequence at text[i], or 0 when it is not one.
size_t SequenceAt(std::string_view text, size_t i) {
  const auto byte = [&](size_t k) { return static_cast<uint8_t>(text[k]); };
  const uint8_t c = byte(i);
  if (c < 0x80) return 1;
  size_t n = 0;
  uint8_t lo = 0x80, hi = 0xBF;  // the range of the second byte
  if (c >= 0xC2 && c <= 0xDF) {
    n = 2;
  } else if (c >= 0xE0 && c <= 0xEF) {
    n = 3;
    if (c == 0xE0) lo = 0xA0;  // overlong
    if (c == 0xED) hi = 0x9F;  // surrogates
  } else if (c >= 0xF0 && c <= 0xF4) {
    n = 4;
    if (c == 0xF0) lo = 0x90;  // overlong
    if (c == 0xF4) hi = 0x8F;  // past U+10FFFF
  } else {
    return 0;
  }
  if (i + n > text.size()) return 0;
  if (byte(i + 1) < lo || byte(i + 1) > hi) return 0;
  for (size_t k = 2; k < n; ++k) {
    if ((byte(i + k) & 0xC0) != 0x80) return 0;
  }
  return n;
}

void AppendEscaped(uint8_t c, std::string& out) {
  static constexpr char kHex[] = "0123456789abcdef";
  out += "\\x";
  out += kHex[c >> 4];
  out += kHex[c & 0xF];
}

}  // namespace

std::string ValidUtf8(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    const size_t n = SequenceAt(text, i);
    if (n == 0) {
      out += kReplacement;
      ++i;
    } else {
      out.append(text.substr(i, n));
      i += n;
    }
  }
  return out;
}

std::string Printable(std::string_view text, size_t max_bytes) {
  std::string out;
  out.reserve(text.size() < 256 ? text.size() : 256);
  for (size_t i = 0; i < text.size();) {
    const size_t n = SequenceAt(text, i);
    std::string piece;
    const auto c = static_cast<uint8_t>(text[i]);
    if (n == 0) {
      piece = kReplacement;
    } else if (c < 0x20 || c == 0x7F) {
      AppendEscaped(c, piece);
    } else if (c == '\\') {
      piece = "\\\\";
    } else if (n == 2 && c == 0xC2 && static_cast<uint8_t>(text[i + 1]) < 0xA0) {
      AppendEscaped(static_cast<uint8_t>(text[i + 1]), piece);  // a C1 control (U+0080..U+009F)
    } else {
      piece = text.substr(i, n);
    }
    if (out.size() + piece.size() > max_bytes) return out + "...";
    out += piece;
    i += n == 0 ? 1 : n;
  }
  return out;
}

std::string CutUtf8(std::string_view text, size_t max_bytes) {
  std::string out;
  out.reserve(std::min(text.size(), max_bytes) + 3);
  for (size_t i = 0; i < text.size();) {
    const size_t n = SequenceAt(text, i);
    const std::string_view piece = n == 0 ? kReplacement : text.substr(i, n);
    if (out.size() + piece.size() > max_bytes) return out + "...";
    out.append(piece);
    i += n == 0 ? 1 : n;
  }
  return out;
}

}  // namespace shmguard::io
