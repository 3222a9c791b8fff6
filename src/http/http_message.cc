// ParseRequestHead, AppendResponse.
#include "http/http_message.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <optional>

namespace shmguard::http {
namespace {

const char* Reason(int status) {
  switch (status) {
    case 100: return "Continue";
    case 200: return "OK";
    case 400: return "Bad Request";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 408: return "Request Timeout";
    case 411: return "Length Required";
    case 413: return "Payload Too Large";
    case 415: return "Unsupported Media Type";
    case 431: return "Request Header Fields Too Large";
    case 500: return "Internal Server Error";
    case 503: return "Service Unavailable";
  }
  return "Status";
}

// Byte classes of the head, one table lookup each (RFC 9110 §5.6.2 tchar; §5.5 field values:
// no control byte but HTAB).
enum : unsigned char { kToken = 1, kFieldValue = 2 };
constexpr std::array<unsigned char, 256> kByteClass = [] {
  std::array<unsigned char, 256> t{};
  for (int c = 0; c < 256; ++c) {
    bool alnum = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
    bool token = alnum || std::string_view("!#$%&'*+-.^_`|~").find(static_cast<char>(c)) != std::string_view::npos;
    bool value = (c >= 0x20 && c != 0x7f) || c == '\t';
    t[c] = static_cast<unsigned char>((token ? kToken : 0) | (value ? kFieldValue : 0));
  }
  return t;
}();

bool All(std::string_view s, unsigned char cls) {
  for (char c : s) {
    if (!(kByteClass[static_cast<unsigned char>(c)] & cls)) return false;
  }
  return true;
}

// ASCII case-insensitive equality; `lower` is lower case already.
bool EqualsNoCase(std::string_view a, std::string_view lower) {
  if (a.size() != lower.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    char c = a[i];
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    if (c != lower[i]) return false;
  }
  return true;
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// Content-Length: 1*DIGIT, or a list of identical values ("5, 5"), at most 12 digits.
std::optional<size_t> ParseContentLength(std::string_view value) {
  std::optional<size_t> out;
  while (true) {
    size_t comma = value.find(',');
    std::string_view item = Trim(value.substr(0, comma));
    if (item.empty() || item.size() > 12) return std::nullopt;
    size_t n = 0;
    for (char ch : item) {
      if (ch < '0' || ch > '9') return std::nullopt;
      n = n * 10 + static_cast<size_t>(ch - '0');
    }
    if (out && *out != n) return std::nullopt;
    out = n;
    if (comma == std::string_view::npos) return out;
    value.remove_prefix(comma + 1);
  }
}

HeadParse Error(int status, std::string message) {
  HeadParse p;
  p.status = HeadParse::Status::kError;
  p.error_status = status;
  p.error = std::move(message);
  return p;
}

}  // namespace

HeadParse ParseRequestHead(std::string_view received, size_t max_header_bytes, size_t max_body_bytes) {
  // Lines end in CRLF (RFC 9112 §2.2): a bare LF or CR is refused as soon as it arrives, rather
  // than waiting for a blank line that a client using bare LFs never sends.
  size_t head_end = received.find("\r\n\r\n");
  std::string_view scanned = received.substr(0, head_end == std::string_view::npos ? received.size() : head_end + 4);
  // memchr from one line end to the next: a head is a few hundred bytes and ten lines.
  const char* begin = scanned.data();
  const char* end = begin + scanned.size();
  for (const char* lf = begin; (lf = static_cast<const char*>(std::memchr(lf, '\n', end - lf))); ++lf) {
    if (lf == begin || lf[-1] != '\r') return Error(400, "bare LF: lines must end in CRLF");
  }
  for (const char* cr = begin; (cr = static_cast<const char*>(std::memchr(cr, '\r', end - cr))); ++cr) {
    if (cr + 1 < end && cr[1] != '\n') return Error(400, "bare CR: lines must end in CRLF");
  }
  if (head_end == std::string_view::npos) {
    if (received.size() > max_header_bytes) return Error(431, "request headers too large");
    return HeadParse{};
  }
  if (head_end > max_header_bytes) return Error(431, "request headers too large");
  std::string_view head = received.substr(0, head_end);
  size_t line_end = head.find("\r\n");
  std::string_view line = head.substr(0, line_end);

  // request-line = method SP request-target SP HTTP-version, single spaces (RFC 9112 §3).
  size_t sp1 = line.find(' ');
  size_t sp2 = sp1 == std::string_view::npos ? sp1 : line.find(' ', sp1 + 1);
  if (sp2 == std::string_view::npos || line.find(' ', sp2 + 1) != std::string_view::npos) {
    return Error(400, "malformed request line");
  }
  HeadParse p;
  RequestHead& h = p.head;
  h.request.method = line.substr(0, sp1);
  h.request.target = line.substr(sp1 + 1, sp2 - sp1 - 1);
  if (h.request.method.empty() || !All(h.request.method, kToken)) {
    return Error(400, "malformed request line: bad method");
  }
  // Only the origin form ("/path?query") is served; absolute, authority and asterisk forms are not.
  if (h.request.target.empty() || h.request.target.front() != '/') {
    return Error(400, "request target must be a path (origin form)");
  }
  for (char c : h.request.target) {
    if (c <= ' ' || c >= 0x7f) return Error(400, "request target holds a space or control byte");
  }
  std::string_view version = line.substr(sp2 + 1);
  if (version != "HTTP/1.1" && version != "HTTP/1.0") return Error(400, "unsupported HTTP version");
  h.request.http10 = version == "HTTP/1.0";
  h.request.path = h.request.target.substr(0, h.request.target.find('?'));
  h.keep_alive = !h.request.http10;

  bool has_length = false, has_transfer_encoding = false, chunked = false;
  int fields = 0, hosts = 0;
  size_t pos = line_end == std::string_view::npos ? head.size() : line_end + 2;
  while (pos < head.size()) {
    size_t eol = head.find("\r\n", pos);
    std::string_view header = head.substr(pos, eol == std::string_view::npos ? std::string_view::npos : eol - pos);
    pos = eol == std::string_view::npos ? head.size() : eol + 2;
    if (++fields > kMaxHeaderFields) {
      return Error(431, "more than " + std::to_string(kMaxHeaderFields) + " header fields");
    }
    if (header.front() == ' ' || header.front() == '\t') return Error(400, "obsolete line folding");
    size_t colon = header.find(':');
    if (colon == std::string_view::npos) return Error(400, "malformed header line");
    std::string_view name = header.substr(0, colon);
    // field-name is a token, with no whitespace before the colon (RFC 9112 §5.1).
    if (name.empty() || !All(name, kToken)) {
      return Error(400, "malformed header field name");
    }
    std::string_view raw_value = header.substr(colon + 1);
    if (!All(raw_value, kFieldValue)) return Error(400, "control byte in a header field value");
    std::string_view value = Trim(raw_value);
    if (EqualsNoCase(name, "content-length")) {
      auto length = ParseContentLength(value);
      if (!length) return Error(400, "invalid Content-Length");
      if (has_length && *length != h.content_length) return Error(400, "differing Content-Length values");
      h.content_length = *length;
      has_length = true;
    } else if (EqualsNoCase(name, "content-type")) {
      h.request.content_type = value;
    } else if (EqualsNoCase(name, "connection")) {
      if (EqualsNoCase(value, "close")) h.keep_alive = false;
      if (EqualsNoCase(value, "keep-alive")) h.keep_alive = true;
    } else if (EqualsNoCase(name, "transfer-encoding")) {
      has_transfer_encoding = true;
      chunked = chunked || !EqualsNoCase(value, "identity");
    } else if (EqualsNoCase(name, "expect")) {
      h.expect_continue = EqualsNoCase(value, "100-continue");
    } else if (EqualsNoCase(name, "host")) {
      if (++hosts > 1) return Error(400, "more than one Host header field");
    }
  }
  // Both framings at once is how requests are smuggled (RFC 9112 §6.3): refused.
  if (has_transfer_encoding && has_length) return Error(400, "Transfer-Encoding together with Content-Length");
  if (chunked) return Error(411, "send the body with Content-Length");
  if (h.content_length > max_body_bytes) {
    return Error(413, "request body of " + std::to_string(h.content_length) + " bytes exceeds the limit of " +
                          std::to_string(max_body_bytes));
  }
  h.head_bytes = head_end + 4;
  p.status = HeadParse::Status::kComplete;
  return p;
}

void AppendResponse(std::string& out, const HttpResponse& r, bool close) {
  out += "HTTP/1.1 ";
  out += std::to_string(r.status);
  out += ' ';
  out += Reason(r.status);
  out += "\r\nContent-Type: ";
  out += r.content_type;
  out += "\r\nContent-Length: ";
  out += std::to_string(r.body.size());
  out += "\r\n";
  for (const auto& [k, v] : r.headers) out += k + ": " + v + "\r\n";
  if (close) out += "Connection: close\r\n";
  out += "\r\n";
  out += r.body;
}

void AppendError(std::string& out, int status, const std::string& message) {
  HttpResponse r;
  r.status = status;
  r.content_type = "text/plain";
  r.body = message + "\n";
  AppendResponse(out, r, true);
}

}  // namespace shmguard::http
