// KubeConfig: in a pod as client-go's rest.InClusterConfig reads it, from a kubeconfig as kubectl
// reads it (contexts, files relative to it, inline data, what is refused and where), from flags.
#include "kube/kube_config.h"

#include <catch2/catch.hpp>
#include <cstdlib>
#include <fstream>
#include <optional>

#include "test_util.h"
#include "tls_fixture.h"  // TempDir

namespace shmguard::kube {
namespace {

// Outside a pod — as this process is made to look, inside one too (CI may run in a pod): the
// variables the kubelet sets are unset for the test, and put back.
TEST_CASE("KubeConfig::InCluster fails outside a pod, naming what is missing", "[kube_config]") {
  struct Unset {
    std::string name;
    std::optional<std::string> was;
    explicit Unset(std::string n) : name(std::move(n)) {
      if (const char* v = std::getenv(name.c_str())) was = v;
      ::unsetenv(name.c_str());
    }
    ~Unset() {
      if (was) ::setenv(name.c_str(), was->c_str(), 1);
    }
  } host("KUBERNETES_SERVICE_HOST"), port("KUBERNETES_SERVICE_PORT");
  auto c = KubeConfig::InCluster();
  REQUIRE_FALSE(c);
  CHECK(c.error().code == Code::kIo);
  CHECK(c.error().message.find("KUBERNETES_SERVICE_HOST") != std::string::npos);
}

constexpr char kKubeconfig[] = R"(apiVersion: v1
kind: Config
current-context: dev
contexts:
- name: dev
  context: {cluster: c1, user: token-user, namespace: ml}
- name: files
  context: {cluster: c2, user: file-user}
- name: plugin
  context: {cluster: c1, user: exec-user}
- name: lost
  context: {cluster: nowhere, user: token-user}
clusters:
- name: c1
  cluster: {server: "https://127.0.0.1:6443", certificate-authority-data: Q0EgUEVN}
- name: c2
  cluster: {server: "https://localhost:6443", certificate-authority: pki/ca.crt, insecure-skip-tls-verify: true}
users:
- name: token-user
  user: {token: abc}
- name: file-user
  user: {tokenFile: token, client-certificate-data: Q0VSVA==, client-key: pki/key.pem}
- name: exec-user
  user: {exec: {command: gke-gcloud-auth-plugin}}
)";

TEST_CASE("KubeConfig::FromKubeconfig reads the current context, or the one named, as kubectl does", "[kube_config]") {
  test::TempDir dir;
  std::filesystem::create_directories(dir.File("pki"));
  std::ofstream(dir.File("pki/ca.crt")) << "CA FILE";
  std::ofstream(dir.File("pki/key.pem")) << "KEY";
  const std::string path = dir.File("config");
  std::ofstream(path) << kKubeconfig;

  auto dev = KubeConfig::FromKubeconfig(path);
  REQUIRE(dev);
  CHECK(dev->server == "https://127.0.0.1:6443");
  CHECK(dev->ca_pem == "CA PEM");  // base64 of certificate-authority-data
  CHECK(dev->token == "abc");
  CHECK(dev->context_namespace == "ml");
  CHECK_FALSE(dev->insecure);

  auto files = KubeConfig::FromKubeconfig(path, "files");
  REQUIRE(files);
  CHECK(files->ca_pem == "CA FILE");              // relative to the kubeconfig's directory
  CHECK(files->token_file == dir.File("token"));  // re-read by the client, not here
  CHECK(files->client_cert_pem == "CERT");
  CHECK(files->client_key_pem == "KEY");
  CHECK(files->insecure);
  CHECK(files->context_namespace.empty());
}

TEST_CASE("KubeConfig::FromKubeconfig names what it cannot use", "[kube_config]") {
  test::TempDir dir;
  const std::string path = dir.File("config");
  std::ofstream(path) << kKubeconfig;
  const std::pair<std::string, std::string> cases[] = {
      {"plugin", "user exec-user: exec and auth-provider credential plugins are not supported"},
      {"lost", "context lost: no cluster nowhere"},
      {"missing", "no context named missing"},
  };
  for (const auto& [context, message] : cases) {
    CAPTURE(context);
    auto c = KubeConfig::FromKubeconfig(path, context);
    REQUIRE_FALSE(c);
    CHECK(c.error().code == Code::kInvalidInput);
    CHECK_THAT(c.error().message, Catch::StartsWith(message));
    CHECK(c.error().where.file == path);
  }
  std::ofstream(dir.File("http")) << "current-context: a\ncontexts: [{name: a, context: {cluster: a}}]\n"
                                     "clusters: [{name: a, cluster: {server: 'http://127.0.0.1:8080'}}]\n";
  auto plain = KubeConfig::FromKubeconfig(dir.File("http"));
  REQUIRE_FALSE(plain);
  CHECK(plain.error().message == "cluster a: server must be https://");
  auto absent = KubeConfig::FromKubeconfig(dir.File("none"));
  REQUIRE_FALSE(absent);
  CHECK(absent.error().code == Code::kIo);
}

TEST_CASE("ResolveApi takes the flags whole, or the pod's configuration without --api-server", "[kube_config]") {
  KubeConfig flags;
  flags.server = "https://10.0.0.1:443";
  auto no_ca = ResolveApi(flags);
  REQUIRE_FALSE(no_ca);
  CHECK(no_ca.error().message == "--api-server needs --api-ca-file");
  flags.ca_file = "/ca";
  CHECK(ResolveApi(flags).error().message == "--api-server needs --api-token-file");
  flags.token_file = "/token";
  auto whole = ResolveApi(flags);
  REQUIRE(whole);
  CHECK(whole->server == flags.server);
}

}  // namespace
}  // namespace shmguard::kube
