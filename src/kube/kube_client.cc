// KubeClient over cpp-httplib: a pool of kept-alive TLS connections sharing one parsed CA
// store, the token file, the rate limit, bounded and cancellable reads.
#include "kube/kube_client.h"

#include <httplib.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include <cctype>
#include <condition_variable>
#include <cstdlib>
#include <optional>
#include <thread>

#include "io/files/file_text.h"
#include "io/files/file_watch.h"
#include "io/files/input_limits.h"
#include "kube/ca_certs.h"

namespace shmguard::kube {
namespace {

using Clock = std::chrono::steady_clock;

// Idle connections kept for reuse. The agent's and the webhook's requests come one or two at a
// time; a few cover their threads.
constexpr size_t kMaxIdle = 4;
// How long a connection is kept idle: kube-apiserver closes a keep-alive connection idle for 90 s
// (measured against the end-to-end control plane's: the socket reads its end at 90.0 s), and a
// request sent on one it closed finds only that end. Half of that, so a connection taken from
// the pool is never one the server is closing.
constexpr auto kMaxIdleFor = std::chrono::seconds(45);

// The host and port of "https://HOST:PORT" (443 without a port; an IPv6 host in brackets).
std::pair<std::string, int> HostPort(const std::string& server) {
  std::string rest = server.rfind("https://", 0) == 0 ? server.substr(8) : server;
  rest = rest.substr(0, rest.find('/'));
  size_t colon = rest.rfind(':');
  if (colon == std::string::npos || (rest.front() == '[' && rest.back() == ']')) return {rest, 443};
  std::string host = rest.substr(0, colon);
  if (host.size() > 1 && host.front() == '[') host = host.substr(1, host.size() - 2);
  return {host, std::atoi(rest.c_str() + colon + 1)};
}

}  // namespace

// What the connections share: the CA's certificates (parsed once per version of its file), the
// client certificate, and the connections kept alive between requests.
struct KubeClient::Pool {
  std::mutex mu;
  std::vector<X509*> cas;
  io::FileStamp ca_stamp;
  uint64_t generation = 0;  // bumped when the CA changes: older connections are not reused
  X509* cert = nullptr;
  EVP_PKEY* key = nullptr;
  struct Idle {
    uint64_t generation;
    std::chrono::steady_clock::time_point since;
    std::unique_ptr<httplib::SSLClient> client;
  };
  std::vector<Idle> idle;
  ~Pool() {
    idle.clear();
    FreeCerts(cas);
    X509_free(cert);
    EVP_PKEY_free(key);
  }
};

namespace {

// The deadline of one request: a watchdog closes the connection when it passes before Finish (a
// server that sends a byte now and then would otherwise hold the request for ever, 30 s between
// reads at a time). Without a deadline, nothing.
class DeadlineWatch {
 public:
  DeadlineWatch(httplib::SSLClient& client, std::optional<std::chrono::steady_clock::time_point> at) {
    if (!at) return;
    thread_ = std::thread([this, &client, deadline = *at] {
      std::unique_lock<std::mutex> lock(mu_);
      if (!cv_.wait_until(lock, deadline, [&] { return done_; })) {
        expired_ = true;
        client.stop();
      }
    });
  }
  ~DeadlineWatch() { Finish(); }
  // Stops the watchdog; whether the deadline passed first.
  bool Finish() {
    if (thread_.joinable()) {
      {
        std::lock_guard<std::mutex> lock(mu_);
        done_ = true;
      }
      cv_.notify_all();
      thread_.join();
    }
    return expired_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false, expired_ = false;
  std::thread thread_;
};

// A request of `method` for `path` with the bearer `token` ("" none); a body, with its type, for
// POST, PUT and PATCH or when one is given.
httplib::Request NewRequest(const std::string& method, const std::string& path, const std::string& body,
                            const std::string& content_type, const std::string& token) {
  httplib::Request req;
  req.method = method;
  req.path = path;
  req.headers = {{"Accept", "application/json"}};
  if (!token.empty()) req.headers.emplace("Authorization", "Bearer " + token);
  if (!body.empty() || method == "POST" || method == "PUT" || method == "PATCH") {
    req.body = body;
    req.headers.emplace("Content-Type", content_type);
  }
  return req;
}

}  // namespace

std::string QueryValue(std::string_view value) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : value) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 0xF];
    }
  }
  return out;
}

void StreamCancel::Cancel() {
  std::lock_guard<std::mutex> lock(mu_);
  cancelled_ = true;
  if (active_) active_->stop();  // shuts the socket down: the read in progress returns
}

std::string KubeResponse::Message() const {
  if (body.is_object()) {
    auto it = body.find("message");
    if (it != body.end() && it->is_string()) return it->get<std::string>();
  }
  return "HTTP " + std::to_string(status);
}

KubeClient::KubeClient(KubeConfig config, double qps, int burst)
    : config_(std::move(config)), limiter_(qps, burst), pool_(std::make_unique<Pool>()) {
  if (!config_.client_cert_pem.empty()) {
    BIO* cert = BIO_new_mem_buf(config_.client_cert_pem.data(), static_cast<int>(config_.client_cert_pem.size()));
    BIO* key = BIO_new_mem_buf(config_.client_key_pem.data(), static_cast<int>(config_.client_key_pem.size()));
    pool_->cert = PEM_read_bio_X509(cert, nullptr, nullptr, nullptr);
    pool_->key = PEM_read_bio_PrivateKey(key, nullptr, nullptr, nullptr);
    BIO_free_all(cert);
    BIO_free_all(key);
    ERR_clear_error();
  }
  if (!config_.ca_pem.empty()) pool_->cas = CertsOf(config_.ca_pem);
}

KubeClient::~KubeClient() = default;

std::unique_ptr<httplib::SSLClient> KubeClient::Connection(std::chrono::seconds read_timeout, Reuse reuse,
                                                           bool* reused) {
  std::unique_ptr<httplib::SSLClient> client;
  X509_STORE* store = nullptr;
  {
    std::lock_guard<std::mutex> lock(pool_->mu);
    if (!config_.ca_file.empty()) {  // re-read only when the file changed (the kubelet rotates it)
      io::FileStamp now = io::StatFile(config_.ca_file);
      if (pool_->cas.empty() || !(now == pool_->ca_stamp)) {
        auto pem = io::ReadFileText(config_.ca_file, io::kMaxCredentialBytes, io::Readable::kRegularFiles);
        std::vector<X509*> fresh = pem ? CertsOf(*pem) : std::vector<X509*>();
        if (!fresh.empty()) {
          FreeCerts(pool_->cas);
          pool_->cas = std::move(fresh);
          pool_->ca_stamp = now;
          pool_->generation++;
          pool_->idle.clear();
        }
      }
    }
    const auto now = Clock::now();
    while (reuse == Reuse::kIdle && !pool_->idle.empty() && !client) {
      Pool::Idle idle = std::move(pool_->idle.back());
      pool_->idle.pop_back();
      if (idle.generation == pool_->generation && now - idle.since < kMaxIdleFor) client = std::move(idle.client);
    }
    if (reused) *reused = client != nullptr;
    if (!client && !pool_->cas.empty()) store = StoreOf(pool_->cas);
  }
  if (!client) {
    auto [host, port] = HostPort(config_.server);
    client = pool_->cert ? std::make_unique<httplib::SSLClient>(host, port, pool_->cert, pool_->key)
                         : std::make_unique<httplib::SSLClient>(host, port);
    if (store) {
      client->set_ca_cert_store(store);  // takes the reference
      store = nullptr;
    }
    client->enable_server_certificate_verification(!config_.insecure);
    client->set_connection_timeout(5);
    client->set_write_timeout(10);
    client->set_keep_alive(true);
    client->set_tcp_nodelay(true);  // a request's head and body in separate writes: no 40 ms Nagle wait between them
    connections_++;
  }
  if (store) X509_STORE_free(store);
  client->set_read_timeout(read_timeout);
  return client;
}

void KubeClient::Return(std::unique_ptr<httplib::SSLClient> client) {
  std::lock_guard<std::mutex> lock(pool_->mu);
  if (pool_->idle.size() < kMaxIdle) pool_->idle.push_back({pool_->generation, Clock::now(), std::move(client)});
}

std::string KubeClient::Token() {
  std::lock_guard<std::mutex> lock(token_mu_);
  if (config_.token_file.empty()) return config_.token;
  io::FileStamp stamp = io::StatFile(config_.token_file);
  if (!stamp.exists) return token_;
  auto mtime = std::chrono::system_clock::time_point(std::chrono::nanoseconds(stamp.mtime_ns));
  if (token_.empty() || mtime != token_mtime_) {
    auto read = io::ReadFileText(config_.token_file, io::kMaxCredentialBytes, io::Readable::kRegularFiles);
    std::string t = read ? std::move(*read) : std::string();
    while (!t.empty() && (t.back() == '\n' || t.back() == '\r' || t.back() == ' ')) t.pop_back();
    if (!t.empty()) {
      token_ = t;
      token_mtime_ = mtime;
    }
  }
  return token_;
}

// One send of a request on `client`, with what came of it.
struct KubeClient::Attempt {
  std::optional<httplib::Result> res;  // none when cancelled before it was sent
  KubeResponse out;
  bool too_large = false, expired = false, cancelled = false;
  bool Answered() const { return res && *res; }
  // Failed before any of an answer: the connection was closed under it (or never answered).
  bool Unanswered() const { return res && !*res && !too_large && !expired && out.text.empty(); }
};

KubeClient::Attempt KubeClient::Send(httplib::SSLClient& client, const httplib::Request& base,
                                     const RequestOptions& options, Clock::time_point start) {
  Attempt a;
  if (options.cancel) {
    std::lock_guard<std::mutex> lock(options.cancel->mu_);
    if (options.cancel->cancelled_) {
      a.cancelled = true;
      return a;
    }
    options.cancel->active_ = &client;
  }
  httplib::Request req = base;
  req.response_handler = [&](const httplib::Response& r) {
    a.out.retry_after = r.get_header_value("Retry-After");
    return true;
  };
  req.content_receiver = [&](const char* data, size_t n, uint64_t, uint64_t) {
    if (a.out.text.size() + n > options.max_body_bytes) {
      a.too_large = true;
      return false;
    }
    a.out.text.append(data, n);
    return true;
  };
  DeadlineWatch watch(client, options.deadline.count() > 0 ? std::optional(start + options.deadline) : std::nullopt);
  a.res = client.send(req);
  if (options.cancel) {
    std::lock_guard<std::mutex> lock(options.cancel->mu_);
    options.cancel->active_ = nullptr;
  }
  a.expired = watch.Finish();
  return a;
}

Result<KubeResponse> KubeClient::Request(const std::string& method, const std::string& path, const std::string& body,
                                         const std::string& content_type, RequestOptions options) {
  const auto start = Clock::now();
  limiter_.Wait(options.cancel ? &options.cancel->flag() : nullptr);
  requests_++;
  const std::string what = method + " " + path;
  const httplib::Request req = NewRequest(method, path, body, content_type, Token());
  bool reused = false;
  auto client = Connection(std::chrono::seconds(30), Reuse::kIdle, &reused);
  Attempt a = Send(*client, req, options, start);
  // A kept-alive connection the server closed however young (a restart, a load balancer): it
  // reached no handler, so the request goes again once on a new connection, as Go's net/http
  // Transport sends again a request that fails so on a reused connection.
  if (reused && a.Unanswered()) {
    client = Connection(std::chrono::seconds(30), Reuse::kNew, nullptr);
    a = Send(*client, req, options, start);
  }
  if (a.cancelled) return MakeError(Code::kIo, what + ": cancelled", Location::Field(config_.server));
  // Past a bound: the input is refused (kInvalidInput), not the transport.
  if (a.too_large) {
    return MakeError(
        Code::kInvalidInput,
        what + ": the answer is larger than the limit of " + std::to_string(options.max_body_bytes) + " bytes",
        Location::Field(config_.server));
  }
  if (a.expired) {
    return MakeError(Code::kIo, what + ": no whole answer within " + std::to_string(options.deadline.count()) + " ms",
                     Location::Field(config_.server));
  }
  if (!a.Answered()) {
    return MakeError(Code::kIo, what + ": " + httplib::to_string(a.res->error()), Location::Field(config_.server));
  }
  const httplib::Result& res = *a.res;
  KubeResponse out = std::move(a.out);
  out.status = res->status;
  auto parsed = ParseBounded(out.text, options.max_values);
  if (!parsed) {
    return MakeError(Code::kInvalidInput,
                     what + ": the answer holds more than " + std::to_string(options.max_values) + " JSON values",
                     Location::Field(config_.server));
  }
  out.body = std::move(*parsed);
  if (out.body.is_discarded()) out.body = nullptr;
  if (res->get_header_value("Connection") != "close") Return(std::move(client));
  return out;
}

StreamEnd KubeClient::Stream(const std::string& path, const std::function<bool(std::string_view line)>& on_line,
                             std::chrono::seconds silence, StreamCancel& cancel, size_t max_line_bytes) {
  StreamEnd end;
  limiter_.Wait(&cancel.flag());  // watches count against the rate limit as every request does
  requests_++;
  auto client = Connection(silence, Reuse::kIdle, nullptr);
  {
    std::lock_guard<std::mutex> lock(cancel.mu_);
    if (cancel.cancelled_) return end;
    cancel.active_ = client.get();
  }
  httplib::Request req;
  req.method = "GET";
  req.path = path;
  req.headers = {{"Accept", "application/json"}};
  if (std::string token = Token(); !token.empty()) req.headers.emplace("Authorization", "Bearer " + token);
  std::string buffer;
  size_t searched = 0;  // the bytes of `buffer` already searched for a newline
  bool reader_stopped = false, too_long = false;
  req.response_handler = [&](const httplib::Response& r) {
    end.status = r.status;
    end.retry_after = r.get_header_value("Retry-After");
    return r.status == 200;
  };
  req.content_receiver = [&](const char* data, size_t n, uint64_t, uint64_t) {
    buffer.append(data, n);
    size_t start = 0;
    for (size_t nl; (nl = buffer.find('\n', std::max(start, searched))) != std::string::npos; start = nl + 1) {
      if (!on_line(std::string_view(buffer).substr(start, nl - start))) {
        reader_stopped = true;
        return false;
      }
    }
    buffer.erase(0, start);
    searched = buffer.size();  // what is left has no newline: only what arrives next is searched
    if (buffer.size() > max_line_bytes) {
      too_long = true;
      return false;
    }
    return !cancel.cancelled();
  };
  httplib::Result res = client->send(req);
  {
    std::lock_guard<std::mutex> lock(cancel.mu_);
    cancel.active_ = nullptr;
  }
  if (too_long) {
    end.error = "a line longer than " + std::to_string(max_line_bytes) + " bytes";
  } else if (!res && !reader_stopped && !cancel.cancelled() && res.error() != httplib::Error::Canceled) {
    end.error = httplib::to_string(res.error());
  }
  return end;
}

}  // namespace shmguard::kube
