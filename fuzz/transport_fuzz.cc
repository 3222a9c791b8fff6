// libFuzzer target: the webhook's HTTP/1.1 transport without TLS or sockets.
//   1. ParseRequestHead over the bytes: no crash, and a complete head lies within them.
//   2. An HttpConnection fed the bytes in chunks (their sizes taken from the input's first
//      bytes), with the real admission routes and handler behind it: every byte it writes is a
//      sequence of well-formed HTTP/1.1 responses (status line, headers, Content-Length and a body
//      of that length), each request the handler saw got exactly one response, a framing error
//      got one more and then nothing, and nothing is written once the connection is to close.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>

#include "http/http_connection.h"
#include "server/admission_handler.h"

namespace {

using shmguard::http::HttpConnection;
using shmguard::http::HttpRequest;
using shmguard::http::HttpResponse;

// Aborts, naming the line of the property that failed.
#define Check(ok)                                                        \
  do {                                                                   \
    if (!(ok)) {                                                         \
      std::fprintf(stderr, "transport_fuzz.cc:%d: %s\n", __LINE__, #ok); \
      std::abort();                                                      \
    }                                                                    \
  } while (0)

// The webhook's routes, as server.cc serves them.
void Route(const HttpRequest& req, HttpResponse& res) {
  static const shmguard::Policy policy;
  if (auto route = shmguard::server::MatchAdmissionRoute(req.path, req.target)) {
    if (req.method != "POST") {
      res.status = 405;
      res.body = "{}";
      return;
    }
    auto refused = shmguard::server::CheckAdmissionRequest(*route, req.content_type, req.body);
    auto x = refused ? *refused : shmguard::server::HandleAdmission({req.body, req.body_padded}, *route, {policy});
    res.status = x.status;
    res.body = std::move(x.body);
    return;
  }
  res.status = req.path == "/healthz" ? 200 : 404;
  res.body = "x";
}

struct Response {
  int status = 0;
  bool close = false;
};

// Splits `out` into responses; aborts on anything that is not well-formed HTTP/1.1.
std::vector<Response> ParseResponses(std::string_view out) {
  std::vector<Response> responses;
  while (!out.empty()) {
    size_t head_end = out.find("\r\n\r\n");
    Check(head_end != std::string_view::npos);
    std::string_view head = out.substr(0, head_end);
    Check(head.size() > 13 && head.substr(0, 9) == "HTTP/1.1 ");
    int status = std::atoi(std::string(head.substr(9, 3)).c_str());
    Check(status >= 100 && status <= 599 && head[12] == ' ');
    if (status == 100) {  // an interim 100 Continue: no headers, no body
      Check(head == "HTTP/1.1 100 Continue");
      out.remove_prefix(head_end + 4);
      continue;
    }
    Response r;
    r.status = status;
    size_t content_length = std::string_view::npos;
    size_t pos = head.find("\r\n");
    while (pos != std::string_view::npos) {
      size_t next = head.find("\r\n", pos + 2);
      std::string_view line =
          head.substr(pos + 2, next == std::string_view::npos ? std::string_view::npos : next - pos - 2);
      size_t colon = line.find(": ");
      Check(colon != std::string_view::npos && colon > 0);
      for (char c : line) Check(c >= 0x20 && c < 0x7f);
      std::string_view name = line.substr(0, colon), value = line.substr(colon + 2);
      if (name == "Content-Length") {
        Check(content_length == std::string_view::npos);
        content_length = std::strtoull(std::string(value).c_str(), nullptr, 10);
      }
      if (name == "Connection") r.close = value == "close";
      pos = next;
    }
    Check(content_length != std::string_view::npos);
    Check(out.size() >= head_end + 4 + content_length);
    out.remove_prefix(head_end + 4 + content_length);
    responses.push_back(r);
  }
  return responses;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view bytes(reinterpret_cast<const char*>(data), size);

  // 1. The head parser alone.
  auto parsed = shmguard::http::ParseRequestHead(bytes, 16 << 10, 1 << 20);
  if (parsed.status == shmguard::http::HeadParse::Status::kComplete) {
    Check(parsed.head.head_bytes <= size);
    Check(parsed.head.request.path.size() <= parsed.head.request.target.size());
  }
  if (parsed.status == shmguard::http::HeadParse::Status::kError) {
    Check(parsed.error_status >= 400 && parsed.error_status < 500 && !parsed.error.empty());
  }

  // 2. A connection, the input split in chunks: the first byte says how many chunk sizes follow.
  if (size < 1) return 0;
  size_t sizes = std::min<size_t>(data[0] % 8, size - 1);
  std::string_view sizes_part = bytes.substr(1, sizes);
  std::string_view stream = bytes.substr(1 + sizes);
  HttpConnection c;
  int handled = 0;
  shmguard::http::HttpHandler handler = [&](const HttpRequest& req, HttpResponse& res) {
    ++handled;
    Route(req, res);
  };
  const shmguard::http::HttpLimits limits{4096, 1 << 20};
  for (size_t i = 0; !stream.empty(); ++i) {
    size_t n = sizes_part.empty() ? stream.size() : 1 + static_cast<unsigned char>(sizes_part[i % sizes_part.size()]);
    n = std::min(n, stream.size());
    std::memcpy(c.in.Prepare(n), stream.data(), n);
    c.in.Commit(n);
    stream.remove_prefix(n);
    c.Handle(limits, handler, /*stopping=*/false);
    if (c.close_after_write) {  // the event loop reads nothing more: it lingers, discarding input
      const size_t written = c.out.size();
      Check(c.in.empty());
      c.Handle(limits, handler, false);
      Check(c.out.size() == written);  // and a further call writes nothing
      break;
    }
  }
  std::vector<Response> responses = ParseResponses(c.out);
  // One response per request handled, and one more for a framing error, after which it closes.
  Check(responses.size() == static_cast<size_t>(handled) ||
        (c.close_after_write && responses.size() == static_cast<size_t>(handled) + 1));
  if (responses.size() > static_cast<size_t>(handled)) {  // a framing error: the last response, and it closes
    Check(responses.size() == static_cast<size_t>(handled) + 1);
    Check(responses.back().close && responses.back().status >= 400);
  }
  for (size_t i = 0; i + 1 < responses.size(); ++i) Check(!responses[i].close);
  return 0;
}
