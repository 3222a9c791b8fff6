// HandshakePolicy: the settings it refuses, each protocol version and cipher suite offered or
// refused as configured (as `openssl s_client` sees it), and mutual TLS: missing, untrusted,
// expired and wrongly named client certificates, the right one, and a CA file rotated while the
// server runs.
#include "server/handshake_policy.h"

#include <httplib.h>
#include <openssl/ec.h>
#include <openssl/pem.h>
#include <openssl/x509v3.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <thread>

#include "server/test_server.h"
#include "test_util.h"
#include "tls_fixture.h"

namespace shmguard::server {
namespace {

using test::TlsConnection;

TEST_CASE("HandshakePolicy::Create refuses unknown and insecure suites and unusable settings", "[handshake_policy]") {
  struct Case {
    TlsSettings tls;
    ClientAuth auth;
    const char* error;  // "" = accepted
  } cases[] = {
      {{}, {}, ""},
      {{TlsVersion::kTls12, {}}, {}, ""},
      {{TlsVersion::kTls12, {"TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256"}}, {}, ""},
      {{TlsVersion::kTls13, {"TLS_AES_128_GCM_SHA256"}}, {}, ""},
      {{TlsVersion::kTls12, {"TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA"}}, {}, "is insecure: a CBC suite"},
      {{TlsVersion::kTls12, {"TLS_RSA_WITH_AES_128_GCM_SHA256"}}, {}, "is insecure: RSA key exchange"},
      {{TlsVersion::kTls12, {"TLS_RSA_WITH_3DES_EDE_CBC_SHA"}}, {}, "is insecure: a broken cipher"},
      {{TlsVersion::kTls12, {"ECDHE-RSA-AES128-GCM-SHA256"}}, {}, "is not a cipher suite shmguard knows"},
      {{TlsVersion::kTls12, {"TLS_AES_128_GCM_SHA256"}}, {}, "no TLS 1.2 suite is named"},
      {{}, {"/nonexistent/ca.crt", {}}, "cannot open: No such file or directory"},
  };
  for (const auto& c : cases) {
    CAPTURE(c.error, c.tls.cipher_suites);
    auto p = HandshakePolicy::Create(c.tls, c.auth);
    if (std::string(c.error).empty()) {
      CHECK(p.has_value());
    } else {
      REQUIRE_FALSE(p.has_value());
      CHECK_THAT(p.error().message, Catch::Contains(c.error));
    }
  }
  test::TempDir dir;
  std::ofstream(dir.File("empty.crt")) << "not a certificate\n";
  auto p = HandshakePolicy::Create({}, {dir.File("empty.crt"), {}});
  REQUIRE_FALSE(p.has_value());
  CHECK(p.error().where.file == dir.File("empty.crt"));
  test::MakeCa(dir.path());
  auto ok = HandshakePolicy::Create({}, {dir.File("ca.crt"), {}});
  REQUIRE(ok.has_value());
  CHECK((*ok)->client_auth().names == std::vector<std::string>{"kube-apiserver"});  // the default name
}

// `openssl s_client` against the server: the protocol and cipher it negotiated, or "" when the
// handshake failed.
std::string Negotiated(int port, const std::string& ca, const std::string& args) {
  std::string cmd = "openssl s_client -connect 127.0.0.1:" + std::to_string(port) + " -CAfile " + ca + " " + args +
                    " </dev/null 2>&1";
  const std::string out = test::CommandOutput(cmd);
  // "New, TLSv1.3, Cipher is TLS_AES_256_GCM_SHA384" after a handshake; "New, (NONE), Cipher is
  // (NONE)" after a refused one.
  size_t at = out.find("\nNew, ");
  if (at == std::string::npos) return "";
  std::string line = out.substr(at + 6, out.find('\n', at + 1) - at - 6);
  return line.rfind("(NONE)", 0) == 0 ? "" : line;
}

TEST_CASE("HandshakePolicy: each version and suite is offered or refused as configured (openssl s_client)",
          "[handshake_policy][net]") {
  const std::string kAes128 = "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256";
  struct Case {
    const char* name;
    std::optional<TlsVersion> min_version;
    std::vector<std::string> suites;
    const char* client;  // s_client arguments
    const char* want;    // "" = refused
  } cases[] = {
      {"default: TLS 1.3", {}, {}, "-tls1_3", "TLSv1.3, Cipher is TLS_"},
      {"default: no TLS 1.2", {}, {}, "-tls1_2", ""},
      {"default: no TLS 1.1", {}, {}, "-tls1_1 -cipher DEFAULT@SECLEVEL=0", ""},
      {"1.2: AES-GCM",
       TlsVersion::kTls12,
       {},
       "-tls1_2 -cipher ECDHE-ECDSA-AES128-GCM-SHA256",
       "TLSv1.2, Cipher is ECDHE-ECDSA-AES128-GCM-SHA256"},
      {"1.2: AES-256-GCM",
       TlsVersion::kTls12,
       {},
       "-tls1_2 -cipher ECDHE-ECDSA-AES256-GCM-SHA384",
       "TLSv1.2, Cipher is ECDHE-ECDSA-AES256-GCM-SHA384"},
      {"1.2: ChaCha20",
       TlsVersion::kTls12,
       {},
       "-tls1_2 -cipher ECDHE-ECDSA-CHACHA20-POLY1305",
       "TLSv1.2, Cipher is ECDHE-ECDSA-CHACHA20-POLY1305"},
      // The four CBC suites testssl flagged (LUCKY13), never offered.
      {"1.2: no AES256-SHA384 (CBC)", TlsVersion::kTls12, {}, "-tls1_2 -cipher ECDHE-ECDSA-AES256-SHA384", ""},
      {"1.2: no AES256-SHA (CBC)", TlsVersion::kTls12, {}, "-tls1_2 -cipher ECDHE-ECDSA-AES256-SHA", ""},
      {"1.2: no AES128-SHA256 (CBC)", TlsVersion::kTls12, {}, "-tls1_2 -cipher ECDHE-ECDSA-AES128-SHA256", ""},
      {"1.2: no AES128-SHA (CBC)", TlsVersion::kTls12, {}, "-tls1_2 -cipher ECDHE-ECDSA-AES128-SHA", ""},
      {"1.2 and 1.3 both", TlsVersion::kTls12, {}, "-tls1_3", "TLSv1.3, Cipher is TLS_"},
      {"1.2, one suite: it",
       TlsVersion::kTls12,
       {kAes128},
       "-tls1_2 -cipher ECDHE-ECDSA-AES128-GCM-SHA256",
       "TLSv1.2, Cipher is ECDHE-ECDSA-AES128-GCM-SHA256"},
      {"1.2, one suite: not another",
       TlsVersion::kTls12,
       {kAes128},
       "-tls1_2 -cipher ECDHE-ECDSA-CHACHA20-POLY1305",
       ""},
      {"1.3 suites named",
       TlsVersion::kTls13,
       {"TLS_CHACHA20_POLY1305_SHA256"},
       "-tls1_3 -ciphersuites TLS_AES_256_GCM_SHA384",
       ""},
      {"1.3 suite named: it",
       TlsVersion::kTls13,
       {"TLS_CHACHA20_POLY1305_SHA256"},
       "-tls1_3",
       "TLSv1.3, Cipher is TLS_CHACHA20_POLY1305_SHA256"},
  };
  for (const auto& c : cases) {
    CAPTURE(c.name, c.client);
    test::TestServer s("", [&](ServerOptions& o) {
      o.tls_min_version = c.min_version;
      o.tls_cipher_suites = c.suites;
    });
    std::string got = Negotiated(s.port(), s.ca, c.client);
    if (std::string(c.want).empty()) {
      CHECK(got.empty());
    } else {
      CHECK_THAT(got, Catch::StartsWith(c.want));
    }
  }
}

TEST_CASE("HandshakePolicy: the config file's tls section applies, flags win, and a reload reaches new connections",
          "[handshake_policy][net]") {
  test::TestServer s("tls: {minVersion: VersionTLS12}\n");
  CHECK_THAT(Negotiated(s.port(), s.ca, "-tls1_2"), Catch::StartsWith("TLSv1.2"));
  std::ofstream(s.config) << "tls: {minVersion: VersionTLS13}\n";
  CHECK(test::Eventually([&] { return Negotiated(s.port(), s.ca, "-tls1_2").empty(); }, 5));
  CHECK_THAT(Negotiated(s.port(), s.ca, "-tls1_3"), Catch::StartsWith("TLSv1.3"));
  // A file whose tls section cannot be served is refused as a whole: the last good one stays.
  std::ofstream(s.config) << "tls: {minVersion: VersionTLS12, cipherSuites: [TLS_AES_128_GCM_SHA256]}\n";
  httplib::Client metrics("127.0.0.1", s.server->metrics_port());
  CHECK(test::Eventually(
      [&] {
        auto r = metrics.Get("/metrics");
        return r && r->body.find("shmguard_config_reloads_total{result=\"failed\"} 1") != std::string::npos;
      },
      5));
  CHECK(Negotiated(s.port(), s.ca, "-tls1_2").empty());
  // A flag wins over the file.
  test::TestServer flagged("tls: {minVersion: VersionTLS13}\n",
                           [](ServerOptions& o) { o.tls_min_version = TlsVersion::kTls12; });
  CHECK_THAT(Negotiated(flagged.port(), flagged.ca, "-tls1_2"), Catch::StartsWith("TLSv1.2"));
}

// Client certificates made with OpenSSL's API, so their validity can lie in the past.
struct ClientCa {
  EVP_PKEY* key = nullptr;
  X509* cert = nullptr;
  explicit ClientCa(const std::string& name) {
    key = EVP_EC_gen("P-256");
    cert = X509_new();
    X509_set_version(cert, 2);
    ASN1_INTEGER_set(X509_get_serialNumber(cert), 1);
    X509_NAME_add_entry_by_txt(X509_get_subject_name(cert), "CN", MBSTRING_ASC,
                               reinterpret_cast<const unsigned char*>(name.c_str()), -1, -1, 0);
    X509_set_issuer_name(cert, X509_get_subject_name(cert));
    X509_gmtime_adj(X509_getm_notBefore(cert), -3600);
    X509_gmtime_adj(X509_getm_notAfter(cert), 86400);
    X509_set_pubkey(cert, key);
    X509V3_CTX ctx;
    X509V3_set_ctx(&ctx, cert, cert, nullptr, nullptr, 0);
    X509_EXTENSION* bc = X509V3_EXT_conf_nid(nullptr, &ctx, NID_basic_constraints, "critical,CA:TRUE");
    X509_add_ext(cert, bc, -1);
    X509_EXTENSION_free(bc);
    X509_sign(cert, key, EVP_sha256());
  }
  ~ClientCa() {
    X509_free(cert);
    EVP_PKEY_free(key);
  }
  void WriteCert(const std::string& file) const {
    FILE* f = std::fopen(file.c_str(), "w");
    PEM_write_X509(f, cert);
    std::fclose(f);
  }
  // A client certificate with subject CN `cn` and an optional DNS SAN, valid from `from` to
  // `to` seconds from now.
  void Issue(const std::string& cn, const std::string& dns, long from, long to, const std::string& cert_file,
             const std::string& key_file) const {
    EVP_PKEY* k = EVP_EC_gen("P-256");
    X509* c = X509_new();
    X509_set_version(c, 2);
    static long serial = 100;
    ASN1_INTEGER_set(X509_get_serialNumber(c), ++serial);
    X509_NAME_add_entry_by_txt(X509_get_subject_name(c), "CN", MBSTRING_ASC,
                               reinterpret_cast<const unsigned char*>(cn.c_str()), -1, -1, 0);
    X509_set_issuer_name(c, X509_get_subject_name(cert));
    X509_gmtime_adj(X509_getm_notBefore(c), from);
    X509_gmtime_adj(X509_getm_notAfter(c), to);
    X509_set_pubkey(c, k);
    X509V3_CTX ctx;
    X509V3_set_ctx(&ctx, cert, c, nullptr, nullptr, 0);
    X509_EXTENSION* eku = X509V3_EXT_conf_nid(nullptr, &ctx, NID_ext_key_usage, "clientAuth");
    X509_add_ext(c, eku, -1);
    X509_EXTENSION_free(eku);
    if (!dns.empty()) {
      X509_EXTENSION* san = X509V3_EXT_conf_nid(nullptr, &ctx, NID_subject_alt_name, ("DNS:" + dns).c_str());
      X509_add_ext(c, san, -1);
      X509_EXTENSION_free(san);
    }
    X509_sign(c, key, EVP_sha256());
    FILE* f = std::fopen(cert_file.c_str(), "w");
    PEM_write_X509(f, c);
    std::fclose(f);
    f = std::fopen(key_file.c_str(), "w");
    PEM_write_PrivateKey(f, k, nullptr, nullptr, 0, nullptr, nullptr);
    std::fclose(f);
    X509_free(c);
    EVP_PKEY_free(k);
  }
};

// A request over a connection presenting cert/key: the HTTP status, 0 when refused.
int PostWith(const test::TestServer& s, const std::string& cert, const std::string& key) {
  TlsConnection c(s.port(), s.ca, 0, cert, key);
  if (!c.ok()) return 0;
  return c
      .Post("/mutate", test::ReviewJson(R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},
                                                 "spec":{"containers":[]}})",
                                        "team-a"))
      .status;
}

std::string Metrics(const test::TestServer& s) {
  httplib::Client c("127.0.0.1", s.server->metrics_port());
  auto res = c.Get("/metrics");
  REQUIRE(res);
  return res->body;
}

TEST_CASE("HandshakePolicy: mutual TLS accepts only the named client's certificate from the CA, and a rotated CA",
          "[handshake_policy][net]") {
  test::TempDir dir;
  ClientCa ca("apiserver-client-ca"), other("another-ca");
  ca.WriteCert(dir.File("client-ca.crt"));
  auto f = [&](const std::string& n) { return dir.File(n); };
  ca.Issue("kube-apiserver", "", -60, 3600, f("good.crt"), f("good.key"));
  ca.Issue("webhook-client", "kube-apiserver", -60, 3600, f("san.crt"), f("san.key"));
  ca.Issue("some-pod", "", -60, 3600, f("wrong-cn.crt"), f("wrong-cn.key"));
  ca.Issue("kube-apiserver", "", -7200, -3600, f("expired.crt"), f("expired.key"));
  other.Issue("kube-apiserver", "", -60, 3600, f("other-ca.crt"), f("other-ca.key"));

  for (TlsVersion version : {TlsVersion::kTls13, TlsVersion::kTls12}) {
    CAPTURE(TlsVersionName(version));
    test::TestServer s("", [&](ServerOptions& o) {
      o.client_auth.ca_file = f("client-ca.crt");
      o.tls_min_version = version;
    });
    CHECK(PostWith(s, "", "") == 0);                                // no certificate
    CHECK(PostWith(s, f("other-ca.crt"), f("other-ca.key")) == 0);  // another CA's
    CHECK(PostWith(s, f("wrong-cn.crt"), f("wrong-cn.key")) == 0);  // another client's
    CHECK(PostWith(s, f("expired.crt"), f("expired.key")) == 0);    // expired
    CHECK(PostWith(s, f("good.crt"), f("good.key")) == 200);        // the API server's, by CN
    CHECK(PostWith(s, f("san.crt"), f("san.key")) == 200);          // ... or by DNS SAN
    std::string m = Metrics(s);
    CHECK_THAT(m, Catch::Contains("shmguard_tls_handshake_failures_total{reason=\"client_cert\"} 4"));
    CHECK_THAT(m, Catch::Contains("shmguard_tls_handshake_failures_total{reason=\"tls\"} 0"));
    // The probes and metrics port asks for no certificate.
    httplib::Client probe("127.0.0.1", s.server->metrics_port());
    auto ready = probe.Get("/readyz");
    REQUIRE(ready);
    CHECK(ready->status == 200);
  }

  // --client-cn names another client: the API server's certificate is refused, that one passes.
  test::TestServer named("", [&](ServerOptions& o) { o.client_auth = {f("client-ca.crt"), {"some-pod"}}; });
  CHECK(PostWith(named, f("good.crt"), f("good.key")) == 0);
  CHECK(PostWith(named, f("wrong-cn.crt"), f("wrong-cn.key")) == 200);

  // The CA file rotated while the server runs: the new CA's clients pass, the old one's do not.
  test::TestServer s("", [&](ServerOptions& o) { o.client_auth.ca_file = f("client-ca.crt"); });
  REQUIRE(PostWith(s, f("good.crt"), f("good.key")) == 200);
  other.WriteCert(f("client-ca.crt.tmp"));
  std::filesystem::rename(f("client-ca.crt.tmp"), f("client-ca.crt"));
  CHECK(test::Eventually([&] { return PostWith(s, f("other-ca.crt"), f("other-ca.key")) == 200; }, 5));
  CHECK(PostWith(s, f("good.crt"), f("good.key")) == 0);
  CHECK_THAT(Metrics(s), Catch::Contains("shmguard_client_ca_reloads_total{result=\"ok\"} 1"));
  // A CA file that does not load keeps the previous CAs.
  std::ofstream(f("client-ca.crt")) << "garbage\n";
  CHECK(test::Eventually(
      [&] { return Metrics(s).find("shmguard_client_ca_reloads_total{result=\"failed\"} 1") != std::string::npos; },
      5));
  CHECK(PostWith(s, f("other-ca.crt"), f("other-ca.key")) == 200);
}

}  // namespace
}  // namespace shmguard::server
