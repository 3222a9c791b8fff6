// KubeConfig::InCluster, FromKubeconfig and ResolveApi.
#include "kube/kube_config.h"

#include <openssl/evp.h>
#include <sys/stat.h>

#include <cstdlib>
#include <optional>

#include "io/files/file_text.h"
#include "io/formats/yaml_json.h"

namespace shmguard::kube {
namespace {

constexpr const char* kServiceAccount = "/var/run/secrets/kubernetes.io/serviceaccount";

}  // namespace

Result<KubeConfig> KubeConfig::InCluster() {
  const char* host = std::getenv("KUBERNETES_SERVICE_HOST");
  const char* port = std::getenv("KUBERNETES_SERVICE_PORT");
  if (!host || !port || !*host || !*port) {
    return MakeError(Code::kIo, "not in a pod: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT are not set");
  }
  std::string h = host;
  if (h.find(':') != std::string::npos) h = "[" + h + "]";  // IPv6
  KubeConfig c;
  c.server = "https://" + h + ":" + port;
  // In two steps each: GCC 12's -Warray-bounds misreads the sum of a literal and a string here.
  c.ca_file = kServiceAccount;
  c.ca_file += "/ca.crt";
  c.token_file = kServiceAccount;
  c.token_file += "/token";
  struct stat st {};
  if (::stat(c.token_file.c_str(), &st) != 0)
    return MakeError(Code::kIo, "no service account token", Location::File(c.token_file));
  return c;
}

namespace {

// RFC 4648 base64, as kubeconfig's *-data fields hold PEM; nullopt when it is not base64.
std::optional<std::string> DecodeBase64(std::string_view text) {
  std::string in;
  for (char c : text) {
    if (c != '\n' && c != '\r' && c != ' ') in += c;
  }
  if (in.size() % 4 != 0) return std::nullopt;
  std::string out(in.size() / 4 * 3, '\0');
  int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                          reinterpret_cast<const unsigned char*>(in.data()), static_cast<int>(in.size()));
  if (n < 0) return std::nullopt;
  size_t padding = in.empty() ? 0 : (in.back() == '=') + (in.size() > 1 && in[in.size() - 2] == '=');
  out.resize(static_cast<size_t>(n) - padding);
  return out;
}

// The entry named `name` of a kubeconfig list (clusters, users, contexts): its `field` object.
// The `field` of the entry of `list` named `name` (a kubeconfig's contexts, clusters, users);
// absent when there is none.
JsonNode Named(JsonNode config, const char* list, std::string_view name, const char* field) {
  for (JsonNode entry : config.Find(list).Items()) {
    if (entry.StringMember("name") == name) {
      JsonNode f = entry.Find(field);
      return f.IsObject() ? f : JsonNode();
    }
  }
  return {};
}

std::string Str(JsonNode o, const char* key) { return std::string(o.StringMember(key)); }

}  // namespace

Result<KubeConfig> KubeConfig::FromKubeconfig(const std::string& path, const std::string& context) {
  auto text = io::ReadFileText(path, io::kMaxCredentialBytes);
  if (!text) return text.error();
  auto parsed = io::ParseYaml(*text);
  if (!parsed) return MakeError(Code::kInvalidInput, parsed.error().ToString(), Location::File(path));
  const JsonNode config = parsed->Root();
  if (!config.IsObject()) return MakeError(Code::kInvalidInput, "not a kubeconfig (a mapping)", Location::File(path));
  const std::string name = context.empty() ? Str(config, "current-context") : context;
  if (name.empty()) return MakeError(Code::kInvalidInput, "no current-context: give --context", Location::File(path));
  const JsonNode ctx = Named(config, "contexts", name, "context");
  if (!ctx) return MakeError(Code::kInvalidInput, "no context named " + name, Location::File(path));
  const JsonNode cluster = Named(config, "clusters", Str(ctx, "cluster"), "cluster");
  if (!cluster)
    return MakeError(Code::kInvalidInput, "context " + name + ": no cluster " + Str(ctx, "cluster"),
                     Location::File(path));
  const JsonNode user = Named(config, "users", Str(ctx, "user"), "user");  // absent: anonymous
  const std::string dir = path.find('/') == std::string::npos ? "." : path.substr(0, path.rfind('/'));
  auto resolve = [&](const std::string& f) { return f.empty() || f[0] == '/' ? f : dir + "/" + f; };
  // A PEM from `field`-data (base64) or the file `field` names.
  auto pem = [&](JsonNode o, const std::string& field) -> Result<std::string> {
    if (std::string data = Str(o, (field + "-data").c_str()); !data.empty()) {
      auto decoded = DecodeBase64(data);
      if (!decoded) return MakeError(Code::kInvalidInput, field + "-data is not base64", Location::File(path));
      return *decoded;
    }
    if (std::string file = Str(o, field.c_str()); !file.empty()) {
      return io::ReadFileText(resolve(file), io::kMaxCredentialBytes);
    }
    return std::string();
  };
  KubeConfig c;
  c.context_namespace = Str(ctx, "namespace");
  c.server = Str(cluster, "server");
  if (c.server.rfind("https://", 0) != 0) {
    return MakeError(Code::kInvalidInput, "cluster " + Str(ctx, "cluster") + ": server must be https://",
                     Location::File(path));
  }
  c.insecure = cluster.Find("insecure-skip-tls-verify").Bool();
  auto ca = pem(cluster, "certificate-authority");
  if (!ca) return ca.error();
  c.ca_pem = *ca;
  if (user.Find("exec") || user.Find("auth-provider")) {
    return MakeError(Code::kInvalidInput,
                     "user " + Str(ctx, "user") +
                         ": exec and auth-provider credential plugins are not supported; use a token or a client "
                         "certificate",
                     Location::File(path));
  }
  c.token = Str(user, "token");
  c.token_file = resolve(Str(user, "tokenFile"));
  auto cert = pem(user, "client-certificate");
  if (!cert) return cert.error();
  auto key = pem(user, "client-key");
  if (!key) return key.error();
  c.client_cert_pem = *cert;
  c.client_key_pem = *key;
  return c;
}

Result<KubeConfig> ResolveApi(const KubeConfig& flags) {
  if (flags.server.empty()) return KubeConfig::InCluster();
  if (flags.ca_file.empty()) return MakeError(Code::kInvalidInput, "--api-server needs --api-ca-file");
  if (flags.token_file.empty()) return MakeError(Code::kInvalidInput, "--api-server needs --api-token-file");
  return flags;
}

}  // namespace shmguard::kube
