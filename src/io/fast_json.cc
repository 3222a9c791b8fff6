// ParseReviewPruned / ParseJsonPruned over simdjson's On-Demand API.
#include "io/fast_json.h"

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

Result<json> Parse(std::string_view text, Context root) {
  thread_local std::string padded;  // simdjson reads up to SIMDJSON_PADDING bytes past the end
  if (padded.capacity() < text.size() + simdjson::SIMDJSON_PADDING) padded.reserve(text.size() + simdjson::SIMDJSON_PADDING);
  padded.assign(text.data(), text.size());
  dom::element doc;
  if (auto err = Parser().parse(padded.data(), padded.size(), /*realloc_if_needed=*/false).get(doc); err) {
    return ParseError(err);
  }
  json out;
  if (!Convert(doc, root, 1, out)) {
    return MakeError(Code::kInvalidInput, "JSON nested deeper than " + std::to_string(kMaxJsonNesting) + " levels");
  }
  return out;
}

}  // namespace

Result<json> ParseReviewPruned(std::string_view text) { return Parse(text, Context::kReviewRoot); }

Result<json> ParseJsonPruned(std::string_view text) { return Parse(text, Context::kRoot); }

Result<bool> ForEachJsonObjectPruned(
    const std::string& text,
    const std::function<void(int, PendingObject&&, const std::string&, const std::string&)>& each) {
  bool padded = text.capacity() >= text.size() + simdjson::SIMDJSON_PADDING;
  dom::element doc;
  if (auto err = Parser().parse(text.data(), text.size(), /*realloc_if_needed=*/!padded).get(doc); err) {
    return ParseError(err);
  }
  std::string_view kind, api_version;
  dom::array items;
  bool is_list = doc.is_object() && !doc["kind"].get_string().get(kind) && kind.size() >= 4 &&
                 kind.substr(kind.size() - 4) == "List" && !doc["items"].get_array().get(items);
  auto pending = [](dom::element e, int depth) -> PendingObject {
    return [e, depth]() -> Result<json> {
      json out;
      if (!Convert(e, Context::kRoot, depth, out)) return ParseError(simdjson::DEPTH_ERROR);
      return out;
    };
  };
  if (!is_list) {
    each(-1, pending(doc, 1), "", "");
    return true;
  }
  if (doc["apiVersion"].get_string().get(api_version)) api_version = "";
  std::string list_kind(kind), list_api(api_version);
  int index = 0;
  for (dom::element item : items) each(index++, pending(item, 3), list_kind, list_api);
  return true;
}

}  // namespace shmguard::io
