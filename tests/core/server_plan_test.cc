// ReadServerLaunch and PlanServer: each server recognised from commands written out in full, the
// flags read as its parser reads them, and the formulas of docs/sources.md §10 pinned in bytes.
#include "shmguard/server_plan.h"

#include <catch2/catch.hpp>

#include "core/pod_sizing.h"
#include "io/manifests.h"
#include "test_util.h"

namespace shmguard {
namespace {

using nlohmann::json;

constexpr int64_t kMiB = int64_t{1} << 20, kGiB = int64_t{1} << 30;

ServerLaunch Launch(const std::string& container_yaml) {
  const json c = test::Yaml(container_yaml);
  auto l = ReadServerLaunch(JsonNode(c), "/spec/containers/0");
  REQUIRE(l);
  REQUIRE(l->has_value());
  return **l;
}

TEST_CASE("ReadServerLaunch recognises each server as it is launched", "[server_plan]") {
  struct Case {
    std::string name, container;
    Server server;
    int64_t tp, pp, dp;
  };
  const std::vector<Case> cases = {
      {"vllm serve, spaced flags", "{name: v, command: [vllm, serve, Qwen/Qwen3-8B, --tensor-parallel-size, '8']}",
       Server::kVllm, 8, 1, 1},
      {"the api_server module, equals form and underscores",
       "{name: v, command: [python3, -m, vllm.entrypoints.openai.api_server], args: [--tensor_parallel_size=4, "
       "--pipeline-parallel-size=2]}",
       Server::kVllm, 4, 2, 1},
      {"short flags", "{name: v, command: [vllm, serve, m, -tp, '2', -pp, '2', -dp, '2']}", Server::kVllm, 2, 2, 2},
      {"sh -c with $(VAR) and ${VAR}",
       "{name: v, command: [sh, -c], args: ['ray start --head; exec vllm serve m --tensor-parallel-size $(TP) "
       "--pipeline-parallel-size ${PP} \\\n --port 8000'], env: [{name: TP, value: '8'}, {name: PP, value: '2'}]}",
       Server::kVllm, 8, 2, 1},
      {"the vllm-openai image's entrypoint",
       "{name: v, image: 'vllm/vllm-openai:v0.10.0', args: [--model, m, -tp, '4']}", Server::kVllm, 4, 1, 1},
      {"Dynamo's vLLM worker", "{name: w, command: [python3, -m, dynamo.vllm], args: [--tensor-parallel-size, '2']}",
       Server::kVllm, 2, 1, 1},
      {"SGLang, argparse's prefix --tp",
       "{name: s, command: [python3, -m, sglang.launch_server], args: [--tp, '2', --dp-size, '2']}", Server::kSglang, 2,
       1, 2},
      {"TGI by its launcher", "{name: t, command: [text-generation-launcher, --num-shard, '4']}", Server::kTgi, 1, 1,
       1},
      {"TGI by its image, NUM_SHARD",
       "{name: t, image: ghcr.io/huggingface/text-generation-inference:3.0, env: [{name: NUM_SHARD, value: '4'}]}",
       Server::kTgi, 1, 1, 1},
      {"Triton under mpirun", "{name: t, command: [mpirun, --allow-run-as-root, -n, '2', tritonserver]}",
       Server::kTriton, 1, 1, 1},
      {"a Ray node", "{name: r, command: [ray, start, --head, --object-store-memory=10000000000, --block]}",
       Server::kRay, 1, 1, 1},
  };
  for (const auto& c : cases) {
    SECTION(c.name) {
      const ServerLaunch l = Launch(c.container);
      CHECK(l.server == c.server);
      CHECK(l.tensor_parallel == c.tp);
      CHECK(l.pipeline_parallel == c.pp);
      CHECK(l.data_parallel == c.dp);
    }
  }
}

TEST_CASE("ReadServerLaunch finds no server in a training container, and names a malformed flag", "[server_plan]") {
  const json torchrun = test::Yaml("{name: t, command: [torchrun, --nproc_per_node=8, train.py]}");
  auto none = ReadServerLaunch(JsonNode(torchrun), "/spec/containers/0");
  REQUIRE(none);
  CHECK_FALSE(none->has_value());

  const json bad = test::Yaml("{name: v, command: [vllm, serve, m, --tensor-parallel-size=eight]}");
  auto error = ReadServerLaunch(JsonNode(bad), "/spec/containers/0");
  REQUIRE_FALSE(error);
  CHECK(error.error().message == "--tensor-parallel-size=eight is not a whole number from 1 to 65536");
  CHECK(error.error().where.pointer == "/spec/containers/0/command");

  // A variable only the running shell knows leaves the count to the GPUs.
  const json unknown = test::Yaml("{name: v, command: [sh, -c, 'vllm serve m -tp $TP']}");
  auto l = ReadServerLaunch(JsonNode(unknown), "/spec/containers/0");
  REQUIRE(l);
  REQUIRE(l->has_value());
  CHECK((*l)->tensor_parallel == 1);
  CHECK((*l)->read == std::vector<std::string>{"-tp=$TP"});
}

TEST_CASE("PlanServer: vLLM's queues, its tensor-parallel broadcaster, the multimodal cache and KV offload",
          "[server_plan]") {
  struct Case {
    std::string name, container;
    int64_t gpus;
    int64_t procs, bytes;
    bool multi_node;
  };
  const std::vector<Case> cases = {
      // 160Mi broadcast + 8 × 240Mi responses + 24Mi broadcaster = 2104Mi.
      {"text only, TP 8", "{name: v, command: [vllm, serve, m, --tensor-parallel-size, '8']}", 8, 8, 2104 * kMiB,
       false},
      // and 4Gi of multimodal cache in /dev/shm: 6200Mi.
      {"multimodal cache in shm, TP 8",
       "{name: v, command: [vllm, serve, m, -tp, '8', --mm-processor-cache-type, shm]}", 8, 8, 6200 * kMiB, false},
      {"cache of 2.5 GiB",
       "{name: v, command: [vllm, serve, m, -tp, '2', --mm-processor-cache-type=shm, --mm-processor-cache-gb=2.5]}", 2,
       2, (160 + 480 + 24 + 2560) * kMiB, false},
      {"one GPU: no executor queues, no broadcaster", "{name: v, command: [vllm, serve, m]}", 1, 1, 0, false},
      {"KV offload", "{name: v, command: [vllm, serve, m, --kv-offloading-size, '16']}", 1, 1, 16 * kGiB, false},
      // ...which ROCm keeps in a private tensor, not in /dev/shm.
      {"KV offload on an AMD GPU",
       "{name: v, command: [vllm, serve, m, --kv-offloading-size, '16'], resources: {limits: {amd.com/gpu: 1}}}", 1, 1,
       0, false},
      {"VLLM_MQ_MAX_CHUNK_BYTES_MB",
       "{name: v, command: [vllm, serve, m, -tp, '2'], env: [{name: VLLM_MQ_MAX_CHUNK_BYTES_MB, value: '100'}]}", 2, 2,
       (1000 + 480 + 24) * kMiB, false},
      // TP 8 × PP 2 across two pods of 8 GPUs: this pod's 8 workers.
      {"TP 8 PP 2 over two pods", "{name: v, command: [vllm, serve, m, -tp, '8', -pp, '2']}", 8, 8,
       (160 + 8 * 240 + 24) * kMiB, true},
      // DP 2 × TP 2 on one pod: two engines, each with its queues and broadcaster.
      {"DP 2 × TP 2", "{name: v, command: [vllm, serve, m, -tp, '2', -dp, '2']}", 4, 4,
       (2 * 160 + 4 * 240 + 2 * 24) * kMiB, false},
      // The shm tensor arena: 8 slots of 256 MiB on the executor's broadcast queue.
      {"shm tensor arena, TP 2", "{name: v, command: [vllm, serve, m, -tp, '2', --enable-shm-tensor-arena]}", 2, 2,
       (160 + 480 + 24 + 2048) * kMiB, false},
      // ...only where every reader is local: not across pods.
      {"shm tensor arena over two pods", "{name: v, command: [vllm, serve, m, -tp, '4', --enable_shm_tensor_arena]}", 2,
       2, (160 + 480 + 24) * kMiB, true},
  };
  for (const auto& c : cases) {
    SECTION(c.name) {
      auto p = PlanServer(Launch(c.container), c.gpus, std::nullopt);
      REQUIRE(p);
      CHECK(p->procs == c.procs);
      CHECK(p->bytes == c.bytes);
      CHECK(p->multi_node == c.multi_node);
    }
  }
}

TEST_CASE("PlanServer: SGLang's broadcaster, TGI's and Triton's ranks, Ray's object store × 1.1", "[server_plan]") {
  auto sglang = PlanServer(Launch("{name: s, command: [python3, -m, sglang.launch_server, --tp-size, '4']}"), 4, {});
  REQUIRE(sglang);
  CHECK(sglang->procs == 4);
  CHECK(sglang->bytes == 24 * kMiB);
  // The attention groups that split a TP group of 8 get broadcasters of their own; a group of
  // one rank gets none.
  const struct {
    const char* flags;
    int64_t procs, broadcasters;
  } groups[] = {
      {"--tp, '8', --attn-dp-size, '2'", 8, 1 + 2},                 // attention TP groups of 4
      {"--tp, '8', --dp-size, '8', --enable-dp-attention", 8, 1},   // attention TP groups of 1
      {"--tp, '8', --dp, '2', --enable-dp-attention", 8, 1 + 2},    // the older spelling of the first
      {"--tp, '8', --attn-cp-size, '2'", 8, 1 + 2 + 4},             // attention TP of 4, CP groups of 2
      {"--tp, '8', --attention-context-parallel-size, '8'", 8, 1},  // the CP group is the TP group
      {"--tp, '8', --dcp-size, '4'", 8, 1 + 2},
      {"--tp, '4', --dp-size, '2'", 8, 2},  // two replicas, each its TP group
  };
  for (const auto& g : groups) {
    CAPTURE(g.flags);
    auto plan = PlanServer(
        Launch(std::string("{name: s, command: [python3, -m, sglang.launch_server, ") + g.flags + "]}"), 8, {});
    REQUIRE(plan);
    CHECK(plan->procs == g.procs);
    CHECK(plan->bytes == g.broadcasters * 24 * kMiB);
  }
  auto off = PlanServer(Launch("{name: s, command: [python3, -m, sglang.launch_server, --tp, '4'], env: "
                               "[{name: SGLANG_USE_MESSAGE_QUEUE_BROADCASTER, value: 'false'}]}"),
                        4, {});
  CHECK(off->bytes == 0);

  auto tgi = PlanServer(Launch("{name: t, command: [text-generation-launcher, --num-shard=4]}"), 8, {});
  CHECK(tgi->procs == 4);
  CHECK(tgi->bytes == 0);
  auto triton = PlanServer(Launch("{name: t, command: [mpirun, -np, '2', tritonserver]}"), 2, {});
  CHECK(triton->procs == 2);

  // 1e10 × 1.1 = 11e9 bytes, rounded up to a MiB.
  auto explicit_store =
      PlanServer(Launch("{name: r, command: [ray, start, --head, --object-store-memory=10000000000]}"), 0, {});
  CHECK(explicit_store->bytes == (11'000'000'000 + kMiB - 1) / kMiB * kMiB);
  // Ray's default: 30% of a 64Gi limit, × 1.1.
  auto share = PlanServer(Launch("{name: r, command: [ray, start, --head]}"), 0, 64 * kGiB);
  CHECK(share->bytes == ((64 * kGiB / 10 * 3 + 9) / 10 * 11 + kMiB - 1) / kMiB * kMiB);
  auto unknown = PlanServer(Launch("{name: r, command: [ray, start, --head]}"), 0, std::nullopt);
  CHECK(unknown->bytes == 0);
  CHECK_FALSE(unknown->unbounded.empty());
  CHECK(ServerTermsText(*PlanServer(Launch("{name: v, command: [vllm, serve, m, -tp, '2']}"), 2, {})) ==
        "160Mi executor broadcast queue + 2 × 240Mi worker response queues + 24Mi tensor-parallel broadcaster");
}

TEST_CASE("An unannotated vLLM pod is sized from its launch, not by the estimate", "[server_plan]") {
  const json pod = test::Yaml(R"(apiVersion: v1
kind: Pod
metadata: {name: vllm}
spec:
  containers:
  - name: vllm
    image: vllm/vllm-openai:v0.11.0
    command: [vllm, serve, Qwen/Qwen3-235B, --tensor-parallel-size, '8', --mm-processor-cache-type, shm]
    resources: {limits: {nvidia.com/gpu: 8, memory: 512Gi}}
)");
  Workload w = test::OnlyTemplate(pod);
  Policy policy;
  NamespaceRule rule;
  PodContext ctx;
  const PodReading r = ReadPod(w.templates[0], policy);
  REQUIRE(r.server);
  CHECK(r.facts.procs == 8);
  const PodSizing z = SizePod({w.templates[0], w, rule, policy, ctx}, r);
  REQUIRE(z.kind == SizingKind::kServer);
  CHECK(z.plan.server_bytes == 6200 * kMiB);
  CHECK(z.required_bytes > 6200 * kMiB);
  REQUIRE(z.server_finding);
  CHECK(z.server_finding->Value("server") == "vLLM");
  CHECK(z.plan_json.find(R"("server":"vllm")") != std::string::npos);
}

}  // namespace
}  // namespace shmguard

namespace shmguard {
namespace {

// inference/facts.json records, per serving pod template of 38 published manifests, its server
// and tensor parallelism as its command says them: shmguard must read the same from the
// templates it finds. A server it does not size (NIM, llama.cpp, Dynamo's and KServe's own
// launchers, a script that starts the server) is listed, and must not be taken for another.
TEST_CASE("ReadPod recognises the server of every serving manifest of the corpus, with its tensor parallelism",
          "[server_plan][corpus]") {
  SHMGUARD_REQUIRE_CORPUS();
  const json facts = json::parse(test::ReadCorpus("inference/facts.json"));
  const std::map<std::string, Server> kSized = {
      {"vllm", Server::kVllm},     {"sglang", Server::kSglang},       {"tgi", Server::kTgi},
      {"triton", Server::kTriton}, {"tensorrt-llm", Server::kTriton}, {"ray-serve", Server::kRay}};
  int recognised = 0, templates = 0;
  std::vector<std::string> unrecognised;
  for (const auto& e : facts) {
    if (e["path"].is_null()) continue;  // a CRD with no embedded pod spec
    const std::string file = e["file"];
    auto docs = io::ParseManifests(test::ReadCorpus("inference/" + file), file);
    const json object = docs.at(e["doc"].get<size_t>()).object->ToJson();
    auto w = FindPodTemplates(object);
    if (!w) continue;  // a kind shmguard does not read
    const PodTemplate* t = nullptr;
    for (const auto& c : w->templates) {
      if (c.spec_pointer == e["path"]) t = &c;
    }
    if (!t) continue;
    CAPTURE(file, e["path"].get<std::string>());
    ++templates;
    const PodReading r = ReadPod(*t, Policy{});
    REQUIRE_FALSE(r.facts_error);
    const std::string server = e["server"];
    auto sized = kSized.find(server);
    if (!r.facts.server) {
      unrecognised.push_back(file + " " + e["path"].get<std::string>() + " (" + server + ")");
      continue;
    }
    ++recognised;
    // What it was taken for is what the facts say (TensorRT-LLM's trtllm-serve is Triton's row;
    // a Ray Serve application is sized as the Ray node KubeRay starts). A server shmguard does
    // not size that runs `ray start` in its container first (KServe's multi-node
    // huggingfaceserver) is that Ray node, whose object store is in /dev/shm.
    const bool starts_ray = e["notes"].get<std::string>().find("ray start") != std::string::npos;
    Server expected = sized == kSized.end() ? (starts_ray ? Server::kRay : Server::kNone) : sized->second;
    CHECK(r.facts.server->server == expected);
    const Server s = r.facts.server->server;
    if (e["tensor_parallel"].is_number() && s == Server::kTgi) {  // TGI's shards are its tensor parallelism
      CHECK(r.facts.server->world_size == e["tensor_parallel"].get<int64_t>());
    } else if (e["tensor_parallel"].is_number() && s != Server::kRay) {
      CHECK(r.facts.server->tensor_parallel == e["tensor_parallel"].get<int64_t>());
    }
  }
  for (const auto& u : unrecognised) WARN("no server recognised: " << u);
  CHECK(templates > 0);
  CHECK(recognised >= templates / 2);
}

}  // namespace
}  // namespace shmguard
