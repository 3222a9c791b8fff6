// Launches read as the servers read them: vLLM's connectors in JSON and dotted form, its
// abbreviations, --config, the multi-port balancer and a worker node; the shell's own
// assignments; Triton's backend config; SGLang's shm_cpu offload and EnvBool; two servers in one
// pod.
#include <catch2/catch.hpp>

#include "core/facts/pod_facts.h"
#include "core/policy/policy.h"
#include "core/servers/internal/vllm_words.h"
#include "core/workloads/pod_templates.h"
#include "servers_test_util.h"

namespace shmguard {
namespace {

using test::kGiB;
using test::kMiB;
using test::LaunchOf;
using test::PlanOf;

int64_t TermBytes(const ServerPlan& p, ServerSegment segment) {
  int64_t sum = 0;
  for (const ServerTerm& t : p.terms) {
    if (t.segment == segment) sum += t.count * t.each;
  }
  return sum;
}

TEST_CASE("vLLM's KV offload region is read from --kv-transfer-config, JSON or dotted", "[launch_reading]") {
  const struct {
    const char* name;
    const char* container;
    int64_t gpus;
    int64_t offload;
  } cases[] = {
      {"the shortcut", "{command: [vllm, serve, m, --kv-offloading-size, '16']}", 1, 16 * kGiB},
      {"OffloadingConnector in JSON",
       R"({command: [vllm, serve, m, --kv-transfer-config, '{"kv_connector":"OffloadingConnector","kv_role":"kv_both","kv_connector_extra_config":{"cpu_bytes_to_use":17179869184}}']})",
       1, 16 * kGiB},
      {"in a shell script, quoted",
       R"({command: [sh, -c, "exec vllm serve m --kv-transfer-config '{\"kv_connector\": \"OffloadingConnector\", \"kv_connector_extra_config\": {\"cpu_bytes_to_use\": 8e9}}'"]})",
       1, 8'000'000'000},
      {"the dotted form",
       "{command: [vllm, serve, m, --kv-transfer-config.kv_connector, OffloadingConnector, "
       "--kv_transfer_config.kv_connector_extra_config.cpu_bytes_to_use=20g]}",
       1, 20'000'000'000},
      {"inside a MultiConnector beside NIXL, two engines",
       R"({command: [vllm, serve, m, -dp, '2', --kv-transfer-config, '{"kv_connector":"MultiConnector","kv_connector_extra_config":{"connectors":[{"kv_connector":"NixlConnector","kv_role":"kv_both"},{"kv_connector":"OffloadingConnector","kv_role":"kv_both","kv_connector_extra_config":{"cpu_bytes_to_use":"4294967296"}}]}}']})",
       2, 2 * 4 * kGiB},
      {"NIXL alone: none",
       R"({command: [vllm, serve, m, --kv-transfer-config, '{"kv_connector":"NixlConnector","kv_role":"kv_both"}']})",
       1, 0},
      {"the shortcut wins over the connector",
       R"({command: [vllm, serve, m, --kv-offloading-size, '2', --kv-transfer-config, '{"kv_connector":"OffloadingConnector","kv_connector_extra_config":{"cpu_bytes_to_use":9000000000}}']})",
       1, 2 * kGiB},
  };
  for (const auto& c : cases) {
    SECTION(c.name) { CHECK(TermBytes(PlanOf(c.container, c.gpus), ServerSegment::kKvOffload) == c.offload); }
  }
  const nlohmann::json bad =
      test::Yaml(R"({command: [vllm, serve, m, --kv-transfer-config, '{"kv_connector":"OffloadingConnector"}']})");
  auto refused = ReadServerLaunch(JsonNode(bad), "/spec/containers/0");
  REQUIRE_FALSE(refused);
  CHECK(refused.error().message.find("cpu_bytes_to_use") != std::string::npos);
}

TEST_CASE("vLLM's ECCPUConnector region is counted per engine, and said to be unchecked", "[launch_reading]") {
  const ServerPlan p = PlanOf(
      R"({command: [vllm, serve, m, -dp, '2', --ec-transfer-config, '{"ec_connector":"ECCPUConnector","ec_role":"ec_both","ec_connector_extra_config":{"ec_cpu_bytes":3221225472}}']})",
      2);
  CHECK(TermBytes(p, ServerSegment::kEncoderCache) == 2 * 3 * kGiB);
  CHECK(p.unchecked.find("encoder-cache") != std::string::npos);
}

TEST_CASE("vLLM's multi-port external balancer gives each local rank its own multimodal cache", "[launch_reading]") {
  const ServerPlan p = PlanOf(
      "{command: [vllm, serve, m, -dp, '8', -dpl, '4', --data-parallel-multi-port-external-lb, "
      "--mm-processor-cache-type, shm]}",
      4);
  CHECK(TermBytes(p, ServerSegment::kMultimodalCache) == 4 * 4 * kGiB);
  CHECK(p.procs == 4);
  CHECK(p.multi_node);
}

TEST_CASE("PrepareVllmWords spells out abbreviations as argparse does, and refuses ambiguous ones",
          "[launch_reading]") {
  ServerLaunch l;
  auto words =
      servers::PrepareVllmWords({"--tensor-parallel", "8", "--pipeline_parallel=2", "--port", "80"}, nullptr, l);
  REQUIRE(words);
  CHECK(*words ==
        std::vector<std::string>{"--tensor-parallel-size", "8", "--pipeline-parallel-size=2", "--port", "80"});
  auto ambiguous = servers::PrepareVllmWords({"--kv-offloading", "16"}, nullptr, l);
  REQUIRE_FALSE(ambiguous);
  CHECK(ambiguous.error().message.find("--kv-offloading-size") != std::string::npos);
  CHECK(LaunchOf("{command: [vllm, serve, m, --tensor-parallel, '8']}").tensor_parallel == 8);
  CHECK(servers::kVllmOptionsVersion == "0.33.0");
}

TEST_CASE("A vLLM --config file that is not in the input sizes the world as the pod's GPUs", "[launch_reading]") {
  const ServerPlan p = PlanOf("{command: [vllm, serve, --config, /etc/vllm/config.yaml]}", 8);
  CHECK(p.procs == 8);
  CHECK(LaunchOf("{command: [vllm, serve, --config, c.yaml, -tp, '2']}").tensor_parallel == 2);
}

TEST_CASE("A headless worker node of a multi-node engine holds no executor queues", "[launch_reading]") {
  const ServerPlan leader = PlanOf("{command: [vllm, serve, m, -tp, '8', -pp, '2', --nnodes, '2']}", 8);
  const ServerPlan worker =
      PlanOf("{command: [vllm, serve, m, -tp, '8', -pp, '2', --nnodes, '2', --node-rank, '1', --headless]}", 8);
  CHECK(TermBytes(leader, ServerSegment::kExecutorBroadcastQueue) > 0);
  CHECK(TermBytes(worker, ServerSegment::kExecutorBroadcastQueue) == 0);
  CHECK(TermBytes(worker, ServerSegment::kWorkerReplyBroadcaster) == 0);
  CHECK(TermBytes(worker, ServerSegment::kTpBroadcaster) == 24 * kMiB);
}

TEST_CASE("What a shell sets before the launch is the server's env", "[launch_reading]") {
  const struct {
    const char* container;
    int64_t chunk;
  } cases[] = {
      {"{command: [sh, -c, 'export VLLM_MQ_MAX_CHUNK_BYTES_MB=256; exec vllm serve m -tp 8']}", 256 * kMiB},
      {"{command: [bash, -lc, 'VLLM_MQ_MAX_CHUNK_BYTES_MB=64 vllm serve m -tp 8']}", 64 * kMiB},
      {"{command: [sh, -c, 'export TP=4; vllm serve m -tp $TP']}", 16 * kMiB},
      {"{command: [vllm, serve, m]}", 16 * kMiB},
  };
  for (const auto& c : cases) {
    CAPTURE(c.container);
    CHECK(LaunchOf(c.container).mq_chunk_bytes == c.chunk);
  }
  CHECK(LaunchOf("{command: [sh, -c, 'export TP=4; vllm serve m -tp $TP']}").tensor_parallel == 4);
  // A variable's value is not read for quotes again: a quoted value holding quotes stays one word.
  CHECK(LaunchOf("{command: [sh, -c, 'f() { python3 -c \"$CODE\" \"$@\"; }; vllm serve m -tp 2'], env: [{name: CODE, "
                 "value: 'print(\"a b\"); x = \"'}]}")
            .tensor_parallel == 2);
}

TEST_CASE("Triton's Python backend region starts at its shm-default-byte-size", "[launch_reading]") {
  const ServerPlan p = PlanOf(
      "{command: [tritonserver, --model-repository=/m, '--backend-config=python,shm-default-byte-size=268435456', "
      "'--backend-config=python,shm-growth-byte-size=1048576']}",
      1);
  CHECK(TermBytes(p, ServerSegment::kPythonBackendRegion) == 256 * kMiB);
  CHECK(p.unbounded.find("256Mi") != std::string::npos);
  CHECK(PlanOf("{command: [tritonserver, --model-repository=/m]}", 1).bytes == 0);
}

TEST_CASE("SGLang's shm_cpu offload is said to be unbounded, and EnvBool reads as SGLang reads it",
          "[launch_reading]") {
  CHECK(
      PlanOf("{command: [python3, -m, sglang.launch_server, --offload-mode, shm_cpu]}", 1).unbounded.find("shm_cpu") !=
      std::string::npos);
  for (const char* off : {"FALSE", "no", "n", "0"}) {
    CAPTURE(off);
    const std::string c = std::string(
                              "{command: [python3, -m, sglang.launch_server, --tp, '2'], env: [{name: "
                              "SGLANG_USE_MESSAGE_QUEUE_BROADCASTER, value: '") +
                          off + "'}]}";
    CHECK_FALSE(LaunchOf(c).mq_broadcaster);
  }
  const nlohmann::json bad = test::Yaml(
      "{command: [python3, -m, sglang.launch_server], env: [{name: SGLANG_USE_MESSAGE_QUEUE_BROADCASTER, value: "
      "maybe}]}");
  CHECK_FALSE(ReadServerLaunch(JsonNode(bad), "/spec/containers/0"));
}

TEST_CASE("Two server containers in one pod share its /dev/shm: both are counted", "[launch_reading]") {
  const nlohmann::json pod = test::Yaml(R"(
apiVersion: v1
kind: Pod
metadata: {name: pd, namespace: ml}
spec:
  containers:
  - name: prefill
    command: [vllm, serve, m, -tp, '4']
    resources: {limits: {nvidia.com/gpu: 4, memory: 200Gi}}
  - name: decode
    command: [vllm, serve, m, -tp, '4', --kv-offloading-size, '8']
    resources: {limits: {nvidia.com/gpu: 4, memory: 200Gi}}
)");
  const Policy policy;
  auto workload = FindPodTemplates(JsonNode(pod));
  REQUIRE(workload);
  REQUIRE(workload->templates.size() == 1);
  const PodReading r = ReadPod(workload->templates.front(), policy);
  REQUIRE(r.server);
  const ServerPlan one = PlanOf("{command: [vllm, serve, m, -tp, '4']}", 4);
  const ServerPlan other = PlanOf("{command: [vllm, serve, m, -tp, '4', --kv-offloading-size, '8']}", 4);
  CHECK(r.server->bytes == one.bytes + other.bytes);
  CHECK(r.facts.procs == 8);
}

}  // namespace
}  // namespace shmguard
