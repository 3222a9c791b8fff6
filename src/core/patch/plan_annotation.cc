// PlanAnnotation: the shmguard.io/plan annotation from SizePod's numbers; PlannedShmBytes reads it back.
#include "core/patch/plan_annotation.h"

#include <nlohmann/json.hpp>

#include "core/values/compact_json.h"
#include "core/values/quantity.h"
#include "core/workloads/pod_templates.h"

namespace shmguard {
namespace {

// The "observed" member, leading comma included; it sorts between "nodes" and the keys after it.
std::string ObservedMember(const ObservedShm* o) {
  if (!o) return {};
  return R"(,"observed":{"last":)" + JsonQuoted(o->last_observed) + R"(,"peak":")" + FormatBytes(o->peak_bytes) +
         R"(","runs":)" + std::to_string(o->runs) + R"(,"workload":)" + JsonQuoted(o->workload) + "}";
}

}  // namespace

std::string PlanAnnotation(const PlanNote& n) {
  if (n.kind == SizingKind::kNone) return "{}";
  std::string out;
  out.reserve(160);
  // The members that sort before "gpus", then the pod's, then those after "procs" and "required".
  if (n.kind == SizingKind::kPlan) out.append(R"({"batchBytes":")").append(FormatBytes(n.batch_bytes)).append("\",");
  if (n.kind == SizingKind::kEstimate) {
    out.append(R"({"estimated":)").append(JsonQuoted(n.estimated));
    out.append(R"(,"floor":")").append(FormatBytes(n.floor_bytes)).append("\",");
  }
  if (n.kind == SizingKind::kServer) out.append("{");
  out.append(R"("gpus":)").append(std::to_string(n.gpus)).append(R"(,"nodes":)").append(std::to_string(n.nodes));
  out.append(ObservedMember(n.observed)).append(",");
  if (n.kind == SizingKind::kPlan)
    out.append(R"("prefetchFactor":)").append(std::to_string(n.prefetch_factor)).append(",");
  out.append(R"("procs":)").append(std::to_string(n.procs));
  out.append(R"(,"required":")").append(FormatBytes(n.required_bytes)).append("\"");
  if (n.kind == SizingKind::kPlan) out.append(R"(,"workers":)").append(std::to_string(n.workers));
  if (n.kind == SizingKind::kServer) {
    out.append(R"(,"server":")").append(ServerName(n.server));
    out.append(R"(","serverBytes":")").append(FormatBytes(n.server_bytes)).append("\"");
  }
  return out.append("}");
}

std::optional<int64_t> PlannedShmBytes(JsonNode pod) {
  JsonNode plan = pod.Find("metadata").Find("annotations").Find(kPlanAnnotation);
  if (!plan.IsString()) return std::nullopt;
  const nlohmann::json p = nlohmann::json::parse(plan.String(), nullptr, /*allow_exceptions=*/false);
  if (!p.is_object()) return std::nullopt;
  auto required = p.find("required");
  if (required == p.end() || !required->is_string()) return std::nullopt;
  auto bytes = ParseBytes(required->get<std::string>(), "required");
  if (!bytes || *bytes <= 0) return std::nullopt;
  return *bytes;
}

}  // namespace shmguard
