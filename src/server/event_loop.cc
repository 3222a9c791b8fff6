// RunEventLoop: one thread's epoll loop over non-blocking TLS connections — accept, handshake,
// read a whole request, answer, keep alive or close — with deadlines and a graceful drain.
#include "server/event_loop.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <memory>
#include <unordered_map>
#include <vector>

#include <openssl/err.h>

#include "server/byte_buffer.h"

namespace shmguard::server {
namespace {

using Clock = std::chrono::steady_clock;
constexpr size_t kReadChunk = 16 << 10;       // a TLS record's most plaintext: SSL_read gives no more
// What an idle connection keeps of its buffer: one read's room, so that 10,000 keep-alive
// connections hold at most ~160 MB however large their last requests were.
constexpr size_t kKeepIdleBuffer = kReadChunk + io::kJsonReadAhead;
constexpr size_t kRoomAhead = 1 << 20;        // allocated for a body before its bytes arrive
constexpr auto kScanInterval = std::chrono::milliseconds(250);

struct Connection {
  int fd = -1;
  SSL* ssl = nullptr;
  bool handshaken = false;
  bool request_started = false;  // bytes of an unfinished request are buffered
  bool continue_sent = false;
  bool close_after_write = false;
  bool lingering = false;  // response sent and FIN sent; discarding input until the peer closes
  int served = 0;          // responses written on this connection
  bool epollout = false;
  ByteBuffer in;
  size_t in_expected = 0;  // the size of the request being received, once its head is parsed
  std::string out;
  size_t out_pos = 0;
  Clock::time_point accepted, last_activity, request_start, linger_until;
};

constexpr auto kLinger = std::chrono::seconds(2);
// On shutdown, a connection that has not sent its first request yet gets this long to send it
// (as Go's http.Server.Shutdown does): its client has no reason to expect a close.
constexpr auto kDrainNewConnections = std::chrono::seconds(2);

class EventLoop {
 public:
  EventLoop(int epoll_fd, int listen_fd, int wake_fd, SSL_CTX* ctx, const HttpsServerOptions& o,
            const HttpHandler& handler, const std::atomic<bool>& stopping, std::atomic<size_t>& count)
      : epfd_(epoll_fd), listen_fd_(listen_fd), wake_fd_(wake_fd), ctx_(ctx), o_(o), handler_(handler),
        stopping_(stopping), count_(count) {}

  void Run() {
    std::array<epoll_event, 256> events;
    auto last_scan = Clock::now();
    bool draining = false;
    while (true) {
      int n = epoll_wait(epfd_, events.data(), static_cast<int>(events.size()), read_on_.empty() ? 100 : 0);
      for (int i = 0; i < n; ++i) {
        int fd = events[i].data.fd;
        if (fd == listen_fd_) {
          if (!draining) Accept();
        } else if (fd == wake_fd_) {
          uint64_t v;
          (void)!read(wake_fd_, &v, sizeof v);
        } else {
          Advance(fd);
        }
      }
      std::vector<int> read_on;
      read_on.swap(read_on_);
      for (int fd : read_on) Advance(fd);
      if (stopping_.load() && !draining) {
        draining = true;
        drain_start_ = Clock::now();
        epoll_ctl(epfd_, EPOLL_CTL_DEL, listen_fd_, nullptr);
        std::vector<int> idle;
        for (auto& [fd, c] : conns_) {
          // A request the client already sent may sit unread in the socket: read once more, so
          // that it is answered (with Connection: close) rather than dropped.
          if (c->handshaken && !c->lingering && !Progress(*c)) {
            idle.push_back(fd);
            continue;
          }
          // Idle after at least one answer: close now (clients retry a request on a keep-alive
          // connection that closes before answering). New connections wait for their first
          // request (see kDrainNewConnections).
          if (IsIdle(*c) && c->served > 0) idle.push_back(fd);
        }
        for (int fd : idle) Close(fd);
      }
      if (draining && conns_.empty()) return;
      auto now = Clock::now();
      if (draining && now - drain_start_ > kDrainNewConnections) {
        std::vector<int> late;
        for (auto& [fd, c] : conns_) {
          if (IsIdle(*c)) late.push_back(fd);
        }
        for (int fd : late) Close(fd);
        if (conns_.empty()) return;
      }
      if (now - last_scan >= kScanInterval) {
        last_scan = now;
        ExpireDeadlines(now);
      }
    }
  }

  ~EventLoop() {
    std::vector<int> fds;
    for (auto& [fd, c] : conns_) fds.push_back(fd);
    for (int fd : fds) Close(fd);
  }

 private:
  void Accept() {
    while (true) {
      int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd < 0) return;  // EAGAIN, or another loop took it
      if (count_.load() >= o_.max_connections) {
        ::close(fd);
        continue;
      }
      int one = 1;
      setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      auto c = std::make_unique<Connection>();
      c->fd = fd;
      c->ssl = SSL_new(ctx_);
      SSL_set_fd(c->ssl, fd);
      SSL_set_accept_state(c->ssl);
      SSL_set_mode(c->ssl, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER |
                               SSL_MODE_RELEASE_BUFFERS);
      SSL_set_read_ahead(c->ssl, 1);  // a record's header and body in one read(), not two
      c->accepted = c->last_activity = Clock::now();
      epoll_event ev{};
      ev.events = EPOLLIN;
      ev.data.fd = fd;
      epoll_ctl(epfd_, EPOLL_CTL_ADD, fd, &ev);
      ++count_;
      Connection& ref = *c;
      conns_[fd] = std::move(c);
      if (!Progress(ref)) Close(fd);
    }
  }

  void Advance(int fd) {
    auto it = conns_.find(fd);
    if (it != conns_.end() && !Progress(*it->second)) Close(fd);
  }

  static bool IsIdle(const Connection& c) {
    return !c.lingering && !c.request_started && c.out_pos >= c.out.size();
  }

  void Close(int fd) {
    auto it = conns_.find(fd);
    if (it == conns_.end()) return;
    Connection& c = *it->second;
    if (c.handshaken && !c.lingering) SSL_shutdown(c.ssl);  // best effort close_notify; never waits
    SSL_free(c.ssl);
    ERR_clear_error();
    ::close(fd);
    conns_.erase(it);
    --count_;
  }

  void WantWrite(Connection& c, bool on) {
    if (c.epollout == on) return;
    c.epollout = on;
    epoll_event ev{};
    ev.events = EPOLLIN | (on ? static_cast<uint32_t>(EPOLLOUT) : 0u);
    ev.data.fd = c.fd;
    epoll_ctl(epfd_, EPOLL_CTL_MOD, c.fd, &ev);
  }

  // Sends what is queued. False on a broken connection.
  bool Flush(Connection& c) {
    while (c.out_pos < c.out.size()) {
      int n = SSL_write(c.ssl, c.out.data() + c.out_pos, static_cast<int>(c.out.size() - c.out_pos));
      if (n > 0) {
        c.out_pos += static_cast<size_t>(n);
        c.last_activity = Clock::now();
        continue;
      }
      int err = SSL_get_error(c.ssl, n);
      if (err == SSL_ERROR_WANT_WRITE || err == SSL_ERROR_WANT_READ) {
        WantWrite(c, true);
        return true;
      }
      return false;
    }
    c.out.clear();
    c.out_pos = 0;
    WantWrite(c, false);
    return true;
  }

  // Closing while the client is still sending (after a 413, say) makes the kernel answer with
  // RST, which can destroy the response before the client reads it. So: close_notify and FIN
  // first, then read and discard until the client closes or kLinger passes (nginx's
  // lingering_close).
  bool StartLinger(Connection& c) {
    SSL_shutdown(c.ssl);
    ::shutdown(c.fd, SHUT_WR);
    c.lingering = true;
    c.linger_until = Clock::now() + kLinger;
    WantWrite(c, false);
    return Drain(c);
  }

  bool Drain(Connection& c) {
    char buf[16384];
    while (true) {
      ssize_t n = ::read(c.fd, buf, sizeof buf);
      if (n > 0) continue;
      return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);  // false: EOF or error, close
    }
  }

  // Advances the connection as far as it can go without blocking. False: close it.
  bool Progress(Connection& c) {
    ERR_clear_error();
    if (c.lingering) return Drain(c);
    if (!c.handshaken) {
      int r = SSL_do_handshake(c.ssl);
      if (r != 1) {
        int err = SSL_get_error(c.ssl, r);
        if (err == SSL_ERROR_WANT_READ) return true;
        if (err == SSL_ERROR_WANT_WRITE) {
          WantWrite(c, true);
          return true;
        }
        return false;  // TLS < 1.2, plaintext, bad client: nothing to answer
      }
      c.handshaken = true;
      c.last_activity = Clock::now();
      WantWrite(c, false);
    }
    if (!Flush(c)) return false;
    if (c.out_pos < c.out.size()) return true;  // backpressure: read more only once written
    if (c.close_after_write && !c.request_started) return StartLinger(c);
    size_t read_now = 0;
    bool eof = false;
    while (read_now < o_.max_read_per_wakeup) {
      int n = SSL_read(c.ssl, c.in.Prepare(kReadChunk), static_cast<int>(kReadChunk));
      if (n > 0) {
        c.in.Commit(static_cast<size_t>(n));
        read_now += static_cast<size_t>(n);
        Handle(c);
        // Everything read is answered and OpenSSL holds nothing more: no read that would only
        // say EAGAIN (epoll is level-triggered: whatever arrives next wakes this loop again).
        // Nor read on once the connection is to close: lingering discards the rest.
        if (c.close_after_write || (!c.request_started && !SSL_has_pending(c.ssl))) break;
        continue;
      }
      int err = SSL_get_error(c.ssl, n);
      if (err == SSL_ERROR_WANT_READ || err == SSL_ERROR_WANT_WRITE) break;
      eof = true;  // close_notify, EOF or error
      break;
    }
    if (read_now > 0) c.last_activity = Clock::now();
    // Stopped at the fairness limit with whole records in OpenSSL's read-ahead buffer: epoll
    // cannot see them (they left the socket), so the loop comes back to this connection itself.
    if (read_now >= o_.max_read_per_wakeup && SSL_has_pending(c.ssl)) read_on_.push_back(c.fd);
    if (!Flush(c)) return false;
    if (c.out_pos >= c.out.size()) {
      if (c.close_after_write) return eof ? false : StartLinger(c);
      // Draining: a connection that has been answered is done; a new one may still send its
      // first request (the loop closes it after kDrainNewConnections).
      if (stopping_.load() && !c.request_started && c.served > 0) return false;
    }
    return !eof;
  }

  // Answers every complete request in the buffer, in order.
  void Handle(Connection& c) {
    while (!c.in.empty() && !c.close_after_write) {
      if (!c.request_started) {
        c.request_started = true;
        c.request_start = Clock::now();
      }
      if (c.in.size() < c.in_expected) return;  // the body is still arriving: its head is known
      HeadParse parsed = ParseRequestHead(c.in.view(), o_.max_header_bytes, o_.max_body_bytes);
      if (parsed.status == HeadParse::Status::kIncomplete) return;
      if (parsed.status == HeadParse::Status::kError) return Fail(c, parsed.error_status, parsed.error);
      const RequestHead& h = parsed.head;
      size_t total = h.head_bytes + h.content_length;
      if (c.in.size() < total) {
        c.in_expected = total;
        // Room for the body now, not copies as it grows; a claim alone gets at most kRoomAhead.
        c.in.Prepare(std::min(total - c.in.size(), kRoomAhead));
        if (h.expect_continue && !c.continue_sent) {
          c.out += "HTTP/1.1 100 Continue\r\n\r\n";
          c.continue_sent = true;
        }
        return;
      }
      HttpRequest req = h.request;
      req.body = c.in.view().substr(h.head_bytes, h.content_length);
      req.body_padded = c.in.ReadableAfter(h.head_bytes, h.content_length) >= io::kJsonReadAhead;
      HttpResponse res;
      handler_(req, res);
      bool close = !h.keep_alive || stopping_.load();
      AppendResponse(c.out, res, close);
      ++c.served;
      c.in.Consume(total, kKeepIdleBuffer);
      c.in_expected = 0;
      c.request_started = false;
      c.continue_sent = false;
      if (close) {
        c.close_after_write = true;
        c.in.Clear();
      }
    }
  }

  void Fail(Connection& c, int status, const std::string& message) {
    AppendError(c.out, status, message);
    c.close_after_write = true;
    c.request_started = false;
    c.in.Clear();
    c.in_expected = 0;
  }

  void ExpireDeadlines(Clock::time_point now) {
    const auto request_timeout = std::chrono::seconds(o_.request_timeout_seconds);
    const auto keep_alive = std::chrono::seconds(o_.keep_alive_seconds);
    std::vector<int> expired;
    for (auto& [fd, c] : conns_) {
      bool writing = c->out_pos < c->out.size();
      if (c->lingering) {
        if (now > c->linger_until) expired.push_back(fd);
      } else if (!c->handshaken) {
        if (now - c->accepted > request_timeout) expired.push_back(fd);
      } else if (writing) {
        if (now - c->last_activity > request_timeout) expired.push_back(fd);  // client not reading
      } else if (c->request_started) {
        if (now - c->request_start > request_timeout) {  // slowloris: the whole request is late
          Fail(*c, 408, "request not received within " + std::to_string(o_.request_timeout_seconds) + "s");
          if (!Flush(*c) || c->out_pos >= c->out.size()) expired.push_back(fd);
        }
      } else if (now - c->last_activity > keep_alive) {
        expired.push_back(fd);
      }
    }
    for (int fd : expired) Close(fd);
  }

  int epfd_, listen_fd_, wake_fd_;
  SSL_CTX* ctx_;
  const HttpsServerOptions& o_;
  const HttpHandler& handler_;
  const std::atomic<bool>& stopping_;
  std::atomic<size_t>& count_;
  std::unordered_map<int, std::unique_ptr<Connection>> conns_;
  std::vector<int> read_on_;  // connections to read on without waiting for epoll (see Progress)
  Clock::time_point drain_start_;
};

}  // namespace

void RunEventLoop(const EventLoopSetup& s) {
  EventLoop loop(s.epoll_fd, s.listen_fd, s.wake_fd, s.ctx, s.options, s.handler, s.stopping, s.connections);
  loop.Run();
}

}  // namespace shmguard::server
