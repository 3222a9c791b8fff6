// The serving certificate, re-read when cert-manager rotates it. Every TLS handshake asks for
// the current pair through OpenSSL's certificate callback, so a rotation reaches new connections
// without a restart and without touching connections in flight. A pair that does not load (half
// written, mismatched, deleted) leaves the previous one in use.
#pragma once

#include <openssl/ssl.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "core/values/result.h"

namespace shmguard::server {

// A certificate chain (leaf first) and its private key, owned.
struct CertPair {
  X509* cert = nullptr;
  STACK_OF(X509) * chain = nullptr;  // intermediates, may be empty
  EVP_PKEY* key = nullptr;
  int64_t not_after = 0;  // seconds since the Unix epoch
  std::string subject;
  CertPair() = default;
  CertPair(const CertPair&) = delete;
  CertPair& operator=(const CertPair&) = delete;
  ~CertPair();
};

// Reads a PEM certificate chain and a PEM private key. Fails with kIo when a file cannot be
// read and kInvalidInput when it holds no PEM certificate/key or the key does not match.
Result<std::shared_ptr<const CertPair>> LoadCertPair(const std::string& cert_file, const std::string& key_file);

class CertReloader {
 public:
  CertReloader(std::string cert_file, std::string key_file, std::shared_ptr<const CertPair> first);

  // Loads the files again; on success the new pair serves every later handshake.
  // On failure the previous pair stays and the error is returned.
  Result<std::shared_ptr<const CertPair>> Reload();

  // Makes every handshake on `ctx` take the current pair (SSL_CTX_set_cert_cb).
  // REQUIRES: this outlives ctx's connections.
  void Install(SSL_CTX* ctx);

  std::shared_ptr<const CertPair> Current() const;
  const std::string& cert_file() const { return cert_file_; }
  const std::string& key_file() const { return key_file_; }

 private:
  static int OnHandshake(SSL* ssl, void* self);
  std::string cert_file_, key_file_;
  mutable std::mutex mu_;
  std::shared_ptr<const CertPair> current_;
};

}  // namespace shmguard::server
