// ParseTlsVersion, KnownCipherSuites, DefaultCipherSuites and ParseCipherSuites.
#include "core/policy/tls_names.h"

#include <catch2/catch.hpp>
#include <set>

namespace shmguard {
namespace {

TEST_CASE("ParseTlsVersion reads kube-apiserver's names for TLS 1.2 and 1.3 only", "[tls_names]") {
  CHECK(*ParseTlsVersion("VersionTLS12") == TlsVersion::kTls12);
  CHECK(*ParseTlsVersion("VersionTLS13") == TlsVersion::kTls13);
  for (const char* bad : {"VersionTLS10", "VersionTLS11", "TLS13", "versiontls13", "1.3", ""}) {
    CAPTURE(bad);
    auto v = ParseTlsVersion(bad);
    REQUIRE_FALSE(v.has_value());
    CHECK_THAT(v.error().message, Catch::Contains("use VersionTLS12 or VersionTLS13"));
  }
  for (TlsVersion v : {TlsVersion::kTls12, TlsVersion::kTls13}) CHECK(*ParseTlsVersion(TlsVersionName(v)) == v);
}

TEST_CASE("DefaultCipherSuites are the ECDHE AEAD suites of TLS 1.2", "[tls_names]") {
  std::set<std::string_view> names;
  for (const CipherSuite* s : DefaultCipherSuites()) {
    CAPTURE(s->iana);
    CHECK_FALSE(s->tls13);
    CHECK(s->refused_because.empty());
    CHECK(s->iana.rfind("TLS_ECDHE_", 0) == 0);
    CHECK((s->iana.find("_GCM_") != std::string_view::npos ||
           s->iana.find("CHACHA20_POLY1305") != std::string_view::npos));
    names.insert(s->iana);
  }
  CHECK(names.size() == 6);
  // Every suite served is AEAD with forward secrecy; every other one is refused with a reason.
  for (const auto& s : KnownCipherSuites()) {
    CAPTURE(s.iana);
    bool aead = s.iana.find("_GCM_") != std::string_view::npos || s.iana.find("CHACHA20") != std::string_view::npos;
    bool forward_secret = s.tls13 || s.iana.rfind("TLS_ECDHE_", 0) == 0;
    CHECK(s.refused_because.empty() == (aead && forward_secret));
  }
}

TEST_CASE("ParseCipherSuites names the first unknown or insecure suite", "[tls_names]") {
  auto ok = ParseCipherSuites({"TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256", "TLS_AES_256_GCM_SHA384"}, true);
  REQUIRE(ok.has_value());
  REQUIRE(ok->size() == 2);
  CHECK((*ok)[0]->openssl == "ECDHE-RSA-AES128-GCM-SHA256");
  CHECK((*ok)[1]->tls13);
  struct Case {
    std::vector<std::string> names;
    bool allow_tls12;
    const char* error;
  } cases[] = {
      {{"TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA"}, true, "TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA is insecure: a CBC suite"},
      {{"TLS_RSA_WITH_AES_256_GCM_SHA384"}, true, "no forward secrecy"},
      {{"TLS_ECDHE_RSA_WITH_RC4_128_SHA"}, true, "RC4"},
      {{"ECDHE-RSA-AES128-GCM-SHA256"}, true, "not a cipher suite shmguard knows"},
      {{"TLS_AES_128_GCM_SHA256"}, true, "no TLS 1.2 suite is named"},
  };
  for (const auto& c : cases) {
    CAPTURE(c.names);
    auto r = ParseCipherSuites(c.names, c.allow_tls12);
    REQUIRE_FALSE(r.has_value());
    CHECK_THAT(r.error().message, Catch::Contains(c.error));
  }
  CHECK(ParseCipherSuites({"TLS_AES_128_GCM_SHA256"}, false).has_value());  // TLS 1.3 only
  CHECK(ParseCipherSuites({}, true)->empty());
}

}  // namespace
}  // namespace shmguard
