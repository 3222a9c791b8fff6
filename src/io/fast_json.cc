// ParseReviewPruned / ParseJsonPruned over simdjson's On-Demand API.
#include "io/fast_json.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include <simdjson.h>

#include "shmguard/relevant_fields.h"

namespace shmguard::io {
namespace {

using nlohmann::json;
namespace dom = simdjson::dom;

using Context = PruneContext;

bool RelevantEnv(dom::element item) {
  dom::object obj;
  std::string_view name;
  if (item.get_object().get(obj) || obj["name"].get_string().get(name)) return true;  // malformed: keep
  return IsRelevantEnvVar(name);
}

// Converts the (already validated) DOM into nlohmann::json; false when nested too deep.
bool Convert(dom::element v, Context ctx, int depth, json& out) {
  if (depth > kMaxJsonNesting) return false;
  switch (v.type()) {
    case dom::element_type::OBJECT: {
      out = json::object();
      for (dom::key_value_pair field : dom::object(v)) {
        if (!KeepMember(ctx, field.key)) continue;
        if (!Convert(field.value, MemberContext(ctx, field.key), depth + 1, out[std::string(field.key)])) return false;
      }
      return true;
    }
    case dom::element_type::ARRAY: {
      out = json::array();
      for (dom::element item : dom::array(v)) {
        if (ctx == Context::kEnv && !RelevantEnv(item)) continue;
        out.push_back(json());
        if (!Convert(item, ItemContext(ctx), depth + 1, out.back())) {
          return false;
        }
      }
      return true;
    }
    case dom::element_type::STRING:
      out = std::string(std::string_view(v));
      return true;
    case dom::element_type::INT64:
      out = int64_t(v);
      return true;
    case dom::element_type::UINT64:
      out = uint64_t(v);
      return true;
    case dom::element_type::DOUBLE:
      out = double(v);
      return true;
    case dom::element_type::BOOL:
      out = bool(v);
      return true;
    case dom::element_type::NULL_VALUE:
      out = nullptr;
      return true;
  }
  return true;
}

Error ParseError(simdjson::error_code err) {
  if (err == simdjson::DEPTH_ERROR) {
    return MakeError(Code::kInvalidInput, "JSON nested deeper than " + std::to_string(kMaxJsonNesting) + " levels");
  }
  return MakeError(Code::kInvalidInput, std::string("not valid JSON (") + simdjson::error_message(err) + ")");
}

dom::parser& Parser() {
  thread_local dom::parser parser;  // reused: its buffers grow to the largest document seen
  return parser;
}

// Parses `text` into this thread's parser (valid until its next parse). simdjson reads up to
// SIMDJSON_PADDING bytes past the end, so `text` is copied into a padded buffer first.
Result<dom::element> ParseDom(std::string_view text) {
  thread_local std::string copy;
  copy.reserve(text.size() + simdjson::SIMDJSON_PADDING);
  copy.assign(text.data(), text.size());
  dom::element doc;
  if (auto err = Parser().parse(copy.data(), text.size(), /*realloc_if_needed=*/false).get(doc); err) {
    return ParseError(err);
  }
  return doc;
}

// The pruned tree of a parsed value. `depth`: how deep it sits in its document (a List item is
// at 3), for the nesting limit.
Result<json> ToPruned(dom::element doc, Context root, int depth) {
  json out;
  if (!Convert(doc, root, depth, out)) return ParseError(simdjson::DEPTH_ERROR);
  return out;
}

Result<json> Parse(std::string_view text, Context root, int depth = 1) {
  auto doc = ParseDom(text);
  if (!doc) return doc.error();
  return ToPruned(*doc, root, depth);
}

// Finds the items of a List in the raw text without parsing it: strings (with their escapes)
// and brackets only, each item to be parsed on its own later — by simdjson, which validates
// it. So a List never needs a parse of the whole file in memory (2.5x its size) before the
// first item can go to a worker.
class ListScanner {
 public:
  explicit ListScanner(std::string_view t) : t_(t) {}

  // Fills the layout when the text is one object whose "items" is an array and whose "kind"
  // ends in "List"; false otherwise, and for any bracket or string that does not close.
  bool Scan(std::string& kind, std::string& api_version, std::vector<std::pair<size_t, size_t>>& items) {
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
          items.emplace_back(p, end);
          p = Space(end);
          if (At(p, ',')) p = Space(p + 1);
          else if (!At(p, ']')) return false;
        }
        p = Space(p + 1);
      } else {
        size_t end = Value(v);
        if (end == npos) return false;
        if ((key == "kind" || key == "apiVersion") && At(v, '"')) (key == "kind" ? kind : api_version) = Decode(v, end);
        p = Space(end);
      }
      if (At(p, ',')) p = Space(p + 1);
      else if (!At(p, '}')) return false;
    }
    return have_items && Space(p + 1) == t_.size() && kind.size() >= 4 && kind.compare(kind.size() - 4, 4, "List") == 0;
  }

 private:
  static constexpr size_t npos = std::string_view::npos;

  bool At(size_t p, char c) const { return p < t_.size() && t_[p] == c; }

  size_t Space(size_t p) const {
    while (p < t_.size() && (t_[p] == ' ' || t_[p] == '\n' || t_[p] == '\r' || t_[p] == '\t')) ++p;
    return p;
  }

  // The end of the string whose opening quote is at p, or npos.
  size_t String(size_t p) const {
    if (!At(p, '"')) return npos;
    for (size_t q = p + 1;;) {
      const void* hit = std::memchr(t_.data() + q, '"', t_.size() - q);
      if (!hit) return npos;
      size_t quote = static_cast<size_t>(static_cast<const char*>(hit) - t_.data());
      size_t backslashes = 0;
      while (quote - backslashes > p + 1 && t_[quote - backslashes - 1] == '\\') ++backslashes;
      if (backslashes % 2 == 0) return quote + 1;
      q = quote + 1;
    }
  }

  // The end of the value starting at p, or npos when a bracket or string does not close.
  size_t Value(size_t p) const {
    std::string open;  // the brackets still open, to check that each closes with its pair
    while (p < t_.size()) {
      char c = t_[p];
      if (c == '"') {
        p = String(p);
        if (p == npos) return npos;
      } else if (c == '{' || c == '[') {
        open += c;
        ++p;
      } else if (c == '}' || c == ']') {
        if (open.empty() || open.back() != (c == '}' ? '{' : '[')) return open.empty() ? p : npos;
        open.pop_back();
        ++p;
      } else if (open.empty() && (c == ',' || c == ' ' || c == '\n' || c == '\r' || c == '\t')) {
        return p;  // the end of a number or literal
      } else {
        ++p;
      }
      if (open.empty() && (c == '"' || c == '}' || c == ']')) return p;
    }
    return open.empty() ? p : npos;
  }

  // The text of the string [begin, end) with its escapes resolved ("" if they are invalid).
  std::string Decode(size_t begin, size_t end) const {
    std::string_view raw = t_.substr(begin + 1, end - begin - 2);
    if (raw.find('\\') == std::string_view::npos) return std::string(raw);
    auto decoded = json::parse(t_.substr(begin, end - begin), nullptr, /*allow_exceptions=*/false);
    return decoded.is_string() ? decoded.get<std::string>() : std::string();
  }

  std::string_view t_;
};

}  // namespace

Result<json> ParseReviewPruned(std::string_view text) { return Parse(text, Context::kReviewRoot); }

Result<json> ParseJsonPruned(std::string_view text) { return Parse(text, Context::kRoot); }

Result<bool> ForEachJsonObjectPruned(
    std::string_view text,
    const std::function<void(int, PendingObject&&, const std::string&, const std::string&)>& each) {
  std::string scanned_kind, scanned_api;
  std::vector<std::pair<size_t, size_t>> ranges;
  // An empty List has no item to hand out: it goes out whole below, so it is still a document.
  if (ListScanner(text).Scan(scanned_kind, scanned_api, ranges) && !ranges.empty()) {
    int index = 0;
    for (auto [begin, end] : ranges) {
      each(index++, [whole = text, begin = begin, end = end]() -> Result<json> {
        auto out = Parse(whole.substr(begin, end - begin), Context::kRoot, 3);
        if (!out) {  // name the line the item starts on
          auto line = 1 + std::count(whole.begin(), whole.begin() + static_cast<std::ptrdiff_t>(begin), '\n');
          return MakeError(Code::kInvalidInput, out.error().message, "line " + std::to_string(line));
        }
        return out;
      }, scanned_kind, scanned_api);
    }
    return true;
  }
  // Not a List, or one the scanner gave up on (a bracket that does not close, "items" twice):
  // simdjson parses it whole, and says what is wrong if anything is. The audit still finds a
  // List's items in the one object it gets.
  auto doc = ParseDom(text);
  if (!doc) return doc.error();
  Result<json> out = ToPruned(*doc, Context::kRoot, 1);  // now, while this thread's parse holds
  each(-1, [out = std::move(out)]() mutable { return std::move(out); }, "", "");
  return true;
}

}  // namespace shmguard::io
