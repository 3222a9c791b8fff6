// The checks' shared words and those that take more than an expression.
#include "core/checks/internal/check_words.h"

#include "core/values/human_units.h"
#include "core/values/quantity.h"

namespace shmguard::checks {

using F = Finding;

std::string Bytes(const F& f, std::string_view name) { return FormatBytes(f.Number(name)); }

// "a TrainJob", "an InferenceService": a kind with its article.
std::string AKind(const F& f) {
  const std::string kind = f.Value("kind");
  return (kind.find_first_of("AEIOU") == 0 ? "an " : "a ") + kind;
}

// "the 1Gi floor (NCCL shm and base for 2 procs = 1Gi, at least the 1Gi minimum)".
std::string Floor(const F& f) {
  std::string what = f.Number("nccl_shm") ? "NCCL shm" : "";
  if (f.Number("nccl_proxy")) what += std::string(what.empty() ? "" : ", ") + "NCCL proxy";
  what += std::string(what.empty() ? "" : " and ") + "base";
  return "the " + Bytes(f, "floor_bytes") + " floor (" + what + " for " + Plural(f.Number("procs"), "proc") + " = " +
         Bytes(f, "floor_plan_bytes") + ", at least the " + Bytes(f, "minimum_bytes") + " minimum)";
}

std::string PlanWords(const F& f) {
  const int64_t n = f.Number("procs");
  std::string terms;
  auto term = [&](int64_t bytes, const std::string& text) {
    if (bytes == 0) return;
    terms += (terms.empty() ? "" : " + ") + text;
  };
  if (f.Number("workers") > 0) {
    term(f.Number("dataloader_bytes"), Plural(n, "proc") + " × (" + Plural(f.Number("workers"), "worker") + " × " +
                                           std::to_string(f.Number("prefetch_factor")) + " + " +
                                           std::to_string(f.Number("in_flight_extra")) + ") × " +
                                           HumanBytes(f.Number("batch_bytes")));
  }
  term(f.Number("server_bytes"),
       f.Value("server_terms").empty() ? HumanBytes(f.Number("server_bytes")) + " server" : f.Value("server_terms"));
  term(f.Number("nccl_bytes"), HumanBytes(f.Number("nccl_bytes")) + " NCCL");
  term(f.Number("base_bytes"), HumanBytes(f.Number("base_bytes")) + " base");
  return f.Value("volume") + " needs " + Bytes(f, "required_bytes") + " = (" + terms + ") × " +
         FormatPpm(f.Number("safety_ppm")) +
         (f.Number("floor_applied") ? ", raised to the " + Bytes(f, "required_bytes") + " floor for multi-GPU pods"
                                    : std::string()) +
         " (" + Plural(n, "proc") + " from " + f.Value("procs_source") + ")";
}

std::string ObservedWords(const F& f) {
  const std::string source =
      " (" + f.Value("workload") + ", " + Plural(f.Number("runs"), "run") + ", last " + f.Value("last_observed") + ")";
  const std::string peak =
      "the observed peak " + HumanBytes(f.Number("peak_bytes")) + " × " + FormatPpm(f.Number("margin_ppm"));
  if (f.Number("formula_bytes") > f.Number("learned_bytes")) {
    return "sized from use: " + peak + " = " + Bytes(f, "learned_bytes") + source + "; the formula's " +
           Bytes(f, "formula_bytes") + " is larger and stays";
  }
  return "sized from use: " + Bytes(f, "required_bytes") + " = " + peak + source;
}

std::string OverMemoryLimitWords(const F& f) {
  const bool floor = f.Number("floor") != 0;
  const std::string what = floor ? "floor of a GPU pod" : f.Value("volume") + " needs";
  const std::string remedy = floor ? "raise the memory limit"
                             : f.Number("server")
                                 ? "raise the limit or change the server's flags that size its segments"
                                 : "raise the limit or lower num-workers/prefetch-factor/batch size";
  const std::string limit = Bytes(f, "memory_limit_bytes");
  std::string out = floor ? "no DataLoader annotations; /dev/shm needs at least " + Floor(f) + "; " : "";
  if (!f.HasNumber("max_fraction_ppm")) {
    return out + "memory limit " + limit + " (" + f.Value("limit_source") + ") is below the " +
           Bytes(f, "required_bytes") + " " + what + ": " + remedy;
  }
  return out + what + " " + Bytes(f, "required_bytes") + " is more than " + FormatPpm(f.Number("max_fraction_ppm")) +
         " of the memory limit " + limit + ", leaving " + HumanBytes(f.Number("left_bytes")) +
         " for the processes: " + remedy;
}

std::string BelowNeedWords(const F& f) {
  const std::string current = f.Value("current"), needed = Bytes(f, "required_bytes");
  if (f.Number("unpatched")) {
    std::string fix = f.Number("operator_shm")
                          ? "raise the Ray container's memory limit (KubeRay sizes /dev/shm to it) "
                            "or mount an emptyDir {medium: Memory} of that size at /dev/shm"
                          : "mount an emptyDir {medium: Memory} of that size at /dev/shm";
    return "/dev/shm is " + current + ", below the " + needed + " needed; shmguard does not patch " + AKind(f) + ": " +
           fix;
  }
  if (!f.Value("containers").empty()) {
    return "/dev/shm is not mounted in " + f.Value("containers") + ": they get the container default 64Mi, below the " +
           needed + " needed";
  }
  if (f.HasNumber("floor_bytes")) return "/dev/shm is " + current + ", below " + Floor(f);
  return "/dev/shm is " + current + ", below the " + needed + " needed";
}

std::string TrainjobWhere(const std::string& api) {
  if (api == "podTemplateOverrides") return "spec.podTemplateOverrides[].metadata.annotations (Trainer v2.1)";
  if (api == "podSpecOverrides")
    return "the runtime's pod templates (Trainer v2.0 has no pod metadata in podSpecOverrides)";
  return "spec.runtimePatches[].trainingRuntimeSpec.template.spec.replicatedJobs[name: node].template.spec."
         "template.metadata.annotations (Trainer v2.2 and later), or the runtime's pod template";
}

std::string ProcsGpusWords(const F& f) {
  const int64_t procs = f.Number("procs"), gpus = f.Number("gpus");
  return Plural(procs, "process", "processes") + " per pod (" + f.Value("procs_source") + ") but " +
         Plural(gpus, "GPU") + ": " +
         (procs < gpus ? Plural(gpus - procs, "GPU") + (gpus - procs == 1 ? " stays idle" : " stay idle")
                       : "several processes share a GPU");
}

}  // namespace shmguard::checks
