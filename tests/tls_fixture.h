// Loopback TLS helpers for the [net] tests: a throwaway CA and serving certificates made with
// the openssl command, a raw OpenSSL client for byte-level HTTP, and a spawned shmguard process.
#pragma once

#include <openssl/ssl.h>
#include <sys/types.h>

#include <map>
#include <string>
#include <vector>

namespace shmguard::test {

// A fresh temporary directory, removed by the destructor.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  const std::string& path() const { return path_; }
  std::string File(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

// Writes ca.crt/ca.key in `dir` (once) and a serving pair for localhost/127.0.0.1 whose subject
// CN is `cn` to `cert_file`/`key_file`. Fails the test when openssl fails.
void MakeCa(const std::string& dir);
void IssueCert(const std::string& dir, const std::string& cn, const std::string& cert_file, const std::string& key_file,
               int days = 2);

struct HttpReply {
  int status = 0;
  std::map<std::string, std::string> headers;  // lower-case names
  std::string body;
};

// One TLS connection to 127.0.0.1:port, verifying against `ca_file`.
class TlsConnection {
 public:
  // max_version: e.g. TLS1_1_VERSION to try an old protocol (0 = library default). With
  // cert_file and key_file the client shows that certificate (mutual TLS).
  // `source`: the loopback address it connects from (ConnectLoopback).
  TlsConnection(int port, const std::string& ca_file, int max_version = 0, const std::string& cert_file = "",
                const std::string& key_file = "", const std::string& source = "");
  ~TlsConnection();
  bool ok() const { return ssl_ != nullptr; }
  const std::string& error() const { return error_; }
  std::string PeerCommonName() const;
  bool Write(const std::string& bytes);
  // Reads one HTTP/1.1 response (Content-Length bodies). status 0 when the connection closed.
  HttpReply Read();
  HttpReply Post(const std::string& path, const std::string& body,
                 const std::string& content_type = "application/json");

 private:
  SSL_CTX* ctx_ = nullptr;
  SSL* ssl_ = nullptr;
  int fd_ = -1;
  std::string buffer_, error_;
};

// A `shmguard-webhook` process (or `program`) started with `args`; stderr goes to `log_file`.
class Process {
 public:
  Process(const std::vector<std::string>& args, const std::string& log_file,
          const std::string& program = SHMGUARD_WEBHOOK_BINARY);
  ~Process();  // SIGKILL if still running
  void Signal(int sig);
  // Waits up to `seconds` for exit; returns the exit code, or -1 on timeout / signal death.
  int Wait(double seconds);
  pid_t pid() const { return pid_; }

 private:
  pid_t pid_ = -1;
  bool exited_ = false;
};

// Waits until GET http://127.0.0.1:port/readyz answers 200 (or `seconds` pass).
bool WaitReady(int metrics_port, double seconds);

// A TCP connection to 127.0.0.1:port with a 10 s receive timeout; -1 when it fails.
// `source`: the loopback address to connect from ("127.0.0.2": another peer), "" the kernel's.
int ConnectLoopback(int port, const std::string& source = "");

// A free TCP port on 127.0.0.1 (bound and released).
int FreePort();

// An admission.k8s.io/v1 AdmissionReview for `object` (JSON text).
std::string ReviewJson(const std::string& object_json, const std::string& ns, const std::string& operation = "CREATE",
                       const std::string& kind = "Pod", const std::string& uid = "uid-1");

// base64 decoding for patches in responses.
std::string DecodeBase64(const std::string& text);

}  // namespace shmguard::test
