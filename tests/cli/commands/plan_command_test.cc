// RunPlan: text and JSON output, verdicts, flag-named errors.
#include "cli/commands/plan_command.h"

#include <catch2/catch.hpp>
#include <functional>
#include <nlohmann/json.hpp>
#include <sstream>

namespace shmguard::cli {
namespace {

using nlohmann::json;

TEST_CASE("RunPlan prints the size and its arithmetic as JSON", "[plan_command]") {
  PlanOptions o;
  o.num_workers = 8;
  o.batch_bytes = "160Mi";
  o.procs = 4;
  o.memory_limit = "16Gi";
  o.output = "json";
  std::ostringstream out, err;
  CHECK(RunPlan(o, Policy{}, out, err) == ExitCode::kFindings);
  json j = json::parse(out.str());
  CHECK(j["required_bytes"] == 14078ll << 20);
  CHECK(j["required"] == "14078Mi");
  CHECK(j["memory_limit_bytes"] == 16ll << 30);
  CHECK(j["left_for_processes_bytes"] == (16ll << 30) - (14078ll << 20));
  CHECK(j["verdict"] == "deny");  // 13.7Gi is more than half of 16Gi
  REQUIRE(j["findings"].size() == 2);
  CHECK(j["findings"][1]["id"] == "shm-over-memory-limit");
  CHECK(j["findings"][1]["severity"] == "error");
  CHECK(j["findings"][1]["numbers"]["max_fraction_ppm"] == 500'000);
  CHECK_THAT(j["findings"][1]["message"].get<std::string>(),
             Catch::Contains("is more than 0.5 of the memory limit 16Gi"));
  CHECK(j["arithmetic"].size() == 4);
  // The same size where Docker and Compose set it; no GPUs: no locked memory.
  CHECK(j["docker_run"] == "docker run --shm-size=14078m");
  CHECK(j["compose"] == json{{"shm_size", "14078m"}});
  CHECK(j["kubernetes"]["volume"]["emptyDir"]["sizeLimit"] == "14078Mi");
}

TEST_CASE("RunPlan says how to set the size in a pod, with docker run and in Compose", "[plan_command]") {
  PlanOptions o;
  o.num_workers = 8;
  o.batch_bytes = "48Mi";
  o.gpus = 4;
  std::ostringstream out, err;
  CHECK(RunPlan(o, Policy{}, out, err) == ExitCode::kOk);
  CHECK_THAT(out.str(), Catch::Contains("/dev/shm needs 4401Mi"));
  // No RDMA: no locked memory anywhere (pin_memory needs none).
  CHECK_THAT(
      out.str(),
      Catch::Contains("  Kubernetes: volume dshm: emptyDir {medium: Memory, sizeLimit: 4401Mi} mounted at /dev/shm\n"
                      "  docker run: docker run --shm-size=4401m ...\n"
                      "  Compose:    shm_size: 4401m\n"));
  CHECK_THAT(out.str(), !Catch::Contains("memlock") && !Catch::Contains("IPC_LOCK"));

  // With RDMA: the capability (for a root container) and the unlimited memlock ulimit.
  o.rdma = true;
  std::ostringstream rdma;
  CHECK(RunPlan(o, Policy{}, rdma, err) == ExitCode::kOk);
  CHECK_THAT(
      rdma.str(),
      Catch::Contains("  Kubernetes: volume dshm: emptyDir {medium: Memory, sizeLimit: 4401Mi} mounted at /dev/shm, "
                      "capability IPC_LOCK (it takes effect when the container runs as root)\n"
                      "  docker run: docker run --shm-size=4401m --ulimit memlock=-1:-1 ...\n"
                      "  Compose:    shm_size: 4401m\n"
                      "              ulimits: {memlock: -1}\n"));
  o.output = "json";
  std::ostringstream jout;
  CHECK(RunPlan(o, Policy{}, jout, err) == ExitCode::kOk);
  json j = json::parse(jout.str());
  CHECK(j["docker_run"] == "docker run --shm-size=4401m --ulimit memlock=-1:-1");
  CHECK(j["compose"] == json::parse(R"({"shm_size": "4401m", "ulimits": {"memlock": -1}})"));
  CHECK(j["kubernetes"]["ipc_lock"] == true);
  // ipcLock: never keeps both out, RDMA or not.
  Policy never;
  never.ipc_lock = IpcLockMode::kNever;
  std::ostringstream nout;
  CHECK(RunPlan(o, never, nout, err) == ExitCode::kOk);
  json n = json::parse(nout.str());
  CHECK(n["kubernetes"]["ipc_lock"] == false);
  CHECK(n["docker_run"] == "docker run --shm-size=4401m");
}

TEST_CASE("RunPlan verdict and exit code", "[plan_command]") {
  PlanOptions o;
  o.num_workers = 2;
  o.batch_bytes = "8Mi";
  o.memory_limit = "8Gi";
  std::ostringstream out, err;
  CHECK(RunPlan(o, Policy{}, out, err) == ExitCode::kOk);
  CHECK_THAT(out.str(), Catch::Contains("/dev/shm needs 135Mi") && Catch::Contains("verdict: ok"));
  o.memory_limit = "64Mi";
  std::ostringstream out2;
  CHECK(RunPlan(o, Policy{}, out2, err) == ExitCode::kFindings);
}

TEST_CASE("RunPlan names the flag of a bad value", "[plan_command]") {
  PlanOptions o;
  o.num_workers = 8;
  o.batch_bytes = "64MB";
  std::ostringstream out, err;
  CHECK(RunPlan(o, Policy{}, out, err) == ExitCode::kUsage);
  CHECK_THAT(err.str(), Catch::StartsWith("shmguard plan: --batch-bytes: \"64MB\" is not a valid quantity"));
  o.batch_bytes.clear();
  std::ostringstream err2;
  CHECK(RunPlan(o, Policy{}, out, err2) == ExitCode::kUsage);
  CHECK_THAT(err2.str(), Catch::Contains("--batch-bytes: is required when num-workers > 0"));
  o.batch_bytes = "8Ei";
  std::ostringstream err3;
  CHECK(RunPlan(o, Policy{}, out, err3) == ExitCode::kUsage);
  CHECK_THAT(err3.str(), Catch::Contains("the DataLoader term exceeds 2^63-1 bytes"));
  o.batch_bytes = "1Mi";
  o.procs = 0;
  std::ostringstream err4;
  CHECK(RunPlan(o, Policy{}, out, err4) == ExitCode::kUsage);
  CHECK(err4.str() == "shmguard plan: --procs: 0 must be a whole number from 1 to 1024\n");
  o.procs.reset();
  o.memory_limit = "lots";
  std::ostringstream err5;
  CHECK(RunPlan(o, Policy{}, out, err5) == ExitCode::kUsage);
  CHECK_THAT(err5.str(), Catch::StartsWith("shmguard plan: --memory-limit: \"lots\" is not a valid quantity"));
}

TEST_CASE("RunPlan names where the processes and the memory limit come from", "[plan_command]") {
  PlanOptions o;
  o.num_workers = 4;
  o.batch_bytes = "32Mi";
  o.gpus = 2;
  o.output = "json";
  std::ostringstream out, err;
  CHECK(RunPlan(o, Policy{}, out, err) == ExitCode::kOk);
  json j = json::parse(out.str());
  REQUIRE(j["findings"].size() == 2);
  CHECK(j["findings"][0]["id"] == "shm-plan");
  CHECK_THAT(j["findings"][0]["message"].get<std::string>(), Catch::EndsWith("(2 procs from 2 GPUs (--gpus))"));
  CHECK(j["findings"][1]["id"] == "memory-limit-missing");
  CHECK_THAT(j["findings"][1]["message"].get<std::string>(),
             Catch::StartsWith("no memory limit (no --memory-limit): dshm pages"));
  o.memory_limit = "512Mi";
  o.procs = 1;
  std::ostringstream out2;
  CHECK(RunPlan(o, Policy{}, out2, err) == ExitCode::kFindings);
  j = json::parse(out2.str());
  // One process for two GPUs: said too.
  REQUIRE(j["findings"].size() == 3);
  CHECK_THAT(j["findings"][0]["message"].get<std::string>(), Catch::EndsWith("(1 proc from --procs)"));
  CHECK(j["findings"][2]["message"] == "1 process per pod (--procs) but 2 GPUs: 1 GPU stays idle");
  CHECK_THAT(j["findings"][1]["message"].get<std::string>(),
             Catch::Contains("461Mi is more than 0.5 of the memory limit 512Mi"));
}

// An inference server's plan from its launch flags, read by the same rows as a pod's launch:
// vLLM with tensor parallelism 8 and its multimodal cache in /dev/shm is 6200Mi of its own and
// 40Ki of ring-buffer flags and page rounding (docs/sources.md §10), plus NCCL for 8 ranks and
// the base, × 1.2.
TEST_CASE("RunPlan sizes an inference server from its launch flags", "[plan_command]") {
  PlanOptions o;
  o.server = "vllm";
  o.server_args = {"--tp", "8", "--mm-processor-cache-shm"};
  o.output = "json";
  std::ostringstream out, err;
  CHECK(RunPlan(o, Policy{}, out, err) == ExitCode::kOk);
  INFO(err.str());
  json j = json::parse(out.str());
  // 160Mi + 8 × 240Mi + 24Mi + 4Gi, and a page of flags for each of the 11 segments.
  CHECK(j["terms"]["server_bytes"] == (6200ll << 20) + 11 * 4096);
  CHECK(j["required"] == "7870Mi");
  CHECK(j["findings"][0]["message"].get<std::string>().find("4Gi multimodal processor cache") != std::string::npos);
  CHECK(j["findings"][0]["message"].get<std::string>().find("8 procs from vLLM") != std::string::npos);

  // The flags of the launches the plan arithmetic reads, spelled as the servers spell them.
  const struct {
    const char* server;
    std::vector<std::string> args;
    int64_t server_bytes;
  } flags[] = {
      // vLLM's tensor arena: 8 × 256Mi on the executor's queue.
      {"vllm",
       {"-tp", "8", "--mm-processor-cache-type", "shm", "--enable-shm-tensor-arena"},
       ((6200ll + 2048) << 20) + 12 * 4096},
      // SGLang's attention groups: a TP group of 8 split into 2 attention CP ranks gives 2
      // attention-TP groups and 4 attention-CP groups, each with a 24Mi broadcaster.
      {"sglang", {"--tp", "8", "--attn-cp-size", "2"}, 7 * ((24ll << 20) + 4096)},
      // Data parallelism 8 at TP 1: 8 engines, each with its 160Mi queue and 240Mi response queue.
      {"vllm", {"--data-parallel-size", "8"}, 8 * ((400ll << 20) + 2 * 4096)},
      // -tp 4 -pcp 2: one engine of 8 workers and 2 TP groups.
      {"vllm", {"-tp", "4", "--prefill-context-parallel-size", "2"}, ((160ll + 8 * 240 + 2 * 24) << 20) + 11 * 4096},
      // The Ray executor makes the mp executor's queues.
      {"vllm", {"-tp", "8", "--distributed-executor-backend", "ray"}, ((160ll + 8 * 240 + 24) << 20) + 10 * 4096},
      // TGI with --sharded false runs one shard: nothing of its own.
      {"tgi", {"--sharded", "false"}, 0},
  };
  for (const auto& f : flags) {
    CAPTURE(f.server, f.args);
    PlanOptions with;
    with.server = f.server;
    with.server_args = f.args;
    with.output = "json";
    std::ostringstream flag_out, flag_err;
    CHECK(RunPlan(with, Policy{}, flag_out, flag_err) == ExitCode::kOk);
    INFO(flag_err.str());
    CHECK(json::parse(flag_out.str())["terms"]["server_bytes"] == f.server_bytes);
  }
  PlanOptions zero;
  zero.server = "sglang";
  zero.server_args = {"--dcp-size", "0"};
  std::ostringstream zero_out, zero_err;
  CHECK(RunPlan(zero, Policy{}, zero_out, zero_err) == ExitCode::kUsage);
  CHECK_THAT(zero_err.str(), Catch::Contains("--dcp-size"));

  PlanOptions unknown;
  unknown.server = "vllm";
  unknown.server_args = {"--tensor-parallel-sise", "8"};
  std::ostringstream unknown_out, unknown_err;
  CHECK(RunPlan(unknown, Policy{}, unknown_out, unknown_err) == ExitCode::kUsage);
  CHECK_THAT(unknown_err.str(), Catch::Contains("--tensor-parallel-sise: is not a flag shmguard reads for vLLM"));

  // A store near 2^63 bytes is refused with the reason, never summed into a wrapped number.
  PlanOptions huge;
  huge.server = "ray";
  huge.object_store = "9000000000000000000";
  std::ostringstream huge_out, huge_err;
  CHECK(RunPlan(huge, Policy{}, huge_out, huge_err) == ExitCode::kUsage);
  CHECK(huge_out.str().find("verdict ok") == std::string::npos);
  CHECK_THAT(huge_err.str(), Catch::Contains("2^63-1"));

  o.server = "nginx";
  std::ostringstream out2, err2;
  CHECK(RunPlan(o, Policy{}, out2, err2) == ExitCode::kUsage);
  CHECK(err2.str().find("--server: \"nginx\" is not one of vllm, sglang, tgi, triton, ray") != std::string::npos);
}

}  // namespace
}  // namespace shmguard::cli
