// ParseYaml and ParseYamlAsText: libyaml's events -> JSON, with go-yaml v2's typing
// (io/yaml_scalar.h), merge keys, and the limits that stop hostile documents.
#include "io/yaml_json.h"

#include <yaml.h>

#include <algorithm>
#include <map>
#include <set>

#include "io/yaml_scalar.h"
#include "shmguard/json_node.h"
#include "shmguard/json_patch.h"
#include "shmguard/relevant_fields.h"

namespace shmguard::io {
namespace {

using nlohmann::json;
constexpr size_t kMaxNodes = 5'000'000;
constexpr size_t kMaxDepth = 128;  // as for JSON input; also stops an alias nested in its own anchor

// Builds JSON from libyaml's events. With `prune`, members the evaluation never reads
// (shmguard/relevant_fields.h) are skipped as they stream past rather than built and dropped.
class Builder {
 public:
  Builder(std::string_view text, int first_line, bool prune) : text_(text), first_line_(first_line), prune_(prune) {}
  // Scalars as written (see ParseYamlAsText), and the line of every node into `lines`.
  Builder(std::string_view text, std::map<std::string, int>* lines)
      : text_(text), first_line_(1), prune_(false), typed_(false), lines_(lines) {}

  Result<json> Run() {
    yaml_parser_t parser;
    if (!yaml_parser_initialize(&parser)) return MakeError(Code::kInternal, "libyaml: out of memory", Where(0));
    yaml_parser_set_input_string(&parser, reinterpret_cast<const unsigned char*>(text_.data()), text_.size());
    Result<json> out = json();
    for (bool done = false; !done;) {
      yaml_event_t event;
      if (!yaml_parser_parse(&parser, &event)) {
        out = SyntaxError(parser);
        break;
      }
      auto ok = Handle(event, done);
      yaml_event_delete(&event);
      if (!ok) {
        out = ok.error();
        break;
      }
    }
    yaml_parser_delete(&parser);
    if (out) out = std::move(root_);
    return out;
  }

  // True when a kept alias named an anchor inside a skipped member: parse again without pruning.
  bool NeedsFullParse() const { return needs_full_; }

 private:
  struct Frame {
    json value;
    bool is_map = false;
    PruneContext ctx = PruneContext::kOther;  // of this container's members or items
    std::string pointer;                      // kept only when recording lines
    std::string anchor;                       // set when this node is anchored (&name)
    size_t first_node = 0;
    std::string key;  // a mapping's pending key
    bool has_key = false, key_is_merge = false, skip_value = false;
    size_t key_line = 0;
    std::vector<std::pair<json, size_t>> merges;  // values of "<<" keys, with their lines
    std::vector<std::string> skipped;             // pruned keys, still checked for duplicates
  };

  Location Where(size_t line) const { return Location::Line(static_cast<int>(line) + first_line_); }

  Error Fail(const std::string& message, size_t line) const {
    return MakeError(Code::kInvalidInput, message, Where(line));
  }

  Error SyntaxError(const yaml_parser_t& p) const {
    std::string problem = p.problem ? p.problem : "syntax error";
    if (p.error == YAML_READER_ERROR) {  // bad bytes: libyaml gives an offset, not a line
      size_t offset = std::min(p.problem_offset, text_.size());
      size_t line = static_cast<size_t>(std::count(text_.begin(), text_.begin() + static_cast<long>(offset), '\n'));
      return Fail("invalid UTF-8 or control character (" + problem + ")", line);
    }
    std::string context = p.context ? std::string(" (") + p.context + ")" : "";
    // An error at the end of input is reported on the line after the document: clamp it.
    size_t last = static_cast<size_t>(std::count(text_.begin(), text_.end(), '\n'));
    if (last > 0 && text_.back() == '\n') --last;
    return Fail("YAML: " + problem + context, std::min(p.problem_mark.line, last));
  }

  static std::string_view Str(const yaml_char_t* s) { return s ? reinterpret_cast<const char*>(s) : ""; }

  bool ExpectingKey() const { return !stack_.empty() && stack_.back().is_map && !stack_.back().has_key; }

  Result<bool> Handle(const yaml_event_t& e, bool& done) {
    size_t line = e.start_mark.line;
    if (skip_depth_ > 0) return Skip(e);
    switch (e.type) {
      case YAML_DOCUMENT_END_EVENT:  // only the first document of the text (as go-yaml's Unmarshal)
      case YAML_STREAM_END_EVENT: done = true; return true;
      case YAML_SCALAR_EVENT: {
        std::string_view text(reinterpret_cast<const char*>(e.data.scalar.value), e.data.scalar.length);
        std::string_view anchor = Str(e.data.scalar.anchor);
        const char* tag = reinterpret_cast<const char*>(e.data.scalar.tag);
        bool plain = e.data.scalar.style == YAML_PLAIN_SCALAR_STYLE;
        auto counted = CountNode(line);
        if (!counted) return counted;
        if (ExpectingKey()) {
          if (!anchor.empty()) Remember(anchor, json(text), 1);
          return Key(text, plain && !tag && text == "<<", line);
        }
        if (SkippingValue()) return SkipScalar(anchor);
        RecordLine(line);
        json value = typed_ ? ScalarValue(text, tag, plain) : TextValue(text, tag, plain);
        if (!anchor.empty()) Remember(anchor, value, 1);
        return Add(std::move(value), line);
      }
      case YAML_SEQUENCE_START_EVENT:
      case YAML_MAPPING_START_EVENT: {
        bool is_map = e.type == YAML_MAPPING_START_EVENT;
        if (ExpectingKey()) {
          return Fail("mapping key is not a plain value (an unrendered template such as {{ x }}?)", line);
        }
        if (stack_.size() >= kMaxDepth) {
          return Fail("nested deeper than " + std::to_string(kMaxDepth) + " levels", line);
        }
        auto counted = CountNode(line);
        if (!counted) return counted;
        std::string_view anchor = Str(is_map ? e.data.mapping_start.anchor : e.data.sequence_start.anchor);
        if (SkippingValue()) return Skip(e);
        Frame f;
        f.is_map = is_map;
        f.value = is_map ? json::object() : json::array();
        if (lines_) f.pointer = RecordLine(line);
        f.ctx = stack_.empty()         ? PruneContext::kRoot
                : stack_.back().is_map ? MemberContext(stack_.back().ctx, stack_.back().key)
                                       : ItemContext(stack_.back().ctx);
        f.first_node = nodes_;
        if (!anchor.empty()) {
          f.anchor = anchor;
          open_anchors_.insert(f.anchor);
        }
        stack_.push_back(std::move(f));
        return true;
      }
      case YAML_SEQUENCE_END_EVENT:
      case YAML_MAPPING_END_EVENT: {
        Frame f = std::move(stack_.back());
        stack_.pop_back();
        if (f.is_map) {
          auto merged = ApplyMerges(f);
          if (!merged) return merged;
        }
        if (!f.anchor.empty()) {
          open_anchors_.erase(f.anchor);
          Remember(f.anchor, f.value, nodes_ - f.first_node + 1);
        }
        if (prune_ && f.is_map && !stack_.empty() && stack_.back().ctx == PruneContext::kEnv) {
          JsonNode name = JsonNode(f.value).Find("name");
          if (name.IsString() && !IsRelevantEnvVar(name.String())) return true;
        }
        return Add(std::move(f.value), line);
      }
      case YAML_ALIAS_EVENT: {
        std::string name(Str(e.data.alias.anchor));
        if (ExpectingKey()) return Fail("mapping key is an alias (*" + name + "): write the key out", line);
        auto checked = CheckAlias(name, line);
        if (!checked) return checked;
        if (SkippingValue()) return SkipScalar("");
        auto it = anchors_.find(name);
        if (it == anchors_.end()) {  // its anchor was inside a skipped member
          needs_full_ = true;
          return MakeError(Code::kInternal, "an alias of a pruned anchor", Where(line));
        }
        nodes_ += it->second.second;
        if (nodes_ > kMaxNodes) return Fail("document expands to more than 5 million nodes (alias bomb?)", line);
        RecordLine(line);
        return Add(it->second.first, line);
      }
      default:  // stream and document start
        return true;
    }
  }

  // A mapping key: pruned members have their value skipped; every key is checked for duplicates.
  Result<bool> Key(std::string_view text, bool merge, size_t line) {
    Frame& f = stack_.back();
    f.key.assign(text);
    f.has_key = true;
    f.key_is_merge = merge;
    f.key_line = line;
    if (prune_ && !merge && !KeepMember(f.ctx, f.key)) {
      if (std::find(f.skipped.begin(), f.skipped.end(), f.key) != f.skipped.end()) {
        return Fail("duplicate key \"" + f.key + "\"", line);
      }
      f.skipped.push_back(f.key);
      f.skip_value = true;
    }
    return true;
  }

  bool SkippingValue() const { return !stack_.empty() && stack_.back().skip_value; }

  // The skipped value was one scalar or alias.
  Result<bool> SkipScalar(std::string_view anchor) {
    if (!anchor.empty()) Forget(anchor);
    stack_.back().skip_value = stack_.back().has_key = false;
    return true;
  }

  // Inside a skipped value: only nesting (to find its end) and anchors (a later alias of one
  // needs the full parse) matter.
  Result<bool> Skip(const yaml_event_t& e) {
    switch (e.type) {
      case YAML_SEQUENCE_START_EVENT:
      case YAML_MAPPING_START_EVENT: {
        std::string_view anchor =
            Str(e.type == YAML_MAPPING_START_EVENT ? e.data.mapping_start.anchor : e.data.sequence_start.anchor);
        ++skip_depth_;
        if (!anchor.empty()) {  // open until its end, so that an alias inside it is a cycle
          Forget(anchor);
          open_anchors_.insert(std::string(anchor));
          skipped_open_.emplace_back(skip_depth_, std::string(anchor));
        }
        return true;
      }
      case YAML_SEQUENCE_END_EVENT:
      case YAML_MAPPING_END_EVENT:
        if (!skipped_open_.empty() && skipped_open_.back().first == skip_depth_) {
          open_anchors_.erase(skipped_open_.back().second);
          skipped_open_.pop_back();
        }
        if (--skip_depth_ == 0) stack_.back().skip_value = stack_.back().has_key = false;
        return true;
      case YAML_SCALAR_EVENT: Forget(Str(e.data.scalar.anchor)); return true;
      case YAML_ALIAS_EVENT: return CheckAlias(Str(e.data.alias.anchor), e.start_mark.line);
      default: return true;
    }
  }

  // The errors an alias gives whether or not its value is skipped, so that pruning never
  // changes what parses.
  Result<bool> CheckAlias(std::string_view anchor, size_t line) {
    std::string name(anchor);
    if (open_anchors_.count(name)) return Fail("alias *" + name + " is inside its own anchor (a cycle)", line);
    if (!anchors_.count(name) && !pruned_anchors_.count(name)) return Fail("unknown anchor *" + name, line);
    return true;
  }

  Result<bool> CountNode(size_t line) {
    if (++nodes_ > kMaxNodes) return Fail("document expands to more than 5 million nodes (alias bomb?)", line);
    return true;
  }

  void Remember(std::string_view anchor, const json& value, size_t nodes) {
    std::string name(anchor);
    pruned_anchors_.erase(name);
    anchors_[name] = {value, nodes};  // a later anchor of the same name replaces it, as in YAML
  }

  void Forget(std::string_view anchor) {
    if (anchor.empty()) return;
    std::string name(anchor);
    anchors_.erase(name);
    pruned_anchors_.insert(name);
  }

  // Records the line of the node about to be added (a member's: its key's) under its JSON
  // pointer, and returns the pointer.
  std::string RecordLine(size_t line) {
    if (!lines_) return {};
    std::string pointer;
    if (!stack_.empty()) {
      const Frame& f = stack_.back();
      pointer = f.pointer + "/" + (f.is_map ? EscapePointerToken(f.key) : std::to_string(f.value.size()));
      if (f.is_map) line = f.key_line;
    }
    (*lines_)[pointer] = static_cast<int>(line) + first_line_;
    return pointer;
  }

  static json TextValue(std::string_view text, const char* tag, bool plain) {
    if (!tag && plain && ResolvePlainScalar(text).is_null()) return nullptr;
    return json(text);
  }

  static json ScalarValue(std::string_view text, const char* tag, bool plain) {
    if (!tag) return plain ? ResolvePlainScalar(text) : json(text);
    std::string_view t(tag);
    if (t == "tag:yaml.org,2002:int" || t == "tag:yaml.org,2002:float" || t == "tag:yaml.org,2002:bool" ||
        t == "tag:yaml.org,2002:null") {
      return ResolvePlainScalar(text);
    }
    return json(text);  // "!", !!str and custom tags: the text
  }

  Result<bool> Add(json value, size_t line) {
    if (stack_.empty()) {
      root_ = std::move(value);
      return true;
    }
    Frame& f = stack_.back();
    if (!f.is_map) {
      f.value.push_back(std::move(value));
      return true;
    }
    f.has_key = false;
    if (f.key_is_merge) {
      f.merges.emplace_back(std::move(value), line);
      return true;
    }
    bool fresh = f.value.get_ref<json::object_t&>().try_emplace(f.key, std::move(value)).second;
    if (!fresh || (!f.skipped.empty() && std::find(f.skipped.begin(), f.skipped.end(), f.key) != f.skipped.end())) {
      return Fail("duplicate key \"" + f.key + "\"", f.key_line);
    }
    return true;
  }

  // YAML merge keys: explicit keys win over merged ones, and earlier sources over later ones.
  Result<bool> ApplyMerges(Frame& f) {
    auto& out = f.value.get_ref<json::object_t&>();
    for (auto& [m, line] : f.merges) {
      std::vector<json*> sources;
      if (m.is_array()) {
        for (auto& s : m) sources.push_back(&s);
      } else {
        sources.push_back(&m);
      }
      for (json* s : sources) {
        if (!s->is_object()) return Fail("merge key \"<<\" needs a mapping", line);
        for (auto& [k, v] : s->get_ref<json::object_t&>()) {
          if (!prune_ || KeepMember(f.ctx, k)) out.emplace(k, v);
        }
      }
    }
    return true;
  }

  std::string_view text_;
  int first_line_;
  bool prune_;
  bool typed_ = true;
  std::map<std::string, int>* lines_ = nullptr;
  std::vector<Frame> stack_;
  json root_;
  std::map<std::string, std::pair<json, size_t>> anchors_;
  std::set<std::string> open_anchors_, pruned_anchors_;
  size_t nodes_ = 0;
  int skip_depth_ = 0;                                     // > 0 inside a skipped container
  std::vector<std::pair<int, std::string>> skipped_open_;  // anchored skipped containers, by depth
  bool needs_full_ = false;
};

}  // namespace

int YamlText::Line(std::string pointer) const {
  for (;;) {
    auto it = lines.find(pointer);
    if (it != lines.end()) return it->second;
    if (pointer.empty()) return 1;
    pointer.erase(pointer.rfind('/'));  // an alias's copy has no lines of its own: its parent's
  }
}

Result<YamlText> ParseYamlAsText(std::string_view text) {
  YamlText out;
  auto value = Builder(text, &out.lines).Run();
  if (!value) return value.error();
  out.value = std::move(*value);
  return out;
}

Result<json> ParseYaml(std::string_view text, int first_line, bool prune) {
  if (prune) {
    Builder pruned(text, first_line, true);
    auto out = pruned.Run();
    if (!pruned.NeedsFullParse()) return out;
  }
  return Builder(text, first_line, false).Run();
}

}  // namespace shmguard::io
