// The CA bundle a KubeClient's connections share: parsed once per version of its file, and a
// store of its own for each connection. Internal to kube.
#pragma once

#include <openssl/x509.h>

#include <string>
#include <vector>

namespace shmguard::kube {

// Every certificate of a PEM bundle, parsed (none when there is none), with the extensions
// OpenSSL caches in each computed now: the connections share them, and each verification would
// otherwise write that cache on first use, on whichever connection's thread came first.
std::vector<X509*> CertsOf(const std::string& pem);
// Frees `certs` and empties it.
void FreeCerts(std::vector<X509*>& certs);
// A store of its own for one connection, holding `certs` (each referenced, not copied): httplib
// adds the system's default paths to a connection's store when it first connects
// (SSLClient::load_certs), which would race on a store two connections shared.
X509_STORE* StoreOf(const std::vector<X509*>& certs);

}  // namespace shmguard::kube
