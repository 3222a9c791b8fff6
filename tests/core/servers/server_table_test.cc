// The table of servers: each recognised from commands written out in full, its flags read as its
// parser reads them (and refused where it refuses them), and a pod sized from its server's
// launch. Each server's plan: vllm_test.cc, sglang_test.cc, tgi_test.cc, triton_test.cc, ray_test.cc.
#include <catch2/catch.hpp>
#include <set>

#include "core/patch/plan_annotation.h"
#include "core/servers/server_plan.h"
#include "core/sizing/pod_sizing.h"
#include "core/verdict/evaluation.h"
#include "io/files/manifests.h"
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

TEST_CASE("ReadServerLaunch recognises each server as it is launched", "[server_table]") {
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

TEST_CASE("ReadServerLaunch finds no server in a training container, and names a malformed flag", "[server_table]") {
  const json torchrun = test::Yaml("{name: t, command: [torchrun, --nproc_per_node=8, train.py]}");
  auto none = ReadServerLaunch(JsonNode(torchrun), "/spec/containers/0");
  REQUIRE(none);
  CHECK_FALSE(none->has_value());

  const json bad = test::Yaml("{name: v, command: [vllm, serve, m, --tensor-parallel-size=eight]}");
  auto error = ReadServerLaunch(JsonNode(bad), "/spec/containers/0");
  REQUIRE_FALSE(error);
  CHECK(error.error().message == "--tensor-parallel-size=eight is not a whole number from 1 to 65536");
  CHECK(error.error().where.pointer == "/spec/containers/0/command");

  // A variable only the running shell knows (or a valueFrom) is an unread count, which the plan
  // takes as the pod's GPUs.
  for (const char* container : {"{name: v, command: [sh, -c, 'vllm serve m -tp $TP']}",
                                "{name: v, command: [sh, -c, 'vllm serve m -tp $(TP)'], env: [{name: TP, valueFrom: "
                                "{fieldRef: {fieldPath: metadata.annotations}}}]}"}) {
    CAPTURE(container);
    const json unknown = test::Yaml(container);
    auto l = ReadServerLaunch(JsonNode(unknown), "/spec/containers/0");
    REQUIRE(l);
    REQUIRE(l->has_value());
    CHECK((*l)->tensor_parallel == 0);
    REQUIRE((*l)->unread.size() == 1);
    auto plan = PlanServer(**l, 8, std::nullopt);
    REQUIRE(plan);
    CHECK(plan->procs == 8);
  }
}

// Numbers as each server's own parser reads them: Python's int() and float() for vLLM, SGLang
// and Ray; Rust's usize for TGI.
TEST_CASE("ReadServerLaunch reads numbers as the server's parser does", "[server_table]") {
  const struct {
    const char* container;
    bool ok;
  } cases[] = {
      {"{command: [vllm, serve, m, -tp, '+8']}", true},
      {"{command: [vllm, serve, m, --tensor-parallel-size=+8]}", true},
      {"{command: [vllm, serve, m, -tp, '0_8']}", true},
      {"{command: [vllm, serve, m, -tp, '8.0']}", false},
      {"{command: [vllm, serve, m, -tp, '0']}", false},
      {"{command: [vllm, serve, m, -tp, '-8']}", false},
      {"{command: [vllm, serve, m, --kv-offloading-size, '1e1']}", true},
      {"{command: [vllm, serve, m, --kv-offloading-size, '.5']}", true},
      {"{command: [vllm, serve, m, --kv-offloading-size, '1_6']}", true},
      {"{command: [vllm, serve, m, --kv-offloading-size, '0x10']}", false},
      {"{command: [vllm, serve, m, --kv-offloading-size, 'inf']}", false},
      {"{command: [vllm, serve, m, --kv-offloading-size, 'nan']}", false},
      {"{command: [vllm, serve, m, --kv-offloading-size, '1,5']}", false},
      {"{command: [vllm, serve, m], env: [{name: VLLM_MQ_MAX_CHUNK_BYTES_MB, value: ' 32'}]}", true},
      {"{command: [vllm, serve, m], env: [{name: VLLM_MQ_MAX_CHUNK_BYTES_MB, value: '0x20'}]}", false},
      {"{command: [text-generation-launcher, --num-shard, '+4']}", true},
      {"{command: [text-generation-launcher, --num-shard, '4_0']}", false},
      {"{command: [text-generation-launcher, --sharded, 'yes']}", false},
      {"{command: [ray, start, --object-store-memory, '1_000_000_000']}", true},
      {"{command: [ray, start, --object-store-memory, '1e9']}", false},
  };
  for (const auto& c : cases) {
    CAPTURE(c.container);
    const json container = test::Yaml(c.container);
    auto l = ReadServerLaunch(JsonNode(container), "/spec/containers/0");
    CHECK(bool(l) == c.ok);
  }
  // --kv-offloading-size 0x10 is not 16 GiB: vLLM's float() refuses it, and so does shmguard.
  const json hex = test::Yaml("{command: [vllm, serve, m, --kv-offloading-size, '0x10']}");
  auto refused = ReadServerLaunch(JsonNode(hex), "/spec/containers/0");
  REQUIRE_FALSE(refused);
  CHECK_THAT(refused.error().message, Catch::Contains("--kv-offloading-size=0x10 is not a size in GiB"));
}

// A launch that expands past its budget is not read (a pod of 25,000 references to a 50 KB
// value would be 1.25 GB): an error of its own kind, which the pod's reading reports and sizes
// past. Unclosed references are read once each, however many there are.
TEST_CASE("ReadServerLaunch refuses an expansion past its budget, in one pass", "[server_table]") {
  json bomb = {{"name", "v"}, {"command", {"sh", "-c"}}};
  std::string line = "vllm serve m";
  for (int i = 0; i < 25000; ++i) line += " $X";
  bomb["args"] = {line};
  bomb["env"] = {{{"name", "X"}, {"value", std::string(50000, 'x')}}};
  auto l = ReadServerLaunch(JsonNode(bomb), "/spec/containers/0");
  REQUIRE_FALSE(l);
  CHECK(l.error().code == Code::kUnsupportedKind);
  CHECK_THAT(l.error().message, Catch::Contains("expand past"));

  json unclosed = {{"name", "v"}, {"command", {"sh", "-c"}}};
  std::string opens = "vllm serve m -tp 2 ";
  for (int i = 0; i < 200000; ++i) opens += "$(";
  unclosed["args"] = {opens};
  auto read = ReadServerLaunch(JsonNode(unclosed), "/spec/containers/0");
  REQUIRE(read);
  REQUIRE(read->has_value());
  CHECK((*read)->tensor_parallel == 2);
}

// The pod of such a launch is sized as if it launched no server (its GPUs get the estimate), and
// says why.
TEST_CASE("A pod whose launch expands past its budget is estimated, with launch-unread", "[server_table]") {
  json pod = test::Yaml(R"(apiVersion: v1
kind: Pod
metadata: {name: bomb, namespace: team-a}
spec:
  containers:
  - name: v
    command: [sh, -c]
    resources: {limits: {nvidia.com/gpu: 8, memory: 64Gi}}
)");
  std::string line = "vllm serve m";
  for (int i = 0; i < 25000; ++i) line += " $X";
  pod["spec"]["containers"][0]["args"] = {line};
  pod["spec"]["containers"][0]["env"] = {{{"name", "X"}, {"value", std::string(50000, 'x')}}};
  const Evaluation ev = Evaluate(pod, Policy{});
  REQUIRE(ev.pods.size() == 1);
  std::set<std::string> ids;
  for (const auto& f : ev.pods[0].findings) ids.insert(std::string(f.id()));
  CHECK(ids.count("launch-unread"));
  CHECK(ids.count("sized-without-annotations"));
  CHECK_FALSE(ids.count("sized-from-server-launch"));
  CHECK(ev.verdict == Verdict::kPatch);
}

TEST_CASE("An unannotated vLLM pod is sized from its launch, not by the estimate", "[server_table]") {
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
  CHECK(z.plan.server_bytes == 6200 * kMiB + 11 * 4096);  // and a page of flags for each of 11 segments
  CHECK(z.required_bytes > 6200 * kMiB);
  REQUIRE(z.server_finding);
  CHECK(z.server_finding->Value("server") == "vLLM");
  CHECK(PlanAnnotation(z.note).find(R"("server":"vllm")") != std::string::npos);
}

}  // namespace
}  // namespace shmguard

namespace shmguard {
namespace {

// inference/facts.json records, per serving pod template of 38 published manifests, its server
// and tensor parallelism as its command says them: shmguard must read the same from the
// templates it finds. Each template of a server shmguard sizes must be recognised, but for those
// listed here with the reason it cannot be; a server it does not size (NIM, llama.cpp, Dynamo's
// and KServe's own launchers) must not be taken for another.
TEST_CASE("ReadPod recognises the server of every serving manifest of the corpus, with its tensor parallelism",
          "[server_table][corpus]") {
  SHMGUARD_REQUIRE_CORPUS();
  const json facts = json::parse(test::ReadCorpus("inference/facts.json"));
  const std::map<std::string, Server> kSized = {
      {"vllm", Server::kVllm},     {"sglang", Server::kSglang},       {"tgi", Server::kTgi},
      {"triton", Server::kTriton}, {"tensorrt-llm", Server::kTriton}, {"ray-serve", Server::kRay}};
  // Templates of a sized server whose launch is out of the spec's sight.
  const std::map<std::string, std::string> kUnseen = {
      {"07-lws-vllm-405b-tp8-pp2-shm15gi.yaml /spec/leaderWorkerTemplate/workerTemplate/spec",
       "a Ray worker for the leader's vLLM, started by multi-node-serving.sh"},
      {"10-kserve-llmisvc-nemotron-pd-tp8-shm40gi-unmounted.yaml /spec/template",
       "no command: the LLMInferenceServiceConfig KServe merges in holds the launch"},
      {"10-kserve-llmisvc-nemotron-pd-tp8-shm40gi-unmounted.yaml /spec/prefill/template",
       "no command: the LLMInferenceServiceConfig KServe merges in holds the launch"},
      {"11-kserve-llmisvc-qwen2-7b-amd-gpu.yaml /spec/template",
       "no command: the LLMInferenceServiceConfig KServe merges in holds the launch"},
      {"12-kserve-llmisvcconfig-template-dshm-1gi.yaml /spec/template",
       "a preset whose command is a Go template KServe fills in ({{ .Spec.Parallelism.Tensor }})"},
      {"23-lws-tensorrt-llm-tp2-pp8-shm-unbounded.yaml /spec/leaderWorkerTemplate/leaderTemplate/spec",
       "launched by the example's server.py, which runs mpirun and tritonserver"},
      {"23-lws-tensorrt-llm-tp2-pp8-shm-unbounded.yaml /spec/leaderWorkerTemplate/workerTemplate/spec",
       "a worker of the example's server.py"},
      {"25-gke-triton-trtllm-gemma-no-shm.yaml /spec/template/spec",
       "launched by /scripts/entrypoint.sh from a ConfigMap"},
  };
  int templates = 0;
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
    const std::string where = file + " " + e["path"].get<std::string>();
    CAPTURE(where);
    ++templates;
    const PodReading r = ReadPod(*t, Policy{});
    REQUIRE_FALSE(r.facts_error);
    const std::string server = e["server"];
    auto sized = kSized.find(server);
    // What it must be taken for is what the facts say (TensorRT-LLM's trtllm-serve is Triton's
    // row; a Ray Serve application is sized as the Ray node KubeRay starts). A server shmguard
    // does not size that runs `ray start` in its container first (KServe's multi-node
    // huggingfaceserver) is that Ray node, whose object store is in /dev/shm.
    const bool starts_ray = e["notes"].get<std::string>().find("ray start") != std::string::npos;
    Server expected = sized == kSized.end() ? (starts_ray ? Server::kRay : Server::kNone) : sized->second;
    if (kUnseen.count(where)) expected = Server::kNone;
    CHECK((r.facts.server ? r.facts.server->server : Server::kNone) == expected);
    if (!r.facts.server) continue;
    const Server s = r.facts.server->server;
    if (e["tensor_parallel"].is_number() && s == Server::kTgi) {  // TGI's shards are its tensor parallelism
      CHECK(r.facts.server->world_size == e["tensor_parallel"].get<int64_t>());
    } else if (e["tensor_parallel"].is_number() && s != Server::kRay) {
      CHECK(r.facts.server->tensor_parallel == e["tensor_parallel"].get<int64_t>());
    }
  }
  CHECK(templates >= 35);
}

}  // namespace
}  // namespace shmguard
