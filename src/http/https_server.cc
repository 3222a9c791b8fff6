// HttpsServer: the listening socket, one event loop thread per CPU (server/event_loop.h), stop.
#include "http/https_server.h"

#include <netdb.h>
#include <netinet/in.h>
#include <sched.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "http/event_loop.h"

namespace shmguard::http {
namespace {

int CpusAvailable() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) != 0) return 1;
  return std::max(1, CPU_COUNT(&set));
}

}  // namespace

HttpsServer::HttpsServer(HttpsServerOptions options, SSL_CTX* ctx, HttpHandler handler)
    : options_(std::move(options)), ctx_(ctx), handler_(std::move(handler)) {}

HttpsServer::~HttpsServer() {
  Stop();
  if (listen_fd_ >= 0) ::close(listen_fd_);
}

Result<int> HttpsServer::Listen() {
  addrinfo hints{}, *res = nullptr;
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  std::string port = std::to_string(options_.port);
  const char* host = options_.bind_address.empty() ? nullptr : options_.bind_address.c_str();
  if (int rc = getaddrinfo(host, port.c_str(), &hints, &res); rc != 0) {
    return MakeError(Code::kIo, std::string("cannot resolve ") + options_.bind_address + ": " + gai_strerror(rc));
  }
  std::string why = "no address";
  for (addrinfo* ai = res; ai; ai = ai->ai_next) {
    int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, ai->ai_protocol);
    if (fd < 0) continue;
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);  // not SO_REUSEPORT: one owner
    if (bind(fd, ai->ai_addr, ai->ai_addrlen) == 0 && listen(fd, 1024) == 0) {
      listen_fd_ = fd;
      break;
    }
    why = std::strerror(errno);
    ::close(fd);
  }
  freeaddrinfo(res);
  if (listen_fd_ < 0) {
    return MakeError(Code::kIo, "cannot listen on " + options_.bind_address + ":" + port + " (webhook): " + why);
  }
  sockaddr_storage addr{};
  socklen_t len = sizeof addr;
  getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len);
  return addr.ss_family == AF_INET6 ? ntohs(reinterpret_cast<sockaddr_in6*>(&addr)->sin6_port)
                                    : ntohs(reinterpret_cast<sockaddr_in*>(&addr)->sin_port);
}

void HttpsServer::Start() {
  int threads = options_.threads > 0 ? options_.threads : std::min(CpusAvailable(), 8);
  for (int i = 0; i < threads; ++i) {
    int ep = epoll_create1(EPOLL_CLOEXEC);
    int wake = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    epoll_event ev{};
    ev.events = EPOLLIN | EPOLLEXCLUSIVE;
    ev.data.fd = listen_fd_;
    epoll_ctl(ep, EPOLL_CTL_ADD, listen_fd_, &ev);
    epoll_event wev{};
    wev.events = EPOLLIN;
    wev.data.fd = wake;
    epoll_ctl(ep, EPOLL_CTL_ADD, wake, &wev);
    epoll_fds_.push_back(ep);
    wake_fds_.push_back(wake);
    threads_.emplace_back([this, ep, wake] {
      sigset_t pipe;  // a peer that vanished makes write() fail with EPIPE, not kill us
      sigemptyset(&pipe);
      sigaddset(&pipe, SIGPIPE);
      pthread_sigmask(SIG_BLOCK, &pipe, nullptr);
      RunEventLoop({ep, listen_fd_, wake, ctx_, options_, handler_, stopping_, connections_, peers_});
    });
  }
  started_ = true;
}

void HttpsServer::Stop() {
  if (!started_ || stopped_) return;
  stopped_ = true;
  stopping_ = true;
  shutdown(listen_fd_, SHUT_RDWR);  // new connections are refused from now on
  for (int w : wake_fds_) {
    uint64_t one = 1;
    (void)!write(w, &one, sizeof one);
  }
  for (auto& t : threads_) t.join();
  for (int fd : epoll_fds_) ::close(fd);
  for (int fd : wake_fds_) ::close(fd);
}

HttpsServerOptions MetricsPortOptions(const std::string& bind_address, int port) {
  HttpsServerOptions h;
  h.bind_address = bind_address;
  h.port = port;
  h.max_body_bytes = 0;
  h.max_header_bytes = 8 << 10;
  h.max_connections = 4096;
  h.evict_idle = true;
  h.keep_alive_seconds = 5;
  h.request_timeout_seconds = 5;
  h.threads = 1;
  return h;
}

void ServeMetricsPort(const HttpRequest& req, HttpResponse& res, const std::string& not_ready,
                      const std::function<std::string()>& render_metrics) {
  res.content_type = "text/plain; charset=utf-8";
  if (req.method != "GET" && req.method != "HEAD") {
    res.status = 405;
    res.headers.emplace_back("Allow", "GET");
    res.body = "use GET\n";
  } else if (req.path == "/healthz") {
    res.body = "ok\n";
  } else if (req.path == "/readyz") {
    res.status = not_ready.empty() ? 200 : 503;
    res.body = not_ready.empty() ? "ready\n" : "not ready: " + not_ready + "\n";
  } else if (req.path == "/metrics") {
    res.content_type = "text/plain; version=0.0.4; charset=utf-8";
    res.body = render_metrics();
  } else {
    res.status = 404;
    res.body = "not found: this port serves GET /healthz, /readyz and /metrics\n";
  }
}

}  // namespace shmguard::http
