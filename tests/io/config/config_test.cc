// ParsePolicy: the example of docs/policy.md, defaults, and errors that name the key and line.
#include "io/config/config.h"

#include <catch2/catch.hpp>
#include <fstream>

#include "io/files/input_limits.h"
#include "test_util.h"
#include "tls_fixture.h"

namespace shmguard::io {
namespace {

// The example of docs/policy.md, as written there: its first yaml block.
std::string DocumentedPolicy() {
  std::string doc = test::ReadText(std::string(SOURCE_DIR) + "/docs/policy.md");
  size_t start = doc.find("```yaml\n");
  REQUIRE(start != std::string::npos);
  start += 8;
  return doc.substr(start, doc.find("```", start) - start);
}

TEST_CASE("ParsePolicy reads the example of docs/policy.md into the built-in defaults", "[config]") {
  auto p = ParsePolicy(DocumentedPolicy(), "policy.yaml");
  INFO((p ? "" : p.error().ToString()));
  REQUIRE(p.has_value());
  Policy d;
  CHECK(p->gpu_resources == d.gpu_resources);
  CHECK(p->mps_resources == d.mps_resources);
  CHECK(p->rdma_resources == d.rdma_resources);
  CHECK(p->host_ipc == d.host_ipc);
  CHECK(p->ipc_lock == d.ipc_lock);
  CHECK(p->max_fraction_ppm == 500'000);
  CHECK(p->sizing.safety_ppm == 1'200'000);
  CHECK(p->sizing.base_bytes == 64 << 20);
  CHECK(p->sizing.multi_gpu_floor_bytes == 1 << 30);
  CHECK(p->sizing.nccl_connection_bytes == 9637892);
  CHECK(p->sizing.nccl_proxy_pool_bytes == 34210180);
  REQUIRE(p->namespaces.size() == 3);
  CHECK(p->namespaces[0].mode == NamespaceMode::kOff);  // "off" is text here, not YAML 1.1 false
  CHECK(p->namespaces[1].match == std::vector<std::string>{"ml-*", "train-*"});
  CHECK(p->namespaces[1].require_annotations);
  CHECK(MatchNamespace(*p, "train-llm").mode == NamespaceMode::kEnforce);
  CHECK(MatchNamespace(*p, "kube-system").mode == NamespaceMode::kOff);
  CHECK(MatchNamespace(*p, "default").mode == NamespaceMode::kWarn);
}

TEST_CASE("ParsePolicy keeps defaults for keys left out", "[config]") {
  auto p = ParsePolicy("hostIPC: never\nsizing: {safety: 1.05}\n", "p.yaml");
  REQUIRE(p.has_value());
  CHECK(p->host_ipc == HostIpcMode::kNever);
  CHECK(p->sizing.safety_ppm == 1'050'000);
  CHECK(p->sizing.base_bytes == 64 << 20);
  CHECK(p->namespaces.size() == 3);
  auto empty = ParsePolicy("", "p.yaml");
  REQUIRE(empty.has_value());
  CHECK(empty->ipc_lock == IpcLockMode::kAuto);
  CHECK(empty->host_ipc == HostIpcMode::kAuto);
}

TEST_CASE("ParsePolicy reads ipcLock's modes and keeps the older names' meaning", "[config]") {
  struct Case {
    const char* value;
    IpcLockMode mode;
  };
  const Case cases[] = {
      {"auto", IpcLockMode::kAuto},
      {"always", IpcLockMode::kAlways},
      {"gpu-containers", IpcLockMode::kAlways},  // what every GPU container got before `auto`
      {"all", IpcLockMode::kAll},
      {"never", IpcLockMode::kNever},
  };
  for (const auto& c : cases) {
    CAPTURE(c.value);
    auto p = ParsePolicy(std::string("ipcLock: ") + c.value + "\n", "p.yaml");
    REQUIRE(p.has_value());
    CHECK(p->ipc_lock == c.mode);
  }
  auto bad = ParsePolicy("ipcLock: sometimes\n", "p.yaml");
  REQUIRE_FALSE(bad.has_value());
  CHECK_THAT(bad.error().message, Catch::Contains("ipcLock: must be one of auto, always, all, never"));
}

TEST_CASE("ParsePolicy reads the RDMA and MPS resource lists and a rule's hostIPC and ipcLock", "[config]") {
  auto p = ParsePolicy(R"(rdmaResources: [rdma/*, example.com/roce]
mpsResources: [nvidia.com/gpu.shared]
namespaces:
  - {match: [legacy-*], hostIPC: always, ipcLock: gpu-containers}
  - {match: ["*"]}
)",
                       "p.yaml");
  REQUIRE(p.has_value());
  CHECK(p->rdma_resources == std::vector<std::string>{"rdma/*", "example.com/roce"});
  CHECK(p->mps_resources == std::vector<std::string>{"nvidia.com/gpu.shared"});
  const NamespaceRule legacy = MatchNamespace(*p, "legacy-a");
  CHECK(HostIpcIn(*p, legacy) == HostIpcMode::kAlways);
  CHECK(IpcLockIn(*p, legacy) == IpcLockMode::kAlways);
  const NamespaceRule other = MatchNamespace(*p, "team-a");
  CHECK(HostIpcIn(*p, other) == HostIpcMode::kAuto);
  CHECK(IpcLockIn(*p, other) == IpcLockMode::kAuto);
}

TEST_CASE("ParsePolicy names the key and line of every error", "[config]") {
  struct Case {
    const char* yaml;
    const char* where;
    const char* message;
  };
  const Case cases[] = {
      {"hostIPC: auto\nhostIpc: never\n", "p.yaml:2", "hostIpc: unknown key"},
      {"sizing:\n  safty: 1.2\n", "p.yaml:2", "sizing.safty: unknown key"},
      {"sizing:\n  safety: high\n", "p.yaml:2", "sizing.safety: must be a decimal number"},
      {"sizing:\n  safety: 0.9\n", "p.yaml:2", "sizing.safety: must be a decimal number from 1"},
      {"sizing:\n  base: 64MB\n", "p.yaml:2", "sizing.base: \"64MB\" is not a valid quantity"},
      {"maxFractionOfMemoryLimit: 1.5\n", "p.yaml:1", "maxFractionOfMemoryLimit: must be a decimal"},
      {"gpuResources: nvidia.com/gpu\n", "p.yaml:1", "gpuResources: must be a list"},
      {"hostIPC: true\n", "p.yaml:1", "hostIPC: must be one of auto, always, never, got \"true\""},
      {"namespaces:\n  - {match: [\"ml-[\"], mode: warn}\n", "p.yaml:2",
       "namespaces[0].match: \"ml-[\": a bracket expression left open"},
      {"namespaces:\n  - {match: [\"ML_*\"]}\n", "p.yaml:2", "is not a namespace glob"},
      {"namespaces:\n  - {mode: warn}\n", "p.yaml:2", "namespaces[0].match: is required"},
      {"namespaces:\n  - {match: [a], mode: strict}\n", "p.yaml:2",
       "namespaces[0].mode: must be one of off, warn, enforce"},
      {"namespaces:\n  - {match: [a], requireAnnotations: maybe}\n", "p.yaml:2",
       "requireAnnotations: must be one of true, false"},
      {"namespaces:\n  - {match: [a], podSecurity: strict}\n", "p.yaml:2", "podSecurity: must be one of privileged"},
      {"namespaces:\n  - {match: [a], color: red}\n", "p.yaml:2", "namespaces[0].color: unknown key"},
      {"namespaces:\n  - {match: [a], hostIPC: yes}\n", "p.yaml:2",
       "namespaces[0].hostIPC: must be one of auto, always, never"},
      {"rdmaResources: rdma/*\n", "p.yaml:1", "rdmaResources: must be a list"},
      {"mpsResources: [\"\"]\n", "p.yaml:1", "mpsResources: entries must not be empty"},
      {"sizing: [1, 2]\n", "p.yaml:1", "sizing: must be a mapping"},
      {"hostIPC: [auto\n", "p.yaml:1", "YAML: "},  // the last line, not one past the end
      {"- a\n- b\n", "p.yaml:1", "policy: must be a mapping"},
      {"hostIPC: auto\nhostIPC: never\n", "p.yaml:2", "duplicate key \"hostIPC\""},
      {"sizing:\n  base: 64Mi\n  a/b~c: 1\n", "p.yaml:3", "sizing.a/b~c: unknown key"},
      {"sizing:\n  base: 64Mi\n  safety:\n    - 1.2\n", "p.yaml:3", "sizing.safety: must be a single value"},
      {"namespaces:\n  - match: [a]\n  - match: [b]\n    mode:\n", "p.yaml:4",
       "namespaces[1].mode: must be a single value"},
      {"tls:\n  minVersion: VersionTLS11\n", "p.yaml:2", "tls.minVersion: \"VersionTLS11\" is not a TLS version"},
      {"tls:\n  cipherSuites: [TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256, TLS_RSA_WITH_AES_128_CBC_SHA]\n", "p.yaml:2",
       "tls.cipherSuites: TLS_RSA_WITH_AES_128_CBC_SHA is insecure"},
      {"tls:\n  ciphers: []\n", "p.yaml:2", "tls.ciphers: unknown key; known keys: minVersion, cipherSuites"},
  };
  for (const auto& c : cases) {
    CAPTURE(c.yaml);
    auto p = ParsePolicy(c.yaml, "p.yaml");
    REQUIRE_FALSE(p.has_value());
    CHECK(p.error().code == Code::kInvalidInput);
    CHECK(p.error().where.ToString() == c.where);
    CHECK_THAT(p.error().message, Catch::Contains(c.message));
  }
}

TEST_CASE("ParsePolicy reads values as written, quoted or not, and follows aliases", "[config]") {
  auto p = ParsePolicy(
      "maxFractionOfMemoryLimit: \"0.50\"\nsizing: {safety: 1.10, base: &b 128Mi, "
      "multiGpuFloor: *b}\nnamespaces:\n  - {match: ml-*, mode: 'off'}\n",
      "p.yaml");
  INFO((p ? "" : p.error().ToString()));
  REQUIRE(p.has_value());
  CHECK(p->max_fraction_ppm == 500'000);
  CHECK(p->sizing.safety_ppm == 1'100'000);
  CHECK(p->sizing.multi_gpu_floor_bytes == 128 << 20);
  CHECK(p->namespaces[0].match == std::vector<std::string>{"ml-*"});
  CHECK(p->namespaces[0].mode == NamespaceMode::kOff);
}

TEST_CASE("ParsePolicy reads the webhook port's tls section", "[config]") {
  auto p = ParsePolicy("tls:\n  minVersion: VersionTLS12\n  cipherSuites: [TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256]\n",
                       "p.yaml");
  REQUIRE(p.has_value());
  CHECK(p->tls.min_version == TlsVersion::kTls12);
  CHECK(p->tls.cipher_suites == std::vector<std::string>{"TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256"});
  auto none = ParsePolicy("hostIPC: auto\n", "p.yaml");
  REQUIRE(none.has_value());
  CHECK_FALSE(none->tls.min_version.has_value());  // the flags' values, or the defaults, stay
  CHECK(none->tls.cipher_suites.empty());
}

TEST_CASE("LoadPolicy fails with kIo for a missing file", "[config]") {
  auto p = LoadPolicy("/nonexistent/shmguard.yaml");
  REQUIRE_FALSE(p.has_value());
  CHECK(p.error().code == Code::kIo);
  CHECK_THAT(p.error().ToString(), Catch::Contains("/nonexistent/shmguard.yaml"));
}

}  // namespace
}  // namespace shmguard::io

namespace shmguard::io {
namespace {

TEST_CASE("ParsePolicy reads the unannotated rule and names its errors", "[config]") {
  auto p = ParsePolicy("unannotated: {mode: floor, fractionOfMemoryLimit: 0.4, minimum: 2Gi}\n", "p.yaml");
  INFO((p ? "" : p.error().ToString()));
  REQUIRE(p.has_value());
  CHECK(p->unannotated.mode == UnannotatedMode::kFloor);
  CHECK(p->unannotated.fraction_ppm == 400'000);
  CHECK(p->unannotated.minimum_bytes == 2ll << 30);
  Policy defaults;
  CHECK(defaults.unannotated.mode == UnannotatedMode::kEstimate);
  CHECK(defaults.unannotated.fraction_ppm == 250'000);
  CHECK(defaults.unannotated.minimum_bytes == 1ll << 30);
  struct Case {
    const char* yaml;
    const char* error;
  } cases[] = {
      {"unannotated: {mode: guess}\n", "p.yaml:1: unannotated.mode: must be one of estimate, floor, leave"},
      {"unannotated:\n  fractionOfMemoryLimit: 1.5\n",
       "p.yaml:2: unannotated.fractionOfMemoryLimit: must be a decimal"},
      {"unannotated:\n  minimum: 1GB\n", "p.yaml:2: unannotated.minimum:"},
      {"unannotated: {size: 1Gi}\n", "p.yaml:1: unannotated.size: unknown key"},
      {"unannotated: estimate\n", "p.yaml:1: unannotated: must be a mapping"},
  };
  for (const auto& c : cases) {
    CAPTURE(c.yaml);
    auto bad = ParsePolicy(c.yaml, "p.yaml");
    REQUIRE_FALSE(bad.has_value());
    CHECK_THAT(bad.error().ToString(), Catch::StartsWith(c.error));
  }
}

TEST_CASE("LoadPolicy reads at most 1 MiB, never from a device, and names the file", "[config]") {
  auto zero = LoadPolicy("/dev/zero");
  REQUIRE_FALSE(zero.has_value());
  CHECK(zero.error().ToString() == "/dev/zero: not a regular file (a character device)");
  test::TempDir dir;
  std::ofstream(dir.File("big.yaml")) << "# " << std::string(kMaxPolicyBytes, 'x') << "\n";
  auto big = LoadPolicy(dir.File("big.yaml"));
  REQUIRE_FALSE(big.has_value());
  CHECK(big.error().ToString() == dir.File("big.yaml") + ": larger than the limit of 1048576 bytes");
}

}  // namespace
}  // namespace shmguard::io
