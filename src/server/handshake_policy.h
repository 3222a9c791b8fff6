// What every TLS handshake on the webhook port is held to: the lowest protocol version, the
// cipher suites, and — with a client CA — a client certificate that chains to it and names an
// allowed client (the API server's, as Gatekeeper's --client-ca-name and --client-cn-name ask).
// Applied to each connection in OpenSSL's ClientHello callback, so a changed config file or a
// rotated CA file reaches new connections without a restart and without touching open ones.
#pragma once

#include <openssl/ssl.h>

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/policy/tls_names.h"
#include "core/values/result.h"

namespace shmguard::server {

struct TlsSettings {
  TlsVersion min_version = TlsVersion::kTls13;  // Default: TLS 1.3 (Gatekeeper's default)
  // IANA names (tls_names.h). Empty: the ECDHE AEAD suites for TLS 1.2 (DefaultCipherSuites)
  // and OpenSSL's three TLS 1.3 suites.
  std::vector<std::string> cipher_suites;
};

struct ClientAuth {
  std::string ca_file;  // PEM CA bundle; empty: no client certificate is asked for
  // The client certificate must carry one of these as its subject CN or as a DNS SAN.
  // Default (when ca_file is set and none are given): {"kube-apiserver"}.
  std::vector<std::string> names;
};

class HandshakePolicy {
 public:
  // Checks the settings and loads the CA file. Fails with kInvalidInput for an unknown or
  // refused suite, or a version the suites cannot serve; kIo/kInvalidInput naming the CA file
  // when it cannot be read or holds no certificate.
  static Result<std::unique_ptr<HandshakePolicy>> Create(const TlsSettings& tls, const ClientAuth& auth);

  // New settings for later handshakes; on error the previous ones stay.
  Result<bool> SetTls(const TlsSettings& tls);
  // Reads the CA file again; on error the previous CAs stay.
  Result<bool> ReloadClientCa();

  // Makes every handshake on ctx follow this policy (SSL_CTX_set_client_hello_cb).
  // REQUIRES: this outlives ctx's connections.
  void Install(SSL_CTX* ctx);

  bool requires_client_cert() const { return !auth_.ca_file.empty(); }
  const ClientAuth& client_auth() const { return auth_; }
  TlsSettings tls() const;

  // After a handshake failed with SSL_ERROR_SSL: "client_cert" when the client's certificate
  // was missing, untrusted, expired or named another client; "tls" for anything else. Reads,
  // and does not clear, OpenSSL's error queue.
  static const char* FailureReason(const SSL* ssl);
  // The failure in words, for the log ("no client certificate", "certificate has expired",
  // "the certificate names none of: kube-apiserver", ...).
  static std::string FailureDetail(const SSL* ssl);

 private:
  struct Compiled;
  struct Cas;
  HandshakePolicy(ClientAuth auth) : auth_(std::move(auth)) {}
  static Result<std::shared_ptr<const Compiled>> Compile(const TlsSettings& tls);
  static Result<std::shared_ptr<const Cas>> LoadCas(const std::string& file);
  static int OnClientHello(SSL* ssl, int* alert, void* self);
  static int OnVerify(int ok, X509_STORE_CTX* store);
  bool NameAllowed(X509* cert) const;

  const ClientAuth auth_;
  mutable std::mutex mu_;
  std::shared_ptr<const Compiled> tls_;
  std::shared_ptr<const Cas> cas_;
};

}  // namespace shmguard::server
