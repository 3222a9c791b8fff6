// HTTP/1.1 message framing for the webhook transport, without sockets: parsing a request head
// from received bytes, and writing a response. Pure functions, tested by table.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace shmguard::http {

struct HttpRequest {
  std::string_view method;        // "POST"
  std::string_view target;        // "/mutate?timeout=10s"
  std::string_view path;          // "/mutate"
  std::string_view content_type;  // header value, "" when absent
  std::string_view body;
  bool body_padded = false;  // io::kJsonReadAhead readable bytes follow the body
  bool http10 = false;
};

struct HttpResponse {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;  // extra headers, e.g. Allow
};

struct RequestHead {
  HttpRequest request;           // body not set: it follows the head
  bool keep_alive = true;        // HTTP/1.1 unless "Connection: close"; 1.0 only if asked
  bool expect_continue = false;  // "Expect: 100-continue"
  size_t content_length = 0;
  size_t head_bytes = 0;  // request line + headers + the blank line
};

struct HeadParse {
  enum class Status { kIncomplete, kComplete, kError } status = Status::kIncomplete;
  RequestHead head;      // kComplete
  int error_status = 0;  // kError: 400, 411, 413 or 431
  std::string error;     // kError: for the response body
};

inline constexpr int kMaxHeaderFields = 100;

// Parses the head at the start of `received`, strictly per RFC 9112. kIncomplete until the
// blank line arrives; kError (400) at once for a bare LF or CR, and for a request line other than
// METHOD SP /origin-form SP HTTP/1.0|1.1, a header field with whitespace before its colon, obsolete
// line folding, a control byte in a value, Content-Length values that differ or are not digits,
// Transfer-Encoding with Content-Length, more than one Host; 411 for a chunked body without
// Content-Length; 413 for a Content-Length over `max_body_bytes`; 431 for a head over
// `max_header_bytes` or more than kMaxHeaderFields fields. Views in the result point into
// `received`.
HeadParse ParseRequestHead(std::string_view received, size_t max_header_bytes, size_t max_body_bytes);

// Appends "HTTP/1.1 <status> <reason>", Content-Type, Content-Length, the extra headers,
// "Connection: close" when `close`, and the body.
void AppendResponse(std::string& out, const HttpResponse& response, bool close);

// A plain-text error response that closes the connection.
void AppendError(std::string& out, int status, const std::string& message);

}  // namespace shmguard::http
