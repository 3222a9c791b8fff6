// HandshakePolicy over OpenSSL 3: the ClientHello callback runs before the protocol version and
// the cipher are chosen and before a CertificateRequest is sent, so version, suites and client
// verification can all be set per connection there (SSL_CTX_set_client_hello_cb(3)).
#include "server/handshake_policy.h"

#include <openssl/err.h>
#include <openssl/x509v3.h>

#include <cerrno>
#include <cstring>

#include "http/openssl_error.h"
#include "io/files/file_text.h"

namespace shmguard::server {

struct HandshakePolicy::Compiled {
  TlsSettings settings;
  int min_proto = TLS1_3_VERSION;
  std::string tls12;  // OpenSSL cipher list for TLS 1.2
  std::string tls13;  // OpenSSL ciphersuites for TLS 1.3
};

// The client CAs: the store certificates are verified against, and their names for the
// CertificateRequest (clients with several certificates pick the one these issued).
struct HandshakePolicy::Cas {
  X509_STORE* store = nullptr;
  STACK_OF(X509_NAME) * names = nullptr;
  Cas() = default;
  Cas(const Cas&) = delete;
  Cas& operator=(const Cas&) = delete;
  ~Cas() {
    X509_STORE_free(store);
    if (names) sk_X509_NAME_pop_free(names, X509_NAME_free);
  }
};

namespace {

// OpenSSL's default TLS 1.3 suites: all three are AEAD (RFC 8446 §B.4).
constexpr const char* kTls13Default = "TLS_AES_256_GCM_SHA384:TLS_CHACHA20_POLY1305_SHA256:TLS_AES_128_GCM_SHA256";

int PolicyIndex() {
  static const int index = SSL_get_ex_new_index(0, nullptr, nullptr, nullptr, nullptr);
  return index;
}

}  // namespace

Result<std::shared_ptr<const HandshakePolicy::Compiled>> HandshakePolicy::Compile(const TlsSettings& tls) {
  const bool tls12 = tls.min_version == TlsVersion::kTls12;
  auto suites = tls.cipher_suites.empty() ? Result<std::vector<const CipherSuite*>>(DefaultCipherSuites())
                                          : ParseCipherSuites(tls.cipher_suites, tls12);
  if (!suites) return suites.error();
  auto c = std::make_shared<Compiled>();
  c->settings = tls;
  c->min_proto = tls12 ? TLS1_2_VERSION : TLS1_3_VERSION;
  for (const CipherSuite* s : *suites) {
    std::string& list = s->tls13 ? c->tls13 : c->tls12;
    list += (list.empty() ? "" : ":") + std::string(s->openssl);
  }
  if (c->tls13.empty()) c->tls13 = kTls13Default;
  if (c->tls12.empty()) {  // TLS 1.3 only: the TLS 1.2 list is never used, but may not be empty
    for (const CipherSuite* s : DefaultCipherSuites())
      c->tls12 += (c->tls12.empty() ? "" : ":") + std::string(s->openssl);
  }
  return std::shared_ptr<const Compiled>(std::move(c));
}

Result<std::shared_ptr<const HandshakePolicy::Cas>> HandshakePolicy::LoadCas(const std::string& file) {
  auto cas = std::make_shared<Cas>();
  cas->store = X509_STORE_new();
  // OpenSSL reads the file by its path: it must be a regular file of a credential's size first,
  // never a FIFO or a device that would hold the reload.
  if (auto read = io::ReadFileText(file, io::kMaxCredentialBytes, io::Readable::kRegularFiles); !read) {
    return read.error();
  }
  if (X509_STORE_load_file(cas->store, file.c_str()) != 1) {
    return MakeError(Code::kInvalidInput, "no PEM CA certificate: " + http::OpenSslError("no PEM certificate"),
                     Location::File(file));
  }
  cas->names = SSL_load_client_CA_file(file.c_str());
  ERR_clear_error();
  if (!cas->names || sk_X509_NAME_num(cas->names) == 0) {
    return MakeError(Code::kInvalidInput, "no PEM CA certificate", Location::File(file));
  }
  return std::shared_ptr<const Cas>(std::move(cas));
}

Result<std::unique_ptr<HandshakePolicy>> HandshakePolicy::Create(const TlsSettings& tls, const ClientAuth& auth) {
  ClientAuth a = auth;
  if (!a.ca_file.empty() && a.names.empty()) a.names = {"kube-apiserver"};
  std::unique_ptr<HandshakePolicy> p(new HandshakePolicy(std::move(a)));
  auto compiled = Compile(tls);
  if (!compiled) return compiled.error();
  p->tls_ = *compiled;
  if (p->requires_client_cert()) {
    auto cas = LoadCas(p->auth_.ca_file);
    if (!cas) return cas.error();
    p->cas_ = *cas;
  }
  return p;
}

Result<bool> HandshakePolicy::SetTls(const TlsSettings& tls) {
  auto compiled = Compile(tls);
  if (!compiled) return compiled.error();
  std::lock_guard<std::mutex> lock(mu_);
  tls_ = *compiled;
  return true;
}

Result<bool> HandshakePolicy::ReloadClientCa() {
  auto cas = LoadCas(auth_.ca_file);
  if (!cas) return cas.error();
  std::lock_guard<std::mutex> lock(mu_);
  cas_ = *cas;
  return true;
}

TlsSettings HandshakePolicy::tls() const {
  std::lock_guard<std::mutex> lock(mu_);
  return tls_->settings;
}

void HandshakePolicy::Install(SSL_CTX* ctx) { SSL_CTX_set_client_hello_cb(ctx, &HandshakePolicy::OnClientHello, this); }

int HandshakePolicy::OnClientHello(SSL* ssl, int* alert, void* arg) {
  auto* self = static_cast<HandshakePolicy*>(arg);
  std::shared_ptr<const Compiled> tls;
  std::shared_ptr<const Cas> cas;
  {
    std::lock_guard<std::mutex> lock(self->mu_);
    tls = self->tls_;
    cas = self->cas_;
  }
  if (SSL_set_min_proto_version(ssl, tls->min_proto) != 1 || SSL_set_cipher_list(ssl, tls->tls12.c_str()) != 1 ||
      SSL_set_ciphersuites(ssl, tls->tls13.c_str()) != 1) {
    *alert = SSL_AD_INTERNAL_ERROR;
    return SSL_CLIENT_HELLO_ERROR;
  }
  if (cas) {
    // The store and names are the connection's own references: a reload may replace them.
    SSL_set1_verify_cert_store(ssl, cas->store);
    SSL_set_client_CA_list(ssl, SSL_dup_CA_list(cas->names));
    SSL_set_ex_data(ssl, PolicyIndex(), self);
    SSL_set_verify(ssl, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, &HandshakePolicy::OnVerify);
  }
  return SSL_CLIENT_HELLO_SUCCESS;
}

bool HandshakePolicy::NameAllowed(X509* cert) const {
  char cn[256] = {0};
  int n = X509_NAME_get_text_by_NID(X509_get_subject_name(cert), NID_commonName, cn, sizeof cn);
  for (const auto& name : auth_.names) {
    if (n > 0 && name == cn) return true;
    // A DNS SAN, compared whole (no wildcards): X509_check_host(3).
    if (X509_check_host(cert, name.c_str(), name.size(),
                        X509_CHECK_FLAG_NEVER_CHECK_SUBJECT | X509_CHECK_FLAG_NO_WILDCARDS, nullptr) == 1) {
      return true;
    }
  }
  return false;
}

int HandshakePolicy::OnVerify(int ok, X509_STORE_CTX* store) {
  if (!ok || X509_STORE_CTX_get_error_depth(store) != 0) return ok;
  auto* ssl = static_cast<SSL*>(X509_STORE_CTX_get_ex_data(store, SSL_get_ex_data_X509_STORE_CTX_idx()));
  auto* self = static_cast<HandshakePolicy*>(SSL_get_ex_data(ssl, PolicyIndex()));
  if (self && self->NameAllowed(X509_STORE_CTX_get_current_cert(store))) return 1;
  X509_STORE_CTX_set_error(store, X509_V_ERR_APPLICATION_VERIFICATION);
  return 0;
}

const char* HandshakePolicy::FailureReason(const SSL* ssl) {
  if (SSL_get_verify_result(ssl) != X509_V_OK) return "client_cert";
  unsigned long e = ERR_peek_last_error();
  if (ERR_GET_LIB(e) == ERR_LIB_SSL && (ERR_GET_REASON(e) == SSL_R_PEER_DID_NOT_RETURN_A_CERTIFICATE ||
                                        ERR_GET_REASON(e) == SSL_R_CERTIFICATE_VERIFY_FAILED)) {
    return "client_cert";
  }
  return "tls";
}

std::string HandshakePolicy::FailureDetail(const SSL* ssl) {
  long v = SSL_get_verify_result(ssl);
  if (v == X509_V_ERR_APPLICATION_VERIFICATION) {
    auto* self = static_cast<HandshakePolicy*>(SSL_get_ex_data(ssl, PolicyIndex()));
    std::string names;
    if (self) {
      for (const auto& n : self->auth_.names) names += (names.empty() ? "" : ", ") + n;
    }
    return "the client certificate names none of: " + names;
  }
  if (v != X509_V_OK) return std::string("client certificate: ") + X509_verify_cert_error_string(v);
  unsigned long e = ERR_peek_last_error();
  if (ERR_GET_LIB(e) == ERR_LIB_SSL && ERR_GET_REASON(e) == SSL_R_PEER_DID_NOT_RETURN_A_CERTIFICATE) {
    return "no client certificate";
  }
  char buf[256];
  ERR_error_string_n(e, buf, sizeof buf);
  return buf;
}

}  // namespace shmguard::server
