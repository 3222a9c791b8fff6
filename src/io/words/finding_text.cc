// The words of findings as the edges print them (each check's own are in its catalogue row), and
// the plan's arithmetic (ExplainPlan).
#include "io/words/finding_text.h"

#include "core/values/human_units.h"
#include "core/values/quantity.h"

namespace shmguard::io {

std::string FindingText(const Finding& f) { return InfoOf(f.check).words(f); }

std::string FindingLine(const Finding& f, bool prefix_pod) {
  return prefix_pod && !f.pod.empty() ? f.pod + ": " + FindingText(f) : FindingText(f);
}

std::vector<std::string> FindingLines(const Evaluation& ev, Severity min) {
  std::vector<std::string> out;
  const bool prefix = ev.pods.size() > 1;
  for (const Finding& f : ev.AllFindings()) {
    if (!f.suppressed && f.severity >= min) out.push_back(FindingLine(f, prefix));
  }
  return out;
}

std::vector<std::string> ExplainPlan(const ShmPlan& p, const SizingConstants& k, std::string_view server_terms) {
  const ShmInputs& in = p.inputs;
  const int64_t n = in.procs;
  std::vector<std::string> lines;
  if (in.workers > 0) {
    lines.push_back("DataLoader: " + Plural(n, "proc") + " × (" + Plural(in.workers, "worker") + " × " +
                    std::to_string(in.prefetch_factor) + " prefetch + " + std::to_string(k.in_flight_extra) + ") × " +
                    HumanBytes(in.batch_bytes) + " = " + HumanBytes(p.dataloader_bytes));
  } else if (server_terms.empty()) {
    lines.push_back("DataLoader: 0 workers, batches stay in the training process = 0");
  }
  if (n >= 2 && !in.nccl_shm) {
    lines.push_back("NCCL shm transport: off (NCCL_SHM_DISABLE=1) = 0");
  } else if (n >= 2) {
    int64_t peers = n == 2 ? 1 : 2;  // NCCL's shm transport: ring neighbours
    lines.push_back("NCCL shm transport: " + Plural(n, "proc") + " × 2 channels × " + Plural(peers, "peer") + " × " +
                    std::to_string(k.nccl_connection_bytes) + " B = " + HumanBytes(p.nccl_shm_bytes));
  }
  if (in.nodes > 1) {
    lines.push_back("NCCL proxy pool (multi-node, " + Plural(in.nodes, "pod") + "): " + Plural(n, "proc") + " × " +
                    std::to_string(k.nccl_proxy_pool_bytes) + " B = " + HumanBytes(p.nccl_proxy_bytes));
  }
  if (p.server_bytes > 0) {
    lines.push_back("server: " + (server_terms.empty() ? std::string("its segments") : std::string(server_terms)) +
                    " = " + HumanBytes(p.server_bytes));
  }
  lines.push_back("base: " + HumanBytes(p.base_bytes));
  const int64_t sum = p.dataloader_bytes + p.nccl_shm_bytes + p.nccl_proxy_bytes + p.server_bytes + p.base_bytes;
  lines.push_back("sum " + HumanBytes(sum) + " × " + FormatPpm(k.safety_ppm) +
                  " safety, rounded up to MiB = " + FormatBytes(p.safe_bytes));
  if (p.floor_applied) {
    lines.push_back("floor for " + Plural(n, "proc") +
                    " per pod (NVIDIA's 1g advice): " + FormatBytes(p.required_bytes));
  }
  return lines;
}

}  // namespace shmguard::io
