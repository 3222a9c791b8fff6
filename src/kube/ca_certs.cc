// CertsOf, FreeCerts and StoreOf.
#include "kube/ca_certs.h"

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509v3.h>

namespace shmguard::kube {

std::vector<X509*> CertsOf(const std::string& pem) {
  std::vector<X509*> out;
  BIO* bio = BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size()));
  while (X509* ca = PEM_read_bio_X509(bio, nullptr, nullptr, nullptr)) {
    X509_check_purpose(ca, -1, 0);  // purpose -1: only caches the extensions
    out.push_back(ca);
  }
  BIO_free_all(bio);
  ERR_clear_error();  // the end of the bundle reads as an error
  return out;
}

void FreeCerts(std::vector<X509*>& certs) {
  for (X509* c : certs) X509_free(c);
  certs.clear();
}

X509_STORE* StoreOf(const std::vector<X509*>& certs) {
  X509_STORE* store = X509_STORE_new();
  for (X509* c : certs) X509_STORE_add_cert(store, c);
  return store;
}

}  // namespace shmguard::kube
