// CompactJson and JsonQuoted: the text json::dump(-1, ' ', false, error_handler_t::replace)
// gives, byte for byte, written faster for every admission response, patch and decision log line. nlohmann's serializer
// decodes every byte of every string as UTF-8 to decide its escape; a patch is mostly plain
// ASCII (pointers, names, quantities, the plan annotation), a third of a JobSet's decision.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace shmguard {

// `value` as compact JSON text. Strings of printable ASCII are copied with '"' and '\' escaped;
// any other string (control characters, UTF-8, invalid bytes) and every float go through
// nlohmann's serializer, so the output never differs from dump()'s.
std::string CompactJson(const nlohmann::json& value);

// `s` as a JSON string literal, quoted and escaped: CompactJson(json(s)) without the copy.
// "say \"hi\"" for `say "hi"`; invalid UTF-8 becomes U+FFFD as dump's `replace` makes it.
std::string JsonQuoted(std::string_view s);
// The same, appended to `out`.
void AppendJsonQuoted(std::string_view s, std::string& out);

}  // namespace shmguard
