// ParseReview, Decide and FixedByPatch.
#include "core/verdict/admission.h"

#include <iterator>
#include <optional>
#include <string_view>

#include "core/patch/policy_floor.h"
#include "core/verdict/resize.h"
#include "core/workloads/compose.h"
#include "core/workloads/pod_templates.h"

namespace shmguard {
namespace {

Result<std::string> OptionalString(JsonNode obj, const char* key, const std::string& where) {
  JsonNode v = obj.Find(key);
  if (!v) return std::string();
  if (!v.IsString()) return MakeError(Code::kInvalidInput, "must be a string", Location::Pointer(where + "/" + key));
  return std::string(v.String());
}

}  // namespace

Result<AdmissionRequest> ParseReview(JsonNode review) {
  if (!review.IsObject())
    return MakeError(Code::kInvalidInput, "an AdmissionReview must be a JSON object", Location::Pointer("/"));
  auto api = OptionalString(review, "apiVersion", "");
  if (!api) return api.error();
  if (*api != "admission.k8s.io/v1") {
    return MakeError(Code::kInvalidInput,
                     "apiVersion \"" + *api +
                         "\" is not supported: send admission.k8s.io/v1 "
                         "(admissionReviewVersions: [v1])",
                     Location::Pointer("/apiVersion"));
  }
  auto kind = OptionalString(review, "kind", "");
  if (!kind) return kind.error();
  if (*kind != "AdmissionReview") {
    return MakeError(Code::kInvalidInput, "kind must be AdmissionReview", Location::Pointer("/kind"));
  }
  JsonNode req = review.Find("request");
  if (!req.IsObject()) return MakeError(Code::kInvalidInput, "must be an object", Location::Pointer("/request"));
  AdmissionRequest r;
  auto uid = OptionalString(req, "uid", "/request");
  if (!uid) return uid.error();
  if (uid->empty()) return MakeError(Code::kInvalidInput, "is required", Location::Pointer("/request/uid"));
  r.uid = *uid;
  if (JsonNode k = req.Find("kind")) {
    if (!k.IsObject()) return MakeError(Code::kInvalidInput, "must be an object", Location::Pointer("/request/kind"));
    for (auto [field, out] :
         {std::pair{"group", &r.group}, std::pair{"version", &r.version}, std::pair{"kind", &r.kind}}) {
      auto v = OptionalString(k, field, "/request/kind");
      if (!v) return v.error();
      *out = *v;
    }
  }
  for (auto [field, out] : {std::pair{"namespace", &r.namespace_name}, std::pair{"name", &r.name},
                            std::pair{"operation", &r.operation}, std::pair{"subResource", &r.sub_resource}}) {
    auto v = OptionalString(req, field, "/request");
    if (!v) return v.error();
    *out = *v;
  }
  if (JsonNode dry = req.Find("dryRun")) {
    if (!dry.IsBool()) return MakeError(Code::kInvalidInput, "must be a boolean", Location::Pointer("/request/dryRun"));
    r.dry_run = dry.Bool();
  }
  r.object = req.Find("object");
  r.old_object = req.Find("oldObject");
  if (r.operation == "CREATE" && !r.object.IsObject()) {
    return MakeError(Code::kInvalidInput, "must be an object for CREATE", Location::Pointer("/request/object"));
  }
  return r;
}

bool FixedByPatch(const Finding& f) {
  switch (f.check) {
    case Check::kShmBelowNeed: return f.severity != Severity::kError;  // an error: a kind shmguard does not patch
    case Check::kIpcLockMissing:
    case Check::kHostIpcMissing:
    case Check::kComposeShmDefault: return true;
    default: return false;
  }
}

namespace {

// Hybrid mode: a pod the exported policy gave its floor is evaluated as its author wrote it.
// When the webhook would patch that, or leave it as it is, its answer takes the floor's place;
// when it would deny it, skip it or could not finish, the floor stands.
Evaluation EvaluateAdmitted(const AdmissionRequest& request, const Policy& policy, const EvaluateOptions& options,
                            Face face) {
  std::optional<nlohmann::json> undone;
  if (face == Face::kMutate && request.kind == "Pod") {
    if (auto floor = ReadPolicyFloor(request.object)) undone = UndoPolicyFloor(request.object, *floor);
  }
  if (!undone) return Evaluate(request.object, policy, options);
  Evaluation ev = Evaluate(JsonNode(*undone), policy, options);
  std::optional<nlohmann::json> planned;
  if (ev.verdict == Verdict::kPatch || ev.verdict == Verdict::kOk) {
    try {
      planned = undone->patch(ev.patch.ToJson());
    } catch (const nlohmann::json::exception&) {  // a patch of the pod always applies to it
    }
  }
  if (!planned) return Evaluate(request.object, policy, options);  // the floor stands
  ev.patch = DiffPatch(request.object.Copy(), *planned);
  if (!ev.patch.empty()) ev.verdict = Verdict::kPatch;
  return ev;
}

// What is wrong: errors, and (on /validate, which sees the object after mutation) what a patch
// should have fixed; then what only warrants a warning. Moved out of `ev`.
struct Sorted {
  std::vector<Finding> problems, warnings;
};

Sorted SortFindings(Evaluation& ev, Face face) {
  Sorted out;
  auto sort = [&](Finding& f, Verdict pod_verdict) {
    if (f.suppressed) return;
    // A denial cites the arithmetic it refuses.
    if (f.check == Check::kShmPlan && pod_verdict == Verdict::kDeny) return out.problems.push_back(std::move(f));
    if (f.severity == Severity::kInfo) return;
    if (f.severity == Severity::kError) return out.problems.push_back(std::move(f));
    const bool patched_part =
        pod_verdict == Verdict::kPatch && (FixedByPatch(f) || f.check == Check::kSizedWithoutAnnotations);
    if (face == Face::kValidate && patched_part) return out.problems.push_back(std::move(f));
    if (face == Face::kMutate && pod_verdict == Verdict::kPatch && FixedByPatch(f)) return;  // the patch fixes it
    out.warnings.push_back(std::move(f));
  };
  for (auto& f : ev.findings) sort(f, ev.verdict);
  for (auto& p : ev.pods) {
    for (auto& f : p.findings) sort(f, p.verdict);
  }
  return out;
}

// What `d` says of the sorted findings: /validate in an enforcing namespace denies with the
// problems; every other answer allows, with all of them as warnings.
Decision Answer(Decision d, Sorted sorted, Face face, bool enforce) {
  if (face == Face::kValidate && enforce && !sorted.problems.empty()) {
    d.allowed = false;
    d.code = 403;
    d.findings = std::move(sorted.problems);
    return d;
  }
  d.findings = std::move(sorted.problems);
  d.findings.insert(d.findings.end(), std::make_move_iterator(sorted.warnings.begin()),
                    std::make_move_iterator(sorted.warnings.end()));
  return d;
}

// A resize, on /validate: denied in enforce namespaces when it leaves the memory limit too small
// for the pod's /dev/shm, warned elsewhere.
Decision DecideResize(const AdmissionRequest& request, const DecideContext& context) {
  Decision d;
  if (!request.object.IsObject()) return d;
  const EvaluateOptions options{.namespace_name = request.namespace_name};
  Evaluation ev = EvaluateResize(request.old_object, request.object, context.policy, options);
  d.verdict = ev.verdict;
  d.name = request.name;
  if (ev.verdict == Verdict::kSkip) return d;
  const bool enforce = ev.rule.mode == NamespaceMode::kEnforce || context.labels.enforce;
  return Answer(std::move(d), SortFindings(ev, Face::kValidate), Face::kValidate, enforce);
}

}  // namespace

Decision Decide(const AdmissionRequest& request, const DecideContext& context) {
  const Face face = context.face;
  const NamespaceLabels& labels = context.labels;
  Decision d;
  if (request.operation == "UPDATE" && request.sub_resource == "resize" && request.group.empty() &&
      request.kind == "Pod") {
    return face == Face::kValidate ? DecideResize(request, context) : d;
  }
  if (request.operation != "CREATE") return d;  // pod fields are immutable after creation
  std::string api_version = request.group.empty() ? request.version : request.group + "/" + request.version;
  // Kinds the webhook does not evaluate are allowed untouched; the KubeRay kinds are evaluated
  // but their templates never produce a patch (PodTemplate::patchable).
  if (AdmissionRoleOf(api_version, request.kind) == AdmissionRole::kNone) return d;
  // Only Kubernetes objects are admitted: a body shaped like a Compose file is left alone.
  if (IsComposeDocument(request.object)) return d;

  // A /mutate answer carries warnings and denials only: info findings are not recorded.
  const EvaluateOptions options{.namespace_name = request.namespace_name,
                                .detail = face == Face::kMutate ? Detail::kProblems : Detail::kAll,
                                .namespace_pod_security = labels.pod_security,
                                .observations = context.observations,
                                .claims = context.claims,
                                .config_maps = context.config_maps,
                                .budget = context.budget};
  Evaluation ev = EvaluateAdmitted(request, context.policy, options, face);
  d.verdict = ev.verdict;
  d.required_bytes = ev.RequiredBytes();
  d.name = ev.name;
  d.prefix_pods = ev.pods.size() > 1;
  if (ev.verdict == Verdict::kSkip) return d;
  const bool enforce = ev.rule.mode == NamespaceMode::kEnforce || labels.enforce;
  Sorted sorted = SortFindings(ev, face);
  if (face == Face::kMutate && ev.verdict == Verdict::kPatch) d.patch = std::move(ev.patch);
  return Answer(std::move(d), std::move(sorted), face, enforce);
}

}  // namespace shmguard
