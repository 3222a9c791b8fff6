// The webhook port's TLS vocabulary, spelled as kube-apiserver's flags spell it: protocol
// versions (--tls-min-version VersionTLS12|VersionTLS13) and cipher suites by IANA name
// (--tls-cipher-suites), each with OpenSSL's name and whether shmguard serves it. Names only:
// the server applies them (server/handshake_policy.h).
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/values/result.h"

namespace shmguard {

enum class TlsVersion { kTls12, kTls13 };

// "VersionTLS12" -> kTls12, "VersionTLS13" -> kTls13. Fails with kInvalidInput naming the two
// accepted values (VersionTLS10 and VersionTLS11 are refused: RFC 8996 deprecates them).
Result<TlsVersion> ParseTlsVersion(std::string_view name);
const char* TlsVersionName(TlsVersion v);  // "VersionTLS12", "VersionTLS13"

struct CipherSuite {
  std::string_view iana;     // TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256 (RFC 5289 §3)
  std::string_view openssl;  // ECDHE-RSA-AES128-GCM-SHA256
  bool tls13;                // a TLS 1.3 suite (RFC 8446 §B.4): AEAD only, key exchange apart
  // Empty when shmguard serves it; otherwise why not, for the startup error.
  std::string_view refused_because;
};

// Every suite name shmguard knows: those it serves (ECDHE key exchange with AES-GCM or
// ChaCha20-Poly1305, and the TLS 1.3 suites) and the ones kube-apiserver still accepts that
// it refuses (CBC modes, RSA key exchange, 3DES, RC4), so that naming one is a clear error.
std::span<const CipherSuite> KnownCipherSuites();

// The TLS 1.2 suites served when none are named: ECDHE with AES-GCM or ChaCha20-Poly1305
// (Mozilla's "intermediate" profile, TLS 1.2 part).
std::vector<const CipherSuite*> DefaultCipherSuites();

// Looks up IANA names. Fails with kInvalidInput naming the first name that is unknown ("not a
// cipher suite shmguard knows") or refused (with the reason), or when `names` holds no TLS 1.2
// suite at all while TLS 1.2 is allowed (`allow_tls12`).
// Example: {"TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256"} -> that suite.
Result<std::vector<const CipherSuite*>> ParseCipherSuites(const std::vector<std::string>& names, bool allow_tls12);

}  // namespace shmguard
