// Implementation of the loopback TLS helpers.
#include "tls_fixture.h"

#include <arpa/inet.h>
#include <httplib.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/x509.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

namespace shmguard::test {

namespace fs = std::filesystem;

TempDir::TempDir() {
  std::string tmpl = (fs::temp_directory_path() / "shmguard-test-XXXXXX").string();
  REQUIRE(mkdtemp(tmpl.data()) != nullptr);
  path_ = tmpl;
}

TempDir::~TempDir() {
  std::error_code ec;
  fs::remove_all(path_, ec);
}

static void Run(const std::string& cmd) {
  INFO(cmd);
  REQUIRE(std::system((cmd + " >/dev/null 2>&1").c_str()) == 0);
}

void MakeCa(const std::string& dir) {
  if (fs::exists(dir + "/ca.crt")) return;
  Run("openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout " + dir + "/ca.key -out " +
      dir + "/ca.crt -days 2 -subj /CN=shmguard-test-ca");
}

void IssueCert(const std::string& dir, const std::string& cn, const std::string& cert_file, const std::string& key_file,
               int days) {
  MakeCa(dir);
  std::string base = dir + "/issue-" + cn;
  std::ofstream(base + ".ext") << "subjectAltName=DNS:localhost,IP:127.0.0.1\n";
  Run("openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout " + base + ".key -out " + base +
      ".csr -subj /CN=" + cn);
  Run("openssl x509 -req -in " + base + ".csr -CA " + dir + "/ca.crt -CAkey " + dir + "/ca.key -CAcreateserial -out " +
      base + ".crt -days " + std::to_string(days) + " -extfile " + base + ".ext");
  // Install both files atomically (rename), as cert-manager's writer does.
  fs::copy_file(base + ".crt", cert_file + ".tmp", fs::copy_options::overwrite_existing);
  fs::copy_file(base + ".key", key_file + ".tmp", fs::copy_options::overwrite_existing);
  fs::rename(cert_file + ".tmp", cert_file);
  fs::rename(key_file + ".tmp", key_file);
}

TlsConnection::TlsConnection(int port, const std::string& ca_file, int max_version, const std::string& cert_file,
                             const std::string& key_file, const std::string& source) {
  ctx_ = SSL_CTX_new(TLS_client_method());
  if (!cert_file.empty()) {
    REQUIRE(SSL_CTX_use_certificate_chain_file(ctx_, cert_file.c_str()) == 1);
    REQUIRE(SSL_CTX_use_PrivateKey_file(ctx_, key_file.c_str(), SSL_FILETYPE_PEM) == 1);
  }
  SSL_CTX_load_verify_locations(ctx_, ca_file.c_str(), nullptr);
  SSL_CTX_set_verify(ctx_, SSL_VERIFY_PEER, nullptr);
  if (max_version != 0) {
    SSL_CTX_set_security_level(ctx_, 0);  // let the client offer old protocols: the server must refuse
    SSL_CTX_set_min_proto_version(ctx_, TLS1_VERSION);
    SSL_CTX_set_max_proto_version(ctx_, max_version);
  }
  fd_ = ConnectLoopback(port, source);
  if (fd_ < 0) {
    error_ = "connect failed";
    return;
  }
  SSL* ssl = SSL_new(ctx_);
  SSL_set_fd(ssl, fd_);
  SSL_set_tlsext_host_name(ssl, "localhost");
  if (SSL_connect(ssl) != 1) {
    char buf[256];
    ERR_error_string_n(ERR_get_error(), buf, sizeof buf);
    error_ = buf;
    ERR_clear_error();
    SSL_free(ssl);
    return;
  }
  ssl_ = ssl;
}

TlsConnection::~TlsConnection() {
  if (ssl_) {
    SSL_shutdown(ssl_);
    SSL_free(ssl_);
  }
  if (fd_ >= 0) ::close(fd_);
  SSL_CTX_free(ctx_);
}

std::string TlsConnection::PeerCommonName() const {
  X509* peer = SSL_get1_peer_certificate(ssl_);
  if (!peer) return {};
  char cn[256] = {0};
  X509_NAME_get_text_by_NID(X509_get_subject_name(peer), NID_commonName, cn, sizeof cn);
  X509_free(peer);
  return cn;
}

bool TlsConnection::Write(const std::string& bytes) {
  return ssl_ && SSL_write(ssl_, bytes.data(), static_cast<int>(bytes.size())) == static_cast<int>(bytes.size());
}

HttpReply TlsConnection::Read() {
  HttpReply reply;
  if (!ssl_) return reply;
  auto fill = [&] {
    char buf[16384];
    int n = SSL_read(ssl_, buf, sizeof buf);
    if (n <= 0) return false;
    buffer_.append(buf, static_cast<size_t>(n));
    return true;
  };
  size_t header_end;
  while ((header_end = buffer_.find("\r\n\r\n")) == std::string::npos) {
    if (!fill()) return reply;
  }
  std::string head = buffer_.substr(0, header_end);
  buffer_.erase(0, header_end + 4);
  reply.status = std::atoi(head.substr(9, 3).c_str());
  size_t pos = head.find("\r\n");
  while (pos != std::string::npos && pos < head.size()) {
    size_t next = head.find("\r\n", pos + 2);
    std::string line = head.substr(pos + 2, next == std::string::npos ? std::string::npos : next - pos - 2);
    size_t colon = line.find(':');
    if (colon != std::string::npos) {
      std::string name = line.substr(0, colon);
      for (auto& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      reply.headers[name] = line.substr(line.find_first_not_of(' ', colon + 1));
    }
    pos = next;
  }
  size_t length = reply.headers.count("content-length") ? std::stoul(reply.headers["content-length"]) : 0;
  while (buffer_.size() < length) {
    if (!fill()) break;
  }
  reply.body = buffer_.substr(0, length);
  buffer_.erase(0, std::min(length, buffer_.size()));
  return reply;
}

HttpReply TlsConnection::Post(const std::string& path, const std::string& body, const std::string& content_type) {
  std::string req = "POST " + path + " HTTP/1.1\r\nHost: localhost\r\nContent-Type: " + content_type +
                    "\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
  if (!Write(req)) return {};
  return Read();
}

Process::Process(const std::vector<std::string>& args, const std::string& log_file, const std::string& program) {
  pid_ = fork();
  REQUIRE(pid_ >= 0);
  if (pid_ == 0) {
    FILE* f = std::freopen(log_file.c_str(), "w", stderr);
    (void)f;
    std::vector<char*> argv;
    std::string bin = program;
    argv.push_back(bin.data());
    std::vector<std::string> copy = args;
    for (auto& a : copy) argv.push_back(a.data());
    argv.push_back(nullptr);
    execvp(bin.c_str(), argv.data());
    _exit(127);
  }
}

Process::~Process() {
  if (!exited_ && pid_ > 0) {
    ::kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
}

void Process::Signal(int sig) { ::kill(pid_, sig); }

int Process::Wait(double seconds) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (std::chrono::steady_clock::now() < deadline) {
    int status = 0;
    pid_t r = waitpid(pid_, &status, WNOHANG);
    if (r == pid_) {
      exited_ = true;
      return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return -1;
}

bool WaitReady(int metrics_port, double seconds) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (std::chrono::steady_clock::now() < deadline) {
    httplib::Client c("127.0.0.1", metrics_port);
    c.set_connection_timeout(0, 200000);
    auto res = c.Get("/readyz");
    if (res && res->status == 200) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return false;
}

int ConnectLoopback(int port, const std::string& source) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (!source.empty()) {
    sockaddr_in from{};
    from.sin_family = AF_INET;
    inet_pton(AF_INET, source.c_str(), &from.sin_addr);
    if (::bind(fd, reinterpret_cast<sockaddr*>(&from), sizeof from) != 0) {
      ::close(fd);
      return -1;
    }
  }
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  timeval tv{10, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

int FreePort() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  socklen_t len = sizeof addr;
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  int port = ntohs(addr.sin_port);
  ::close(fd);
  return port;
}

std::string ReviewJson(const std::string& object_json, const std::string& ns, const std::string& operation,
                       const std::string& kind, const std::string& uid) {
  nlohmann::json k = kind == "JobSet"
                         ? nlohmann::json{{"group", "jobset.x-k8s.io"}, {"version", "v1alpha2"}, {"kind", "JobSet"}}
                         : nlohmann::json{{"group", ""}, {"version", "v1"}, {"kind", kind}};
  nlohmann::json review = {{"apiVersion", "admission.k8s.io/v1"},
                           {"kind", "AdmissionReview"},
                           {"request",
                            {{"uid", uid},
                             {"kind", k},
                             {"namespace", ns},
                             {"operation", operation},
                             {"dryRun", false},
                             {"object", nlohmann::json::parse(object_json)}}}};
  return review.dump();
}

std::string DecodeBase64(const std::string& text) {
  std::string out(3 * text.size() / 4 + 3, '\0');
  int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                          reinterpret_cast<const unsigned char*>(text.data()), static_cast<int>(text.size()));
  REQUIRE(n >= 0);
  size_t pad = text.size() >= 2 ? (text[text.size() - 1] == '=') + (text[text.size() - 2] == '=') : 0;
  out.resize(static_cast<size_t>(n) - pad);
  return out;
}

}  // namespace shmguard::test
