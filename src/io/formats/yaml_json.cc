// ParseYaml and ParseYamlAsText: libyaml's events -> a Tape, with go-yaml v2's typing
// (io/yaml_scalar.h), merge keys, and the limits that stop hostile documents.
#include "io/formats/yaml_json.h"

#include <yaml.h>

#include <algorithm>
#include <map>
#include <set>

#include "io/formats/yaml_scalar.h"

namespace shmguard::io {
namespace {

using nlohmann::json;
constexpr size_t kMaxNodes = 5'000'000;
constexpr size_t kMaxDepth = 128;  // as for JSON input; also stops an alias nested in its own anchor

// go-yaml's limit on what aliases may add to a document (gopkg.in/yaml.v2 and v3 decode.go,
// allowedAliasRatio; kubectl's reader refuses what it refuses): past 100 nodes from aliases and
// 1,000 in all, the share from aliases may be 99% up to 400,000 nodes, falling evenly to 10% at
// 4,000,000. So a document grows through aliases to at most 100 times the nodes it writes out
// (and to 400,000 nodes, some 9 MB of tape, before that share falls), where the node cap alone
// let a few hundred bytes reach 5 million nodes (110 MB per parsing thread).
bool ExcessiveAliasing(size_t alias_nodes, size_t nodes) {
  if (alias_nodes <= 100 || nodes <= 1000) return false;
  constexpr double kLow = 400'000, kHigh = 4'000'000;
  const double n = static_cast<double>(nodes);
  const double allowed = n <= kLow ? 0.99 : n >= kHigh ? 0.10 : 0.99 - 0.89 * (n - kLow) / (kHigh - kLow);
  return static_cast<double>(alias_nodes) / n > allowed;
}

// Builds the tape from libyaml's events.
class Builder {
 public:
  Builder(std::string_view text, int first_line, bool typed) : text_(text), first_line_(first_line), typed_(typed) {}

  Result<Tape> Run() {
    yaml_parser_t parser;
    if (!yaml_parser_initialize(&parser)) return MakeError(Code::kInternal, "libyaml: out of memory", Where(0));
    yaml_parser_set_input_string(&parser, reinterpret_cast<const unsigned char*>(text_.data()), text_.size());
    Result<bool> ok = true;
    for (bool done = false; !done;) {
      yaml_event_t event;
      if (!yaml_parser_parse(&parser, &event)) {
        ok = SyntaxError(parser);
        break;
      }
      ok = Handle(event, done);
      yaml_event_delete(&event);
      if (!ok) break;
    }
    yaml_parser_delete(&parser);
    if (!ok) return ok.error();
    if (tape_.size() == 1) tape_.Null({first_line_, 1});  // only the root word: no document, null as in go-yaml
    return tape_.Finish();
  }

 private:
  struct Frame {
    bool is_map = false;
    size_t begin = 0;  // the container's first word
    std::string anchor;
    size_t first_node = 0;
    bool has_key = false, key_is_merge = false;
    size_t key_line = 0;
    TextPosition key_at;                                  // where the pending key is
    std::string key;                                      // the pending key, for its errors
    std::set<std::string, std::less<>> keys;              // a mapping's keys so far
    std::vector<std::pair<TapeFragment, size_t>> merges;  // values of "<<" keys, with their lines
  };
  struct Anchor {
    TapeFragment value;
    size_t nodes = 0;
  };

  Location Where(size_t line) const { return Location::Line(static_cast<int>(line) + first_line_); }
  TextPosition At(const yaml_mark_t& m) const {
    return {static_cast<int>(m.line) + first_line_, static_cast<int>(m.column) + 1};
  }

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
        if (ExpectingKey()) return Key(text, plain && !tag && text == "<<", anchor, e.start_mark);
        const size_t begin = tape_.size();
        Scalar(text, tag, plain, At(e.start_mark));
        if (!anchor.empty()) Remember(anchor, tape_.CopyOut(begin), 1);
        return Added(begin);
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
        Frame f;
        f.is_map = is_map;
        f.begin = tape_.size();
        f.first_node = nodes_;
        if (!anchor.empty()) {
          f.anchor = anchor;
          open_anchors_.insert(f.anchor);
        }
        if (is_map) {
          tape_.StartObject(At(e.start_mark));
        } else {
          tape_.StartArray(At(e.start_mark));
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
        tape_.End();
        if (!f.anchor.empty()) {
          open_anchors_.erase(f.anchor);
          Remember(f.anchor, tape_.CopyOut(f.begin), nodes_ - f.first_node + 1);
        }
        return Added(f.begin);
      }
      case YAML_ALIAS_EVENT: {
        std::string name(Str(e.data.alias.anchor));
        if (ExpectingKey()) return Fail("mapping key is an alias (*" + name + "): write the key out", line);
        if (open_anchors_.count(name)) return Fail("alias *" + name + " is inside its own anchor (a cycle)", line);
        auto it = anchors_.find(name);
        if (it == anchors_.end()) return Fail("unknown anchor *" + name, line);
        nodes_ += it->second.nodes;
        alias_nodes_ += it->second.nodes;
        if (nodes_ > kMaxNodes) return Fail("document expands to more than 5 million nodes (alias bomb?)", line);
        if (ExcessiveAliasing(alias_nodes_, nodes_)) {
          return Fail("document contains excessive aliasing: " + std::to_string(alias_nodes_) + " of its " +
                          std::to_string(nodes_) + " nodes come from aliases (kubectl refuses it too)",
                      line);
        }
        const size_t begin = tape_.size();
        // What is inside the copy is located where the alias is written: at its member's key, or
        // at the alias itself in a list or at the root.
        const bool member = !stack_.empty() && stack_.back().is_map;
        const TapeFragment& value = it->second.value;
        tape_.Paste(value, 0, value.words.size(), member ? stack_.back().key_at : At(e.start_mark));
        return Added(begin);
      }
      default:  // stream and document start
        return true;
    }
  }

  // A mapping key, checked for duplicates; "<<" waits for its value (a merge).
  Result<bool> Key(std::string_view text, bool merge, std::string_view anchor, const yaml_mark_t& mark) {
    Frame& f = stack_.back();
    f.key.assign(text);
    f.has_key = true;
    f.key_is_merge = merge;
    f.key_line = mark.line;
    f.key_at = At(mark);
    if (merge) return true;
    if (!f.keys.insert(f.key).second) return Fail("duplicate key \"" + f.key + "\"", mark.line);
    const size_t begin = tape_.size();
    tape_.Key(text, At(mark));
    if (!anchor.empty()) Remember(anchor, tape_.CopyOut(begin), 1);
    return true;
  }

  // A scalar, typed as go-yaml types it (or, untyped, as written).
  void Scalar(std::string_view text, const char* tag, bool plain, TextPosition at) {
    const bool resolve = tag ? IsTypedTag(tag) : plain;
    if (!resolve) return tape_.String(text, at);
    // Only short words (null, bools) and what starts like a number resolve to anything else.
    const char c = text.empty() ? 0 : text[0];
    if (text.size() > 5 && !(std::isdigit(static_cast<unsigned char>(c)) || c == '-' || c == '+' || c == '.')) {
      return tape_.String(text, at);
    }
    json v = ResolvePlainScalar(text);
    if (!typed_) return v.is_null() ? tape_.Null(at) : tape_.String(text, at);
    switch (v.type()) {
      case json::value_t::null: return tape_.Null(at);
      case json::value_t::boolean: return tape_.Bool(v.get<bool>(), at);
      case json::value_t::number_integer: return tape_.Int64(v.get<int64_t>(), at);
      case json::value_t::number_unsigned: return tape_.Uint64(v.get<uint64_t>(), at);
      case json::value_t::number_float: return tape_.Double(v.get<double>(), at);
      default: return tape_.String(text, at);
    }
  }

  // !!int, !!float, !!bool and !!null resolve as a plain scalar would; "!", !!str and custom
  // tags are the text.
  static bool IsTypedTag(std::string_view t) {
    return t == "tag:yaml.org,2002:int" || t == "tag:yaml.org,2002:float" || t == "tag:yaml.org,2002:bool" ||
           t == "tag:yaml.org,2002:null";
  }

  Result<bool> CountNode(size_t line) {
    if (++nodes_ > kMaxNodes) return Fail("document expands to more than 5 million nodes (alias bomb?)", line);
    return true;
  }

  void Remember(std::string_view anchor, TapeFragment&& value, size_t nodes) {
    anchors_[std::string(anchor)] = {std::move(value), nodes};  // a later anchor of the same name replaces it
  }

  // A value starting at word `begin` was added: it ends its member, or is the value of a merge
  // key, taken off the tape until the mapping ends.
  Result<bool> Added(size_t begin) {
    if (stack_.empty() || !stack_.back().is_map) return true;
    Frame& f = stack_.back();
    f.has_key = false;
    if (f.key_is_merge) f.merges.emplace_back(tape_.Cut(begin), f.key_line);
    return true;
  }

  // YAML merge keys: explicit keys win over merged ones, and earlier sources over later ones.
  Result<bool> ApplyMerges(Frame& f) {
    for (const auto& [m, line] : f.merges) {
      std::vector<size_t> sources;  // the words of the mappings to merge
      if (TapeBuilder::Type(m, 0) == '[') {
        for (size_t i = 1; TapeBuilder::Type(m, i) != ']'; i = TapeBuilder::After(m, i)) sources.push_back(i);
      } else {
        sources.push_back(0);
      }
      for (size_t s : sources) {
        if (TapeBuilder::Type(m, s) != '{') return Fail("merge key \"<<\" needs a mapping", line);
        for (size_t k = s + 1; TapeBuilder::Type(m, k) != '}'; k = TapeBuilder::After(m, k + 1)) {
          if (!f.keys.emplace(tape_.StringOf(m, k)).second) continue;
          tape_.Paste(m, k, TapeBuilder::After(m, k + 1), {});
        }
      }
    }
    return true;
  }

  std::string_view text_;
  int first_line_;
  bool typed_;
  TapeBuilder tape_;
  std::vector<Frame> stack_;
  std::map<std::string, Anchor> anchors_;
  std::set<std::string> open_anchors_;
  size_t nodes_ = 0;
  size_t alias_nodes_ = 0;  // of nodes_, those aliases copied
};

}  // namespace

Result<YamlText> ParseYamlAsText(std::string_view text) {
  auto tape = Builder(text, 1, false).Run();
  if (!tape) return tape.error();
  return YamlText{std::move(*tape)};
}

Result<Tape> ParseYaml(std::string_view text, int first_line) { return Builder(text, first_line, true).Run(); }

}  // namespace shmguard::io
