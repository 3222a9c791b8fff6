// ParseJsonView / ParseJsonPruned / ForEachJsonObjectPruned over simdjson's DOM API.
#include "io/fast_json.h"

#include <simdjson.h>

#include <algorithm>
#include <cstring>
#include <string>

#include "io/json_list_scan.h"
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
    case dom::element_type::STRING: out = std::string(std::string_view(v)); return true;
    case dom::element_type::INT64: out = int64_t(v); return true;
    case dom::element_type::UINT64: out = uint64_t(v); return true;
    case dom::element_type::DOUBLE: out = double(v); return true;
    case dom::element_type::BOOL: out = bool(v); return true;
    case dom::element_type::NULL_VALUE: out = nullptr; return true;
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

Result<json> ParseJsonPruned(std::string_view text) { return Parse(text, Context::kRoot); }

Result<bool> ForEachJsonObjectPruned(
    std::string_view text,
    const std::function<void(int, PendingObject&&, const std::string&, const std::string&, const ObjectText&)>& each) {
  ListLayout list;
  // An empty List has no item to hand out: it goes out whole below, so it is still a document.
  if (ScanList(text, list) && !list.items.empty() && ValidOutsideItems(text, list)) {
    int index = 0;
    // Lines counted from one item to the next: once over the text, however many items.
    size_t counted = 0, line_start = 0;
    int line = 1;
    for (auto [begin, end] : list.items) {
      while (const void* nl = std::memchr(text.data() + counted, '\n', begin - counted)) {
        ++line;
        counted = line_start = static_cast<size_t>(static_cast<const char*>(nl) - text.data()) + 1;
      }
      counted = begin;
      const ObjectText where{text.substr(begin, end - begin), line, static_cast<int>(begin - line_start) + 1};
      each(
          index++,
          [item = where.text, first_line = line]() -> Result<json> {
            auto out = Parse(item, Context::kRoot, 3);
            if (!out) {  // name the line the item starts on
              return MakeError(Code::kInvalidInput, out.error().message, Location::Line(first_line));
            }
            return out;
          },
          list.kind, list.api_version, where);
    }
    return true;
  }
  // Not a List, or one the scanner gave up on (a bracket that does not close, "items" twice,
  // anything invalid around the items): simdjson parses it whole, and says what is wrong if
  // anything is. The audit still finds a List's items in the one object it gets.
  auto doc = ParseDom(text);
  if (!doc) return doc.error();
  Result<json> out = ToPruned(*doc, Context::kRoot, 1);  // now, while this thread's parse holds
  each(
      -1, [out = std::move(out)]() mutable { return std::move(out); }, "", "", ObjectText{text, 1, 1});
  return true;
}

}  // namespace shmguard::io
