// KubeClient over cpp-httplib: requests, the token file, backoff, the rate limit, list+watch.
#include "server/kube_client.h"

#include <httplib.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <sys/stat.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <thread>

#include "io/manifests.h"
#include "io/yaml_json.h"

namespace shmguard::server {
namespace {

using Clock = std::chrono::steady_clock;
constexpr const char* kServiceAccount = "/var/run/secrets/kubernetes.io/serviceaccount";

template <typename T, void (*Free)(T*)>
using OpenSslPtr = std::unique_ptr<T, decltype([](T* p) { Free(p); })>;

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

std::unique_ptr<httplib::SSLClient> Connect(const KubeConfig& c, time_t read_timeout_seconds) {
  auto [host, port] = HostPort(c.server);
  std::unique_ptr<httplib::SSLClient> client;
  if (!c.client_cert_pem.empty()) {
    OpenSslPtr<BIO, BIO_free_all> cert_bio(BIO_new_mem_buf(c.client_cert_pem.data(), -1));
    OpenSslPtr<BIO, BIO_free_all> key_bio(BIO_new_mem_buf(c.client_key_pem.data(), -1));
    OpenSslPtr<X509, X509_free> cert(PEM_read_bio_X509(cert_bio.get(), nullptr, nullptr, nullptr));
    OpenSslPtr<EVP_PKEY, EVP_PKEY_free> key(PEM_read_bio_PrivateKey(key_bio.get(), nullptr, nullptr, nullptr));
    client = std::make_unique<httplib::SSLClient>(host, port, cert.get(), key.get());  // it takes references
  } else {
    client = std::make_unique<httplib::SSLClient>(host, port);
  }
  if (!c.ca_pem.empty()) {
    X509_STORE* store = X509_STORE_new();  // the client's SSL_CTX owns it from here
    OpenSslPtr<BIO, BIO_free_all> bio(BIO_new_mem_buf(c.ca_pem.data(), -1));
    while (X509* ca = PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr)) {
      X509_STORE_add_cert(store, ca);
      X509_free(ca);
    }
    ERR_clear_error();  // the end of the bundle reads as an error
    client->set_ca_cert_store(store);
  } else if (!c.ca_file.empty()) {
    client->set_ca_cert_path(c.ca_file);
  }
  client->enable_server_certificate_verification(!c.insecure);
  client->set_connection_timeout(5);
  client->set_read_timeout(read_timeout_seconds);
  client->set_write_timeout(10);
  client->set_keep_alive(true);
  return client;
}

bool Stopping(const std::atomic<bool>& stop, std::chrono::milliseconds wait) {
  auto until = Clock::now() + wait;
  while (Clock::now() < until) {
    if (stop) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return stop;
}

std::string WithQuery(const std::string& path, const std::string& query) {
  return path + (path.find('?') == std::string::npos ? "?" : "&") + query;
}

}  // namespace

Result<KubeConfig> KubeConfig::InCluster() {
  const char* host = std::getenv("KUBERNETES_SERVICE_HOST");
  const char* port = std::getenv("KUBERNETES_SERVICE_PORT");
  if (!host || !port || !*host || !*port) {
    return MakeError(Code::kIo, "not in a pod: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT are not set");
  }
  std::string h = host;
  if (h.find(':') != std::string::npos) h = "[" + h + "]";  // IPv6
  KubeConfig c;
  c.server = "https://" + h + ":" + port;
  c.ca_file = std::string(kServiceAccount) + "/ca.crt";
  c.token_file = std::string(kServiceAccount) + "/token";
  struct stat st {};
  if (::stat(c.token_file.c_str(), &st) != 0)
    return MakeError(Code::kIo, "no service account token", Location::File(c.token_file));
  return c;
}

namespace {

// RFC 4648 base64, as kubeconfig's *-data fields hold PEM; nullopt when it is not base64.
std::optional<std::string> DecodeBase64(std::string_view text) {
  std::string in;
  for (char c : text) {
    if (c != '\n' && c != '\r' && c != ' ') in += c;
  }
  if (in.size() % 4 != 0) return std::nullopt;
  std::string out(in.size() / 4 * 3, '\0');
  int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                          reinterpret_cast<const unsigned char*>(in.data()), static_cast<int>(in.size()));
  if (n < 0) return std::nullopt;
  size_t padding = in.empty() ? 0 : (in.back() == '=') + (in.size() > 1 && in[in.size() - 2] == '=');
  out.resize(static_cast<size_t>(n) - padding);
  return out;
}

// The entry named `name` of a kubeconfig list (clusters, users, contexts): its `field` object.
// The `field` of the entry of `list` named `name` (a kubeconfig's contexts, clusters, users);
// absent when there is none.
JsonNode Named(JsonNode config, const char* list, std::string_view name, const char* field) {
  for (JsonNode entry : config.Find(list).Items()) {
    if (entry.StringMember("name") == name) {
      JsonNode f = entry.Find(field);
      return f.IsObject() ? f : JsonNode();
    }
  }
  return {};
}

std::string Str(JsonNode o, const char* key) { return std::string(o.StringMember(key)); }

}  // namespace

Result<KubeConfig> KubeConfig::FromKubeconfig(const std::string& path, const std::string& context) {
  auto text = io::ReadFileText(path, io::kMaxCredentialBytes);
  if (!text) return text.error();
  auto parsed = io::ParseYaml(*text);
  if (!parsed) return MakeError(Code::kInvalidInput, parsed.error().ToString(), Location::File(path));
  const JsonNode config = parsed->Root();
  if (!config.IsObject()) return MakeError(Code::kInvalidInput, "not a kubeconfig (a mapping)", Location::File(path));
  const std::string name = context.empty() ? Str(config, "current-context") : context;
  if (name.empty()) return MakeError(Code::kInvalidInput, "no current-context: give --context", Location::File(path));
  const JsonNode ctx = Named(config, "contexts", name, "context");
  if (!ctx) return MakeError(Code::kInvalidInput, "no context named " + name, Location::File(path));
  const JsonNode cluster = Named(config, "clusters", Str(ctx, "cluster"), "cluster");
  if (!cluster)
    return MakeError(Code::kInvalidInput, "context " + name + ": no cluster " + Str(ctx, "cluster"),
                     Location::File(path));
  const JsonNode user = Named(config, "users", Str(ctx, "user"), "user");  // absent: anonymous
  const std::string dir = path.find('/') == std::string::npos ? "." : path.substr(0, path.rfind('/'));
  auto resolve = [&](const std::string& f) { return f.empty() || f[0] == '/' ? f : dir + "/" + f; };
  // A PEM from `field`-data (base64) or the file `field` names.
  auto pem = [&](JsonNode o, const std::string& field) -> Result<std::string> {
    if (std::string data = Str(o, (field + "-data").c_str()); !data.empty()) {
      auto decoded = DecodeBase64(data);
      if (!decoded) return MakeError(Code::kInvalidInput, field + "-data is not base64", Location::File(path));
      return *decoded;
    }
    if (std::string file = Str(o, field.c_str()); !file.empty()) {
      return io::ReadFileText(resolve(file), io::kMaxCredentialBytes);
    }
    return std::string();
  };
  KubeConfig c;
  c.context_namespace = Str(ctx, "namespace");
  c.server = Str(cluster, "server");
  if (c.server.rfind("https://", 0) != 0) {
    return MakeError(Code::kInvalidInput, "cluster " + Str(ctx, "cluster") + ": server must be https://",
                     Location::File(path));
  }
  c.insecure = cluster.Find("insecure-skip-tls-verify").Bool();
  auto ca = pem(cluster, "certificate-authority");
  if (!ca) return ca.error();
  c.ca_pem = *ca;
  if (user.Find("exec") || user.Find("auth-provider")) {
    return MakeError(Code::kInvalidInput,
                     "user " + Str(ctx, "user") +
                         ": exec and auth-provider credential plugins are not supported; use a token or a client "
                         "certificate",
                     Location::File(path));
  }
  c.token = Str(user, "token");
  c.token_file = resolve(Str(user, "tokenFile"));
  auto cert = pem(user, "client-certificate");
  if (!cert) return cert.error();
  auto key = pem(user, "client-key");
  if (!key) return key.error();
  c.client_cert_pem = *cert;
  c.client_key_pem = *key;
  return c;
}

Result<KubeConfig> ResolveApi(const KubeConfig& flags) {
  if (flags.server.empty()) return KubeConfig::InCluster();
  if (flags.ca_file.empty()) return MakeError(Code::kInvalidInput, "--api-server needs --api-ca-file");
  if (flags.token_file.empty()) return MakeError(Code::kInvalidInput, "--api-server needs --api-token-file");
  return flags;
}

std::string KubeResponse::Message() const {
  if (body.is_object()) {
    auto it = body.find("message");
    if (it != body.end() && it->is_string()) return it->get<std::string>();
  }
  return "HTTP " + std::to_string(status);
}

std::chrono::milliseconds Backoff::Next() {
  auto d = next_;
  next_ = std::min(max_, next_ * 2);
  std::uniform_int_distribution<long> pick(d.count() / 2, d.count());
  return std::chrono::milliseconds(pick(rng_));
}

RateLimiter::RateLimiter(double qps, int burst, TimePoint start)
    : qps_(qps), tokens_(burst), burst_(burst), last_(start) {}

std::chrono::duration<double> RateLimiter::Reserve(TimePoint now) {
  std::lock_guard<std::mutex> lock(mu_);
  if (now > last_) {
    tokens_ = std::min(burst_, tokens_ + qps_ * std::chrono::duration<double>(now - last_).count());
    last_ = now;
  }
  tokens_ -= 1;
  return std::chrono::duration<double>(tokens_ >= 0 ? 0 : -tokens_ / qps_);
}

void RateLimiter::Wait() {
  auto wait = Reserve(Clock::now());
  if (wait.count() > 0) std::this_thread::sleep_for(wait);
}

KubeClient::KubeClient(KubeConfig config, double qps, int burst) : config_(std::move(config)), limiter_(qps, burst) {}

std::string KubeClient::Token() {
  std::lock_guard<std::mutex> lock(token_mu_);
  if (config_.token_file.empty()) return config_.token;
  struct stat st {};
  if (::stat(config_.token_file.c_str(), &st) != 0) return token_;
  auto mtime = std::chrono::system_clock::time_point(std::chrono::seconds(st.st_mtim.tv_sec) +
                                                     std::chrono::nanoseconds(st.st_mtim.tv_nsec));
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

Result<KubeResponse> KubeClient::Request(const std::string& method, const std::string& path, const std::string& body,
                                         const std::string& content_type) {
  limiter_.Wait();
  auto client = Connect(config_, 30);
  httplib::Headers headers = {{"Accept", "application/json"}};
  if (std::string token = Token(); !token.empty()) headers.emplace("Authorization", "Bearer " + token);
  auto send = [&]() -> std::optional<httplib::Result> {
    if (method == "GET") return client->Get(path.c_str(), headers);
    if (method == "POST") return client->Post(path.c_str(), headers, body, content_type.c_str());
    if (method == "PATCH") return client->Patch(path.c_str(), headers, body, content_type.c_str());
    if (method == "PUT") return client->Put(path.c_str(), headers, body, content_type.c_str());
    if (method == "DELETE") return client->Delete(path.c_str(), headers);
    return std::nullopt;
  };
  auto sent = send();
  if (!sent) return MakeError(Code::kInternal, "unsupported method " + method);
  httplib::Result& res = *sent;
  if (!res)
    return MakeError(Code::kIo, method + " " + path + ": " + httplib::to_string(res.error()),
                     Location::Field(config_.server));
  KubeResponse out;
  out.status = res->status;
  out.text = res->body;
  out.body = nlohmann::json::parse(res->body, nullptr, false);
  if (out.body.is_discarded()) out.body = nullptr;
  return out;
}

std::string KubeClient::WatchOnce(const std::string& path, const std::string& version,
                                  const std::function<void(const std::string&, const nlohmann::json&)>& on_event,
                                  const std::atomic<bool>& stop, int watch_seconds, bool& broken) {
  ++watches_;
  // The read timeout outlasts the API server's own end of the watch; a bookmark arrives about
  // once a minute, so a longer silence is a dead connection.
  auto client = Connect(config_, watch_seconds + 30);
  httplib::Headers headers = {{"Accept", "application/json"}};
  if (std::string token = Token(); !token.empty()) headers.emplace("Authorization", "Bearer " + token);
  std::string query = "watch=1&allowWatchBookmarks=true&timeoutSeconds=" + std::to_string(watch_seconds) +
                      "&resourceVersion=" + version;
  std::string last = version, buffer;
  bool gone = false;
  int status = 0;
  auto res = client->Get(
      WithQuery(path, query).c_str(), headers,
      [&](const httplib::Response& r) {
        status = r.status;
        return r.status == 200;
      },
      [&](const char* data, size_t n) {
        buffer.append(data, n);
        size_t start = 0;
        for (size_t nl; (nl = buffer.find('\n', start)) != std::string::npos; start = nl + 1) {
          auto event = nlohmann::json::parse(buffer.begin() + static_cast<long>(start),
                                             buffer.begin() + static_cast<long>(nl), nullptr, false);
          if (!event.is_object()) continue;
          // A field of the wrong type (value() throws) makes the event unreadable: skipped.
          try {
            const std::string type = event.value("type", "");
            const nlohmann::json& object = event.contains("object") ? event.at("object") : nlohmann::json();
            if (type == "ERROR") {
              gone = object.is_object() && object.value("code", 0) == 410;
              return false;
            }
            if (object.is_object() && object.contains("metadata") && object.at("metadata").is_object()) {
              last = object.at("metadata").value("resourceVersion", last);
            }
            if (type != "BOOKMARK") on_event(type, object);
          } catch (const nlohmann::json::exception&) {
            continue;
          }
        }
        buffer.erase(0, start);
        return !stop.load();
      });
  if (gone || status == 410) return "";
  if (!res && !stop && res.error() != httplib::Error::Canceled) broken = true;
  if (status != 0 && status != 200) broken = true;
  return last;
}

void KubeClient::ListWatch(const std::string& path, const std::function<void(const nlohmann::json& items)>& on_list,
                           const std::function<void(const std::string& type, const nlohmann::json& object)>& on_event,
                           const std::atomic<bool>& stop, int watch_seconds) {
  Backoff backoff(std::chrono::milliseconds(500), std::chrono::seconds(30));
  std::string version;
  while (!stop) {
    if (version.empty()) {
      auto list = Request("GET", path);
      if (!list || !list->ok() || !list->body.is_object()) {
        if (Stopping(stop, backoff.Next())) return;
        continue;
      }
      const nlohmann::json& body = list->body;
      const nlohmann::json* items = body.contains("items") ? &body.at("items") : nullptr;
      const nlohmann::json* meta = body.contains("metadata") ? &body.at("metadata") : nullptr;
      const nlohmann::json* rv =
          meta && meta->is_object() && meta->contains("resourceVersion") ? &meta->at("resourceVersion") : nullptr;
      if (!items || !items->is_array() || !rv || !rv->is_string()) {  // not a list: try again later
        if (Stopping(stop, backoff.Next())) return;
        continue;
      }
      ++lists_;
      on_list(*items);
      version = rv->get<std::string>();
      backoff.Reset();
      if (version.empty()) {
        if (Stopping(stop, backoff.Next())) return;
        continue;
      }
    }
    bool broken = false;
    version = WatchOnce(path, version, on_event, stop, watch_seconds, broken);
    if (broken && Stopping(stop, backoff.Next())) return;
    if (!broken) backoff.Reset();
  }
}

}  // namespace shmguard::server
