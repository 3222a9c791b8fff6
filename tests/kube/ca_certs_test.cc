// CertsOf, FreeCerts and StoreOf: the CA bundle a KubeClient's connections share.
#include "kube/ca_certs.h"

#include <openssl/x509v3.h>

#include <catch2/catch.hpp>
#include <fstream>
#include <sstream>

#include "tls_fixture.h"

namespace shmguard::kube {
namespace {

std::string Read(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST_CASE("CertsOf parses every certificate of a bundle, and StoreOf holds them", "[ca_certs]") {
  test::TempDir dir;
  test::MakeCa(dir.path());
  const std::string ca = Read(dir.File("ca.crt"));
  std::vector<X509*> certs = CertsOf(ca + ca);  // a bundle of two
  REQUIRE(certs.size() == 2);
  for (X509* c : certs) CHECK(X509_check_ca(c) > 0);
  X509_STORE* store = StoreOf(certs);
  REQUIRE(store != nullptr);
  STACK_OF(X509_OBJECT)* objects = X509_STORE_get0_objects(store);
  CHECK(sk_X509_OBJECT_num(objects) >= 1);  // the same certificate twice is stored once
  X509_STORE_free(store);
  FreeCerts(certs);
  CHECK(certs.empty());

  CHECK(CertsOf("not a certificate").empty());
  CHECK(CertsOf("").empty());
}

}  // namespace
}  // namespace shmguard::kube
