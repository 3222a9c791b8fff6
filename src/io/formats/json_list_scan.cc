// ScanList and ContainerEnd. ContainerEnd, which reads every byte of a List, takes 16 bytes at a
// time where SSE2 is there (every x86-64): in a block without a backslash — nearly all of them —
// the quotes alone say which bytes are inside strings, and only brackets outside strings are
// looked at one by one. Blocks with a backslash, the tail, and other CPUs go byte by byte.
#include "io/formats/json_list_scan.h"

#include <nlohmann/json.hpp>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace shmguard::io {
namespace {

constexpr size_t npos = std::string_view::npos;

struct Brackets {
  std::string open;  // the brackets still open, innermost last

  enum class Step { kOpen, kClosedAll, kMismatch };
  Step Take(char c) {
    if (c == '{' || c == '[') {
      open += c;
      return Step::kOpen;
    }
    if (open.empty() || open.back() != (c == '}' ? '{' : '[')) return Step::kMismatch;
    open.pop_back();
    return open.empty() ? Step::kClosedAll : Step::kOpen;
  }
};

bool IsBracket(char c) { return c == '{' || c == '[' || c == '}' || c == ']'; }

#if defined(__SSE2__)
unsigned Bits(__m128i block, char c) {
  return static_cast<unsigned>(_mm_movemask_epi8(_mm_cmpeq_epi8(block, _mm_set1_epi8(c))));
}

// Bit i: an odd number of the bits 0..i of x are set (x has 16 bits).
unsigned PrefixXor(unsigned x) {
  x ^= x << 1;
  x ^= x << 2;
  x ^= x << 4;
  x ^= x << 8;
  return x & 0xFFFFu;
}
#endif

class Scanner {
 public:
  explicit Scanner(std::string_view t) : t_(t) {}

  bool Scan(ListLayout& out) {
    size_t p = Space(0);
    if (!At(p, '{')) return false;
    bool have_items = false;
    for (p = Space(p + 1); !At(p, '}');) {
      size_t key_end = String(p);
      if (key_end == npos) return false;
      std::string key = Decode(p, key_end);
      p = Space(key_end);
      if (!At(p, ':')) return false;
      size_t v = Space(p + 1);
      if (key == "items" && At(v, '[')) {
        if (have_items) return false;  // twice: leave it to the full parser
        have_items = true;
        for (p = Space(v + 1); !At(p, ']');) {
          size_t end = Value(p);
          if (end == npos) return false;
          out.items.emplace_back(p, end);
          p = Space(end);
          if (At(p, ',')) {
            p = Space(p + 1);
            if (At(p, ']')) return false;  // a trailing comma: not JSON, for the full parser to say
          } else if (!At(p, ']')) {
            return false;
          }
        }
        out.items_array = {v, p + 1};
        p = Space(p + 1);
      } else {
        size_t end = Value(v);
        if (end == npos) return false;
        if ((key == "kind" || key == "apiVersion") && At(v, '"')) {
          (key == "kind" ? out.kind : out.api_version) = Decode(v, end);
        }
        p = Space(end);
      }
      if (At(p, ','))
        p = Space(p + 1);
      else if (!At(p, '}'))
        return false;
    }
    const std::string& kind = out.kind;
    return have_items && Space(p + 1) == t_.size() && kind.size() >= 4 && kind.compare(kind.size() - 4, 4, "List") == 0;
  }

 private:
  bool At(size_t p, char c) const { return p < t_.size() && t_[p] == c; }

  size_t Space(size_t p) const {
    while (p < t_.size() && (t_[p] == ' ' || t_[p] == '\n' || t_[p] == '\r' || t_[p] == '\t')) ++p;
    return p;
  }

  // The end of the string whose opening quote is at p, or npos.
  size_t String(size_t p) const {
    if (!At(p, '"')) return npos;
    for (size_t q = p + 1; q < t_.size(); ++q) {
      if (t_[q] == '\\')
        ++q;
      else if (t_[q] == '"')
        return q + 1;
    }
    return npos;
  }

  // The end of the value starting at p, or npos when a bracket or string does not close.
  size_t Value(size_t p) const {
    if (At(p, '{') || At(p, '[')) return ContainerEnd(t_, p);
    if (At(p, '"')) return String(p);
    while (p < t_.size() && t_[p] != ',' && t_[p] != '}' && t_[p] != ']' && t_[p] != ' ' && t_[p] != '\n' &&
           t_[p] != '\r' && t_[p] != '\t') {
      ++p;  // a number or literal
    }
    return p;
  }

  // The text of the string [begin, end) with its escapes resolved ("" if they are invalid).
  std::string Decode(size_t begin, size_t end) const {
    std::string_view raw = t_.substr(begin + 1, end - begin - 2);
    if (raw.find('\\') == std::string_view::npos) return std::string(raw);
    auto decoded = nlohmann::json::parse(t_.substr(begin, end - begin), nullptr, /*allow_exceptions=*/false);
    return decoded.is_string() ? decoded.get<std::string>() : std::string();
  }

  std::string_view t_;
};

}  // namespace

bool ScanList(std::string_view text, ListLayout& out) {
  out = ListLayout{};
  return Scanner(text).Scan(out);
}

size_t ContainerEnd(std::string_view t, size_t p) {
  Brackets brackets;
  bool in_string = false, escaped = false;
  const size_t n = t.size();
  while (p < n) {
#if defined(__SSE2__)
    if (!escaped && n - p >= 16) {
      __m128i block = _mm_loadu_si128(reinterpret_cast<const __m128i*>(t.data() + p));
      if (Bits(block, '\\') == 0) {
        unsigned inside = PrefixXor(Bits(block, '"')) ^ (in_string ? 0xFFFFu : 0u);
        unsigned found = (Bits(block, '{') | Bits(block, '[') | Bits(block, '}') | Bits(block, ']')) & ~inside;
        for (; found; found &= found - 1) {
          size_t at = p + static_cast<size_t>(__builtin_ctz(found));
          switch (brackets.Take(t[at])) {
            case Brackets::Step::kOpen: break;
            case Brackets::Step::kClosedAll: return at + 1;
            case Brackets::Step::kMismatch: return npos;
          }
        }
        in_string = (inside >> 15) & 1u;
        p += 16;
        continue;
      }
    }
#endif
    char c = t[p++];
    if (in_string) {
      if (escaped)
        escaped = false;
      else if (c == '\\')
        escaped = true;
      else if (c == '"')
        in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (IsBracket(c)) {
      switch (brackets.Take(c)) {
        case Brackets::Step::kOpen: break;
        case Brackets::Step::kClosedAll: return p;
        case Brackets::Step::kMismatch: return npos;
      }
    }
  }
  return npos;
}

}  // namespace shmguard::io
