// The HTTP/1.1 side of one connection, without a socket or TLS: received bytes go in, responses
// come out in order — keep-alive, pipelining, 100-continue, and after a framing error one error
// response and then nothing more. The event loop moves bytes between it and OpenSSL; the
// transport fuzzer (fuzz/transport_fuzz.cc) drives it directly.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <string>

#include "http/byte_buffer.h"
#include "http/http_message.h"

namespace shmguard::http {

using HttpHandler = std::function<void(const HttpRequest&, HttpResponse&)>;

struct HttpLimits {
  size_t max_header_bytes = 16 << 10;  // 431 above
  size_t max_body_bytes = 8 << 20;     // 413 above, before the body is read
};

// What an idle connection keeps of its input buffer: one TLS record's plaintext and the JSON
// read-ahead, so that 10,000 keep-alive connections hold at most ~160 MB however large their
// last requests were.
inline constexpr size_t kReadChunk = 16 << 10;
inline constexpr size_t kKeepIdleBuffer = kReadChunk + io::kJsonReadAhead;

struct HttpConnection {
  using Clock = std::chrono::steady_clock;

  // Answers every complete request in `in`, in order, appending to `out`. `stopping`: the
  // server is draining, so every answer closes the connection.
  void Handle(const HttpLimits& limits, const HttpHandler& handler, bool stopping);
  // Answers `status` with `message`, drops what was received, and closes after writing.
  void Fail(int status, const std::string& message);

  ByteBuffer in;
  size_t in_expected = 0;        // the size of the request being received, once its head is parsed
  bool request_started = false;  // bytes of an unfinished request are buffered
  bool continue_sent = false;
  bool close_after_write = false;  // nothing more is read once `out` is written
  std::string out;
  size_t out_pos = 0;  // how much of `out` the peer has been sent
  Clock::time_point request_start;
};

}  // namespace shmguard::http
