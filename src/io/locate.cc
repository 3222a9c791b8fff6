// LocatePointers: one pass of libyaml's events over the document, tracking the JSON pointer of
// every node, keeping the positions of the nodes on the way to a wanted pointer.
#include "io/locate.h"

#include <yaml.h>

#include <map>

#include "shmguard/json_patch.h"

namespace shmguard::io {
namespace {

struct Frame {
  bool mapping = false;
  bool expect_key = true;  // mapping: the next node is a key
  std::string key;         // mapping: the current member's key
  yaml_mark_t key_mark{};  // and where the key is
  size_t index = 0;        // sequence: the next item's index
  std::string pointer;     // this container's own pointer
};

// True when `prefix` is `pointer` or one of its ancestors, token-wise.
bool IsPrefix(const std::string& prefix, const std::string& pointer) {
  return pointer.compare(0, prefix.size(), prefix) == 0 &&
         (pointer.size() == prefix.size() || pointer[prefix.size()] == '/');
}

}  // namespace

std::vector<TextPosition> LocatePointers(std::string_view text, const std::vector<std::string>& pointers,
                                         int first_line, int first_column) {
  std::map<std::string, yaml_mark_t> found;  // nodes on the way to a wanted pointer
  auto wanted = [&](const std::string& p) {
    for (const auto& w : pointers) {
      if (IsPrefix(p, w)) return true;
    }
    return false;
  };
  yaml_parser_t parser;
  if (!yaml_parser_initialize(&parser)) return std::vector<TextPosition>(pointers.size());
  yaml_parser_set_input_string(&parser, reinterpret_cast<const unsigned char*>(text.data()), text.size());
  std::vector<Frame> stack;
  bool done = false, root_seen = false;
  while (!done) {
    yaml_event_t e;
    if (!yaml_parser_parse(&parser, &e)) break;
    // A node starts: a scalar, a container or an alias. Which pointer is it, and where?
    const bool node = e.type == YAML_SCALAR_EVENT || e.type == YAML_MAPPING_START_EVENT ||
                      e.type == YAML_SEQUENCE_START_EVENT || e.type == YAML_ALIAS_EVENT;
    std::string pointer;
    bool is_key = false;
    if (node) {
      if (stack.empty()) {
        if (!root_seen) found[""] = e.start_mark;
        root_seen = true;
      } else if (Frame& top = stack.back(); top.mapping) {
        if (top.expect_key) {
          is_key = true;
          top.key = e.type == YAML_SCALAR_EVENT
                        ? std::string(reinterpret_cast<const char*>(e.data.scalar.value), e.data.scalar.length)
                        : std::string();
          top.key_mark = e.start_mark;
          top.expect_key = false;
        } else {
          pointer = top.pointer + "/" + EscapePointerToken(top.key);
          if (wanted(pointer)) found.emplace(pointer, top.key_mark);
          top.expect_key = true;
        }
      } else {
        pointer = top.pointer + "/" + std::to_string(top.index++);
        if (wanted(pointer)) found.emplace(pointer, e.start_mark);
      }
    }
    // Containers open and close; a key that is itself a container (rare) is walked past.
    if (e.type == YAML_MAPPING_START_EVENT || e.type == YAML_SEQUENCE_START_EVENT) {
      Frame f;
      f.mapping = e.type == YAML_MAPPING_START_EVENT;
      f.pointer = is_key ? std::string("/\x01") : pointer;  // a key container's members are nobody's
      stack.push_back(std::move(f));
    } else if (e.type == YAML_MAPPING_END_EVENT || e.type == YAML_SEQUENCE_END_EVENT) {
      if (!stack.empty()) stack.pop_back();
    } else if (e.type == YAML_DOCUMENT_END_EVENT || e.type == YAML_STREAM_END_EVENT) {
      done = true;
    }
    yaml_event_delete(&e);
  }
  yaml_parser_delete(&parser);

  std::vector<TextPosition> out;
  out.reserve(pointers.size());
  for (const auto& p : pointers) {
    TextPosition pos;
    // The pointer itself, else its nearest written ancestor.
    std::string at = p;
    while (true) {
      auto it = found.find(at);
      if (it != found.end()) {
        const yaml_mark_t& m = it->second;
        pos.line = first_line + static_cast<int>(m.line);
        pos.column = static_cast<int>(m.column) + 1 + (m.line == 0 ? first_column - 1 : 0);
        break;
      }
      if (at.empty()) break;
      at.erase(at.rfind('/'));
    }
    out.push_back(pos);
  }
  return out;
}

}  // namespace shmguard::io
