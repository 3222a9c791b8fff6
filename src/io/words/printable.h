// Text from outside (paths, object names, uids, kinds, metrics from another process) made safe to
// print: valid UTF-8 for the formats that require it (YAML, XML, JSON), and no control character
// where a person or a log reader reads lines (a newline in a uid would forge a log line; an ESC
// would drive the terminal).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace shmguard::io {

// `text` with every byte that does not belong to a valid UTF-8 sequence replaced by U+FFFD, as
// the WHATWG decoder and nlohmann's error_handler_t::replace do; valid text comes back as is.
std::string ValidUtf8(std::string_view text);

// `text` for a line of text: valid UTF-8 as ValidUtf8 gives it, with every control character
// (C0, DEL, C1) written as \xNN and a backslash as \\, cut to at most `max_bytes` bytes (never
// inside a character) with "..." after it when it was longer.
std::string Printable(std::string_view text, size_t max_bytes = std::string_view::npos);

// `text` as ValidUtf8 gives it, cut to at most `max_bytes` bytes (never inside a character) with
// "..." after it when it was longer: for fields of JSON lines, which escape control characters
// themselves.
std::string CutUtf8(std::string_view text, size_t max_bytes);

}  // namespace shmguard::io
