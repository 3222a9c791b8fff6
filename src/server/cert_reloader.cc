// LoadCertPair and CertReloader over OpenSSL 3.
#include "server/cert_reloader.h"

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include <cerrno>
#include <cstring>
#include <ctime>

#include "http/openssl_error.h"
#include "io/files/file_text.h"

namespace shmguard::server {
namespace {

struct BioCloser {
  void operator()(BIO* b) const { BIO_free(b); }
};
using BioPtr = std::unique_ptr<BIO, BioCloser>;

// A PEM file's text and a memory BIO over it (the BIO views `text`, which must outlive it). Read
// through FileText: a regular file of at most kMaxCredentialBytes, opened without waiting, so a
// rotation that leaves a FIFO or a device at the path is an error of that reload, not a hang.
struct PemFile {
  std::string text;
  BioPtr bio;
  BIO* get() const { return bio.get(); }
};

Result<std::unique_ptr<PemFile>> OpenFile(const std::string& path) {
  auto read = io::ReadFileText(path, io::kMaxCredentialBytes, io::Readable::kRegularFiles);
  if (!read) return read.error();
  auto pem = std::make_unique<PemFile>();
  pem->text = std::move(*read);
  pem->bio.reset(BIO_new_mem_buf(pem->text.data(), static_cast<int>(pem->text.size())));
  if (!pem->bio)
    return MakeError(Code::kInternal, "cannot read: " + http::OpenSslError("no PEM data"), Location::File(path));
  return pem;
}

}  // namespace

CertPair::~CertPair() {
  X509_free(cert);
  if (chain) sk_X509_pop_free(chain, X509_free);
  EVP_PKEY_free(key);
}

Result<std::shared_ptr<const CertPair>> LoadCertPair(const std::string& cert_file, const std::string& key_file) {
  auto pair = std::make_shared<CertPair>();
  auto cert_bio = OpenFile(cert_file);
  if (!cert_bio) return cert_bio.error();
  pair->cert = PEM_read_bio_X509((*cert_bio)->get(), nullptr, nullptr, nullptr);
  if (!pair->cert) {
    return MakeError(Code::kInvalidInput, "no PEM certificate: " + http::OpenSslError("no PEM data"),
                     Location::File(cert_file));
  }
  pair->chain = sk_X509_new_null();
  while (X509* extra = PEM_read_bio_X509((*cert_bio)->get(), nullptr, nullptr, nullptr)) {
    sk_X509_push(pair->chain, extra);
  }
  ERR_clear_error();  // the loop ends on "no start line"
  auto key_bio = OpenFile(key_file);
  if (!key_bio) return key_bio.error();
  pair->key = PEM_read_bio_PrivateKey((*key_bio)->get(), nullptr, nullptr, nullptr);
  if (!pair->key) {
    return MakeError(Code::kInvalidInput, "no PEM private key: " + http::OpenSslError("no PEM data"),
                     Location::File(key_file));
  }
  if (X509_check_private_key(pair->cert, pair->key) != 1) {
    ERR_clear_error();
    return MakeError(Code::kInvalidInput, "the private key does not match the certificate (a rotation half written?)",
                     Location::File(key_file));
  }
  struct tm tm {};
  if (ASN1_TIME_to_tm(X509_get0_notAfter(pair->cert), &tm) == 1) pair->not_after = timegm(&tm);
  char subject[256];
  X509_NAME_oneline(X509_get_subject_name(pair->cert), subject, sizeof subject);
  pair->subject = subject;
  return std::shared_ptr<const CertPair>(std::move(pair));
}

CertReloader::CertReloader(std::string cert_file, std::string key_file, std::shared_ptr<const CertPair> first)
    : cert_file_(std::move(cert_file)), key_file_(std::move(key_file)), current_(std::move(first)) {}

Result<std::shared_ptr<const CertPair>> CertReloader::Reload() {
  auto pair = LoadCertPair(cert_file_, key_file_);
  if (!pair) return pair.error();
  std::lock_guard<std::mutex> lock(mu_);
  current_ = *pair;
  return *pair;
}

std::shared_ptr<const CertPair> CertReloader::Current() const {
  std::lock_guard<std::mutex> lock(mu_);
  return current_;
}

void CertReloader::Install(SSL_CTX* ctx) { SSL_CTX_set_cert_cb(ctx, &CertReloader::OnHandshake, this); }

int CertReloader::OnHandshake(SSL* ssl, void* self) {
  auto pair = static_cast<CertReloader*>(self)->Current();
  if (!pair) return 0;
  // SSL_use_* take their own references: the pair may be replaced right after.
  if (SSL_use_certificate(ssl, pair->cert) != 1 || SSL_use_PrivateKey(ssl, pair->key) != 1 ||
      SSL_set1_chain(ssl, pair->chain) != 1) {
    ERR_clear_error();
    return 0;
  }
  return 1;
}

}  // namespace shmguard::server
