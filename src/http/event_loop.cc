// RunEventLoop: one thread's epoll loop over non-blocking TLS connections — accept, handshake,
// read a whole request, answer, keep alive or close — with deadlines and a graceful drain.
#include "http/event_loop.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
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

#include "http/http_connection.h"

namespace shmguard::http {
namespace {

using Clock = std::chrono::steady_clock;
constexpr auto kScanInterval = std::chrono::milliseconds(250);

// A connection: the socket, and for TLS the OpenSSL state, around its HTTP side (reads at most
// kReadChunk at a time: a TLS record's most plaintext). `ssl` is null over plain TCP.
struct Connection : HttpConnection {
  int fd = -1;
  std::string peer;  // the client's address, without its port
  SSL* ssl = nullptr;
  bool tls_pending = false;  // TLS, not begun: the OpenSSL state is made when the first bytes come
  bool handshaken = false;
  bool lingering = false;  // response sent and FIN sent; discarding input until the peer closes
  bool epollout = false;
  Clock::time_point accepted, last_activity, linger_until;
};

constexpr auto kLinger = std::chrono::seconds(2);
// On shutdown, an idle connection gets this long to send one more request, answered with
// `Connection: close`, before it is closed. Closing an idle keep-alive connection at once races
// with a client already sending on it, and a client that loses a POST that way does not resend
// it: Go's http.Transport, the API server's webhook client, resends on a reused connection only
// what it never wrote or what is idempotent (net/http persistConn.shouldRetryRequest), and the
// API server then admits the pod unpatched (failurePolicy: Ignore). A client under load
// takes its pooled connections one after another, so within this window each is answered and
// closed cleanly; only a connection its client left unused is closed by the server.
constexpr auto kDrainIdle = std::chrono::seconds(2);

class EventLoop {
 public:
  explicit EventLoop(const EventLoopSetup& s)
      : epfd_(s.epoll_fd),
        listen_fd_(s.listen_fd),
        wake_fd_(s.wake_fd),
        ctx_(s.ctx),
        o_(s.options),
        limits_{s.options.max_header_bytes, s.options.max_body_bytes},
        handler_(s.handler),
        stopping_(s.stopping),
        count_(s.connections),
        peers_(s.peers),
        peer_limit_(std::max<size_t>(1, static_cast<size_t>(static_cast<double>(s.options.max_connections) *
                                                            std::clamp(s.options.peer_share, 0.0, 1.0)))) {}

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
        std::vector<int> done;
        for (auto& [fd, c] : conns_) {
          // A request the client already sent may sit unread in the socket: read once more, so
          // that it is answered (with Connection: close) rather than dropped. Idle connections
          // stay open for kDrainIdle.
          if (c->handshaken && !c->lingering && !Progress(*c)) done.push_back(fd);
        }
        for (int fd : done) Close(fd);
      }
      if (draining && conns_.empty()) return;
      auto now = Clock::now();
      if (draining && now - drain_start_ > kDrainIdle) {
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
  // "10.0.0.7", "fd00::7": the peer's address without its port.
  static std::string PeerOf(const sockaddr_storage& addr) {
    char text[INET6_ADDRSTRLEN] = "";
    if (addr.ss_family == AF_INET) {
      inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(&addr)->sin_addr, text, sizeof text);
    } else if (addr.ss_family == AF_INET6) {
      inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6*>(&addr)->sin6_addr, text, sizeof text);
    }
    return text;
  }

  void Report(std::string_view reason) {
    if (o_.on_evict) o_.on_evict(reason);
  }

  // Whether a connection from `peer` may be opened now: at its share, it closes its own
  // quietest; at the cap (evict_idle), the busiest peer's quietest goes. False: refuse it.
  bool MakeRoom(const std::string& peer) {
    if (o_.peer_share < 1.0 && peers_.Count(peer) >= peer_limit_) {
      if (!EvictIdlest(&peer)) return false;
      Report("peer-share");
      return true;
    }
    if (count_.load() < o_.max_connections) return true;
    if (!o_.evict_idle || !EvictIdlest(nullptr)) return false;
    Report("cap");
    return true;
  }

  // At most this many connections accepted per wakeup: a flood of connects must not keep the loop
  // from the connections it already has (the listening socket is level-triggered: the rest wait
  // for the next turn).
  static constexpr int kAcceptsPerWakeup = 16;

  void Accept() {
    for (int i = 0; i < kAcceptsPerWakeup; ++i) {
      sockaddr_storage addr{};
      socklen_t len = sizeof addr;
      int fd = accept4(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd < 0) return;  // EAGAIN, or another loop took it
      std::string peer = PeerOf(addr);
      if (!MakeRoom(peer)) {
        ::close(fd);
        Report("refused");
        continue;
      }
      int one = 1;
      setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      auto c = std::make_unique<Connection>();
      c->fd = fd;
      c->peer = std::move(peer);
      // TLS state (tens of KB with its buffers) only once the client sends: a connection that
      // never does costs its socket and this struct.
      c->tls_pending = ctx_ != nullptr;
      c->handshaken = ctx_ == nullptr;  // plain HTTP: nothing to negotiate
      c->accepted = c->last_activity = Clock::now();
      epoll_event ev{};
      ev.events = EPOLLIN;
      ev.data.fd = fd;
      epoll_ctl(epfd_, EPOLL_CTL_ADD, fd, &ev);
      ++count_;
      peers_.Add(c->peer);
      Connection& ref = *c;
      conns_[fd] = std::move(c);
      if (!Progress(ref)) Close(fd);
    }
  }

  // Begins TLS on a connection whose client has sent its first bytes. False: it closed.
  bool BeginTls(Connection& c) {
    char byte;
    const ssize_t n = ::recv(c.fd, &byte, 1, MSG_PEEK);
    if (n == 0) return false;
    if (n < 0) return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR;
    c.ssl = SSL_new(ctx_);
    if (!c.ssl) return false;
    SSL_set_fd(c.ssl, c.fd);
    SSL_set_accept_state(c.ssl);
    SSL_set_mode(c.ssl, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER | SSL_MODE_RELEASE_BUFFERS);
    SSL_set_read_ahead(c.ssl, 1);  // a record's header and body in one read(), not two
    c.tls_pending = false;
    return true;
  }

  // A connection that may be closed to make room: one that has not finished its handshake, or
  // an idle one; never one with a request in flight or a response to send.
  static bool Evictable(const Connection& c) { return !c.handshaken || IsIdle(c); }

  // Closes this loop's quietest evictable connection of `peer`, or when `peer` is null of the
  // peer that holds the most connections over all loops (the quietest overall when the busiest
  // has none here); false when there is none.
  bool EvictIdlest(const std::string* peer) {
    std::unordered_map<std::string_view, size_t> held;  // peer -> its count, looked up once each
    const Connection* pick = nullptr;
    size_t pick_held = 0;
    for (const auto& [fd, c] : conns_) {
      if (!Evictable(*c) || (peer && c->peer != *peer)) continue;
      size_t h = 0;
      if (!peer) {
        auto [it, fresh] = held.try_emplace(c->peer, 0);
        if (fresh) it->second = peers_.Count(c->peer);
        h = it->second;
      }
      if (!pick || h > pick_held || (h == pick_held && c->last_activity < pick->last_activity)) {
        pick = c.get();
        pick_held = h;
      }
    }
    if (!pick) return false;
    Close(pick->fd);
    return true;
  }

  void Advance(int fd) {
    auto it = conns_.find(fd);
    if (it != conns_.end() && !Progress(*it->second)) Close(fd);
  }

  // Bytes OpenSSL has read from the socket but not handed out (never any over plain TCP).
  static bool Pending(const Connection& c) { return c.ssl && SSL_has_pending(c.ssl); }

  static bool IsIdle(const Connection& c) { return !c.lingering && !c.request_started && c.out_pos >= c.out.size(); }

  void Close(int fd) {
    auto it = conns_.find(fd);
    if (it == conns_.end()) return;
    Connection& c = *it->second;
    peers_.Release(c.peer);
    if (c.ssl) {
      if (c.handshaken && !c.lingering) SSL_shutdown(c.ssl);  // best effort close_notify; never waits
      SSL_free(c.ssl);
      ERR_clear_error();
    }
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
      const size_t left = c.out.size() - c.out_pos;
      long n = c.ssl ? SSL_write(c.ssl, c.out.data() + c.out_pos, static_cast<int>(left))
                     : ::send(c.fd, c.out.data() + c.out_pos, left, MSG_NOSIGNAL);
      if (n > 0) {
        c.out_pos += static_cast<size_t>(n);
        c.last_activity = Clock::now();
        continue;
      }
      const bool again = c.ssl ? (SSL_get_error(c.ssl, static_cast<int>(n)) == SSL_ERROR_WANT_WRITE ||
                                  SSL_get_error(c.ssl, static_cast<int>(n)) == SSL_ERROR_WANT_READ)
                               : (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR));
      if (again) {
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
    if (c.ssl) SSL_shutdown(c.ssl);
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
    if (c.tls_pending) {
      if (!BeginTls(c)) return false;
      if (c.tls_pending) return true;  // nothing sent yet
    }
    if (!c.handshaken) {
      int r = SSL_do_handshake(c.ssl);
      if (r != 1) {
        int err = SSL_get_error(c.ssl, r);
        if (err == SSL_ERROR_WANT_READ) return true;
        if (err == SSL_ERROR_WANT_WRITE) {
          WantWrite(c, true);
          return true;
        }
        if (err == SSL_ERROR_SSL && o_.on_handshake_failure) o_.on_handshake_failure(c.ssl);
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
      long n = c.ssl ? SSL_read(c.ssl, c.in.Prepare(kReadChunk), static_cast<int>(kReadChunk))
                     : ::recv(c.fd, c.in.Prepare(kReadChunk), kReadChunk, 0);
      if (n > 0) {
        c.in.Commit(static_cast<size_t>(n));
        read_now += static_cast<size_t>(n);
        c.Handle(limits_, handler_, stopping_.load());
        // Everything read is answered and OpenSSL holds nothing more: no read that would only
        // say EAGAIN (epoll is level-triggered: whatever arrives next wakes this loop again).
        // Nor read on once the connection is to close: lingering discards the rest.
        if (c.close_after_write || (!c.request_started && !Pending(c))) break;
        continue;
      }
      if (c.ssl) {
        int err = SSL_get_error(c.ssl, static_cast<int>(n));
        if (err == SSL_ERROR_WANT_READ || err == SSL_ERROR_WANT_WRITE) break;
      } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
        break;
      }
      eof = true;  // close_notify, EOF or error
      break;
    }
    if (read_now > 0) c.last_activity = Clock::now();
    // Stopped at the fairness limit with whole records in OpenSSL's read-ahead buffer: epoll
    // cannot see them (they left the socket), so the loop comes back to this connection itself.
    if (read_now >= o_.max_read_per_wakeup && Pending(c)) read_on_.push_back(c.fd);
    if (!Flush(c)) return false;
    if (c.out_pos >= c.out.size()) {
      if (c.close_after_write) return eof ? false : StartLinger(c);
    }
    return !eof;
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
          c->Fail(408, "request not received within " + std::to_string(o_.request_timeout_seconds) + "s");
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
  const HttpLimits limits_;
  const HttpHandler& handler_;
  const std::atomic<bool>& stopping_;
  std::atomic<size_t>& count_;
  PeerTable& peers_;
  const size_t peer_limit_;
  std::unordered_map<int, std::unique_ptr<Connection>> conns_;
  std::vector<int> read_on_;  // connections to read on without waiting for epoll (see Progress)
  Clock::time_point drain_start_;
};

}  // namespace

void RunEventLoop(const EventLoopSetup& s) {
  EventLoop loop(s);
  loop.Run();
}

}  // namespace shmguard::http
