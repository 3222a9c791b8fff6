// GlobRegex: a policy glob read as fnmatch(3) reads it, as RE2.
#include "core/values/glob.h"

#include <array>

namespace shmguard {
namespace {

constexpr std::array<std::string_view, 12> kClasses = {"alnum", "alpha", "blank", "cntrl", "digit", "graph",
                                                       "lower", "print", "punct", "space", "upper", "xdigit"};

Error Bad(std::string_view glob, const std::string& why) {
  return MakeError(Code::kInvalidInput, "\"" + std::string(glob) + "\": " + why);
}

// `c` as a literal in RE2, outside or (`in_class`) inside a bracket expression.
void Literal(char c, bool in_class, std::string& out) {
  const std::string_view special = in_class ? "\\]^-[" : ".+*?()|{}[]^$\\";
  if (special.find(c) != std::string_view::npos) out += '\\';
  out += c;
}

// The bracket expression opening at glob[i] as an RE2 class into `out`; the index of its closing
// ']'. fnmatch(3)'s members: '!' or '^' negates, a ']' first is a member, ranges, escapes and the
// POSIX classes ([:alpha:]); collating elements are refused.
Result<size_t> Bracket(std::string_view glob, size_t i, std::string& out) {
  size_t j = i + 1;
  std::string set = "[";
  if (j < glob.size() && (glob[j] == '!' || glob[j] == '^')) {
    set += '^';
    ++j;
  }
  bool first = true, closed = false;
  int prev = -1;  // the last single member, for a range
  while (j < glob.size()) {
    char m = glob[j];
    if (m == ']' && !first) {
      closed = true;
      break;
    }
    first = false;
    if (m == '[' && j + 1 < glob.size() && (glob[j + 1] == '.' || glob[j + 1] == '=')) {
      return Bad(glob, "collating elements ([. .], [= =]) are not read");
    }
    if (m == '[' && j + 1 < glob.size() && glob[j + 1] == ':') {
      const size_t end = glob.find(":]", j + 2);
      if (end == std::string_view::npos) return Bad(glob, "a character class left open (\"[:\" without \":]\")");
      const std::string_view name = glob.substr(j + 2, end - j - 2);
      bool known = false;
      for (auto k : kClasses) known = known || k == name;
      if (!known) return Bad(glob, "unknown character class [:" + std::string(name) + ":]");
      set += "[:" + std::string(name) + ":]";
      j = end + 2;
      prev = -1;
      continue;
    }
    if (m == '\\') {
      if (j + 1 == glob.size()) return Bad(glob, "ends in a backslash");
      m = glob[++j];
    }
    if (m == '-' && prev >= 0 && j + 1 < glob.size() && glob[j + 1] != ']') {
      char hi = glob[j + 1];
      size_t next = j + 2;
      if (hi == '\\') {
        if (j + 2 == glob.size()) return Bad(glob, "ends in a backslash");
        hi = glob[j + 2];
        next = j + 3;
      }
      if (static_cast<unsigned char>(hi) < prev) {
        return Bad(glob, std::string("a reversed range ") + static_cast<char>(prev) + "-" + hi);
      }
      set += '-';
      Literal(hi, true, set);
      j = next;
      prev = -1;
      continue;
    }
    Literal(m, true, set);
    prev = static_cast<unsigned char>(m);
    ++j;
  }
  if (!closed) return Bad(glob, "a bracket expression left open (\"[\" without \"]\")");
  out += set + "]";
  return j;
}

}  // namespace

Result<std::string> GlobRegex(std::string_view glob) {
  for (char c : glob) {
    if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) > 0x7E) {
      return Bad(glob, "holds a byte that is not printable ASCII (namespace and resource names are ASCII)");
    }
  }
  std::string out = "^";
  for (size_t i = 0; i < glob.size(); ++i) {
    const char c = glob[i];
    if (c == '*') {
      out += ".*";
    } else if (c == '?') {
      out += '.';
    } else if (c == '\\') {
      if (i + 1 == glob.size()) return Bad(glob, "ends in a backslash");
      Literal(glob[++i], false, out);
    } else if (c != '[') {
      Literal(c, false, out);
    } else {
      auto end = Bracket(glob, i, out);
      if (!end) return end.error();
      i = *end;
    }
  }
  return out + "$";
}

}  // namespace shmguard
