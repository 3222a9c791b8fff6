// JsonToYaml through libyaml's emitter, which does the quoting and escaping; only the YAML 1.1
// typing is ours (NeedsQuotes).
#include "io/formats/yaml_emit.h"

#include <yaml.h>

#include <algorithm>
#include <optional>

#include "io/formats/yaml_scalar.h"
#include "io/words/printable.h"

namespace shmguard::io {
namespace {

using nlohmann::json;

// JSON -> YAML events for libyaml's emitter.
class Emitter {
 public:
  Emitter() {
    yaml_emitter_initialize(&e_);
    yaml_emitter_set_output(&e_, &Emitter::Write, &out_);
    yaml_emitter_set_indent(&e_, 2);
    yaml_emitter_set_width(&e_, -1);  // never fold long strings
    yaml_emitter_set_unicode(&e_, 1);
  }
  ~Emitter() { yaml_emitter_delete(&e_); }
  Emitter(const Emitter&) = delete;
  Emitter& operator=(const Emitter&) = delete;

  // The YAML text, or nullopt when libyaml refused (it checks UTF-8).
  std::optional<std::string> Document(const json& v) {
    yaml_event_t ev;
    yaml_stream_start_event_initialize(&ev, YAML_UTF8_ENCODING);
    Emit(ev);
    yaml_document_start_event_initialize(&ev, nullptr, nullptr, nullptr, 1);
    Emit(ev);
    Value(v);
    yaml_document_end_event_initialize(&ev, 1);
    Emit(ev);
    yaml_stream_end_event_initialize(&ev);
    Emit(ev);
    yaml_emitter_flush(&e_);
    if (!ok_) return std::nullopt;
    return out_;
  }

 private:
  static int Write(void* data, unsigned char* buffer, size_t size) {
    static_cast<std::string*>(data)->append(reinterpret_cast<const char*>(buffer), size);
    return 1;
  }

  // Emits an event its *_initialize call made; `made` is that call's result: 0 when it refused
  // (libyaml checks a scalar's UTF-8), and the event is then not initialised and never emitted.
  void Emit(yaml_event_t& ev, int made = 1) {  // the emitter owns and frees the event, even on failure
    if (!made || !ok_) {
      if (made) yaml_event_delete(&ev);
      ok_ = false;
      return;
    }
    if (!yaml_emitter_emit(&e_, &ev)) ok_ = false;
  }

  // A scalar; text that is not UTF-8 (a path, a name from a file) has its stray bytes replaced
  // by U+FFFD, as the JSON output has them, so the document stays YAML.
  void Scalar(std::string_view raw, yaml_scalar_style_t style) {
    std::string fixed;
    std::string_view text = raw;
    if (std::any_of(raw.begin(), raw.end(), [](char c) { return static_cast<unsigned char>(c) >= 0x80; })) {
      fixed = ValidUtf8(raw);
      text = fixed;
    }
    yaml_event_t ev;
    int made = yaml_scalar_event_initialize(&ev, nullptr, nullptr,
                                            reinterpret_cast<yaml_char_t*>(const_cast<char*>(text.data())),
                                            static_cast<int>(text.size()), 1, 1, style);
    Emit(ev, made);
  }

  void String(const std::string& s) {
    // A literal block reads back with one final newline ("clip"), so only strings that end in
    // exactly one newline use it; other multi-line strings are double-quoted with \n.
    bool literal = s.size() >= 2 && s.back() == '\n' && s[s.size() - 2] != '\n' &&
                   s.find_first_of("\t\r") == std::string::npos && s.front() != ' ';
    Scalar(s, literal          ? YAML_LITERAL_SCALAR_STYLE
              : NeedsQuotes(s) ? YAML_DOUBLE_QUOTED_SCALAR_STYLE
                               : YAML_PLAIN_SCALAR_STYLE);
  }

  void Value(const json& v) {
    yaml_event_t ev;
    switch (v.type()) {
      case json::value_t::object:
        yaml_mapping_start_event_initialize(&ev, nullptr, nullptr, 1, YAML_BLOCK_MAPPING_STYLE);
        Emit(ev);
        for (auto it = v.begin(); it != v.end(); ++it) {
          Scalar(it.key(), NeedsQuotes(it.key()) ? YAML_DOUBLE_QUOTED_SCALAR_STYLE : YAML_PLAIN_SCALAR_STYLE);
          Value(it.value());
        }
        yaml_mapping_end_event_initialize(&ev);
        Emit(ev);
        return;
      case json::value_t::array:
        yaml_sequence_start_event_initialize(&ev, nullptr, nullptr, 1, YAML_BLOCK_SEQUENCE_STYLE);
        Emit(ev);
        for (const auto& item : v) Value(item);
        yaml_sequence_end_event_initialize(&ev);
        Emit(ev);
        return;
      case json::value_t::string: return String(v.get_ref<const std::string&>());
      case json::value_t::null: return Scalar("null", YAML_PLAIN_SCALAR_STYLE);
      case json::value_t::boolean: return Scalar(v.get<bool>() ? "true" : "false", YAML_PLAIN_SCALAR_STYLE);
      default: return Scalar(v.dump(), YAML_PLAIN_SCALAR_STYLE);
    }
  }

  yaml_emitter_t e_;
  std::string out_;
  bool ok_ = true;
};

}  // namespace

std::string JsonToYaml(const json& value) {
  auto yaml = Emitter().Document(value);
  if (!yaml) return value.dump(2, ' ', false, json::error_handler_t::replace) + "\n";  // JSON is YAML too
  if (yaml->empty() || yaml->back() != '\n') *yaml += '\n';
  return *yaml;
}

}  // namespace shmguard::io
