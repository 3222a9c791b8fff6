// ParseTlsVersion, KnownCipherSuites, ParseCipherSuites. The suites are those of Go's
// crypto/tls that kube-apiserver's --tls-cipher-suites accepts (k8s.io/component-base
// cli/flag/ciphersuites_flag.go), with OpenSSL's names (openssl ciphers -stdname).
#include "core/policy/tls_names.h"

#include <array>

namespace shmguard {
namespace {

constexpr std::string_view kCbc = "a CBC suite (LUCKY13 and padding-oracle attacks; no AEAD)";
constexpr std::string_view kRsaKex = "RSA key exchange (no forward secrecy)";
constexpr std::string_view kWeak = "a broken cipher (3DES: SWEET32; RC4: RFC 7465)";

constexpr std::array<CipherSuite, 27> kSuites = {{
    // Served: ECDHE + AEAD (TLS 1.2), and TLS 1.3's own.
    {"TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256", "ECDHE-ECDSA-AES128-GCM-SHA256", false, ""},
    {"TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256", "ECDHE-RSA-AES128-GCM-SHA256", false, ""},
    {"TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384", "ECDHE-ECDSA-AES256-GCM-SHA384", false, ""},
    {"TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384", "ECDHE-RSA-AES256-GCM-SHA384", false, ""},
    {"TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256", "ECDHE-ECDSA-CHACHA20-POLY1305", false, ""},
    {"TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256", "ECDHE-RSA-CHACHA20-POLY1305", false, ""},
    {"TLS_AES_128_GCM_SHA256", "TLS_AES_128_GCM_SHA256", true, ""},
    {"TLS_AES_256_GCM_SHA384", "TLS_AES_256_GCM_SHA384", true, ""},
    {"TLS_CHACHA20_POLY1305_SHA256", "TLS_CHACHA20_POLY1305_SHA256", true, ""},
    // Refused, with the reason.
    {"TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA", "ECDHE-ECDSA-AES128-SHA", false, kCbc},
    {"TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA", "ECDHE-RSA-AES128-SHA", false, kCbc},
    {"TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA", "ECDHE-ECDSA-AES256-SHA", false, kCbc},
    {"TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA", "ECDHE-RSA-AES256-SHA", false, kCbc},
    {"TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256", "ECDHE-ECDSA-AES128-SHA256", false, kCbc},
    {"TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256", "ECDHE-RSA-AES128-SHA256", false, kCbc},
    {"TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA384", "ECDHE-ECDSA-AES256-SHA384", false, kCbc},
    {"TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA384", "ECDHE-RSA-AES256-SHA384", false, kCbc},
    {"TLS_RSA_WITH_AES_128_GCM_SHA256", "AES128-GCM-SHA256", false, kRsaKex},
    {"TLS_RSA_WITH_AES_256_GCM_SHA384", "AES256-GCM-SHA384", false, kRsaKex},
    {"TLS_RSA_WITH_AES_128_CBC_SHA", "AES128-SHA", false, kRsaKex},
    {"TLS_RSA_WITH_AES_256_CBC_SHA", "AES256-SHA", false, kRsaKex},
    {"TLS_RSA_WITH_AES_128_CBC_SHA256", "AES128-SHA256", false, kRsaKex},
    {"TLS_RSA_WITH_3DES_EDE_CBC_SHA", "DES-CBC3-SHA", false, kWeak},
    {"TLS_ECDHE_RSA_WITH_3DES_EDE_CBC_SHA", "ECDHE-RSA-DES-CBC3-SHA", false, kWeak},
    {"TLS_RSA_WITH_RC4_128_SHA", "RC4-SHA", false, kWeak},
    {"TLS_ECDHE_ECDSA_WITH_RC4_128_SHA", "ECDHE-ECDSA-RC4-SHA", false, kWeak},
    {"TLS_ECDHE_RSA_WITH_RC4_128_SHA", "ECDHE-RSA-RC4-SHA", false, kWeak},
}};

}  // namespace

Result<TlsVersion> ParseTlsVersion(std::string_view name) {
  if (name == "VersionTLS12") return TlsVersion::kTls12;
  if (name == "VersionTLS13") return TlsVersion::kTls13;
  return MakeError(
      Code::kInvalidInput,
      "\"" + std::string(name) + "\" is not a TLS version shmguard serves: use VersionTLS12 or VersionTLS13");
}

const char* TlsVersionName(TlsVersion v) { return v == TlsVersion::kTls12 ? "VersionTLS12" : "VersionTLS13"; }

std::span<const CipherSuite> KnownCipherSuites() { return kSuites; }

std::vector<const CipherSuite*> DefaultCipherSuites() {
  std::vector<const CipherSuite*> out;
  for (const auto& s : KnownCipherSuites()) {
    if (!s.tls13 && s.refused_because.empty()) out.push_back(&s);
  }
  return out;
}

Result<std::vector<const CipherSuite*>> ParseCipherSuites(const std::vector<std::string>& names, bool allow_tls12) {
  std::vector<const CipherSuite*> out;
  bool tls12 = false;
  for (const auto& name : names) {
    const CipherSuite* found = nullptr;
    for (const auto& s : KnownCipherSuites()) {
      if (s.iana == name) found = &s;
    }
    if (!found) {
      return MakeError(Code::kInvalidInput, "\"" + name +
                                                "\" is not a cipher suite shmguard knows: give IANA names such as "
                                                "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256");
    }
    if (!found->refused_because.empty()) {
      return MakeError(Code::kInvalidInput, name + " is insecure: " + std::string(found->refused_because));
    }
    tls12 = tls12 || !found->tls13;
    out.push_back(found);
  }
  if (allow_tls12 && !names.empty() && !tls12) {
    return MakeError(Code::kInvalidInput,
                     "TLS 1.2 is allowed (VersionTLS12) but no TLS 1.2 suite is named: add one such as "
                     "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256, or set VersionTLS13");
  }
  return out;
}

}  // namespace shmguard
