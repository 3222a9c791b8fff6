// HttpConnection: requests out of received bytes, responses into the output.
#include "http/http_connection.h"

#include <algorithm>

namespace shmguard::http {
namespace {

constexpr size_t kRoomAhead = 1 << 20;  // allocated for a body before its bytes arrive

}  // namespace

void HttpConnection::Handle(const HttpLimits& limits, const HttpHandler& handler, bool stopping) {
  while (!in.empty() && !close_after_write) {
    if (!request_started) {
      request_started = true;
      request_start = Clock::now();
    }
    if (in.size() < in_expected) return;  // the body is still arriving: its head is known
    HeadParse parsed = ParseRequestHead(in.view(), limits.max_header_bytes, limits.max_body_bytes);
    if (parsed.status == HeadParse::Status::kIncomplete) return;
    if (parsed.status == HeadParse::Status::kError) return Fail(parsed.error_status, parsed.error);
    const RequestHead& h = parsed.head;
    size_t total = h.head_bytes + h.content_length;
    if (in.size() < total) {
      in_expected = total;
      // Room for the body now, not copies as it grows; a claim alone gets at most kRoomAhead.
      in.Prepare(std::min(total - in.size(), kRoomAhead));
      if (h.expect_continue && !continue_sent) {
        out += "HTTP/1.1 100 Continue\r\n\r\n";
        continue_sent = true;
      }
      return;
    }
    HttpRequest req = h.request;
    req.body = in.view().substr(h.head_bytes, h.content_length);
    req.body_padded = in.ReadableAfter(h.head_bytes, h.content_length) >= io::kJsonReadAhead;
    HttpResponse res;
    handler(req, res);
    bool close = !h.keep_alive || stopping;
    AppendResponse(out, res, close);
    in.Consume(total, kKeepIdleBuffer);
    in_expected = 0;
    request_started = false;
    continue_sent = false;
    if (close) {
      close_after_write = true;
      in.Clear();
    }
  }
}

void HttpConnection::Fail(int status, const std::string& message) {
  AppendError(out, status, message);
  close_after_write = true;
  request_started = false;
  in.Clear();
  in_expected = 0;
}

}  // namespace shmguard::http
