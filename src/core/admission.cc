// ParseReview, Decide and FitWarnings.
#include "shmguard/admission.h"

#include <set>
#include <string_view>

#include "shmguard/compose.h"
#include "shmguard/pod_templates.h"

namespace shmguard {
namespace {

constexpr size_t kMaxWarningBytes = 120;
constexpr size_t kMaxWarningsTotal = 4000;
constexpr std::string_view kPrefix = "shmguard: ";

Result<std::string> OptionalString(JsonNode obj, const char* key, const std::string& where) {
  JsonNode v = obj.Find(key);
  if (!v) return std::string();
  if (!v.IsString()) return MakeError(Code::kInvalidInput, "must be a string", where + "/" + key);
  return std::string(v.String());
}

// Cuts `s` to at most `n` bytes without splitting a UTF-8 sequence.
size_t Utf8Cut(std::string_view s, size_t n) {
  if (s.size() <= n) return s.size();
  while (n > 0 && (static_cast<unsigned char>(s[n]) & 0xC0) == 0x80) --n;
  return n;
}

}  // namespace

Result<AdmissionRequest> ParseReview(JsonNode review) {
  if (!review.IsObject()) return MakeError(Code::kInvalidInput, "an AdmissionReview must be a JSON object", "/");
  auto api = OptionalString(review, "apiVersion", "");
  if (!api) return api.error();
  if (*api != "admission.k8s.io/v1") {
    return MakeError(Code::kInvalidInput,
                     "apiVersion \"" + *api +
                         "\" is not supported: send admission.k8s.io/v1 "
                         "(admissionReviewVersions: [v1])",
                     "/apiVersion");
  }
  auto kind = OptionalString(review, "kind", "");
  if (!kind) return kind.error();
  if (*kind != "AdmissionReview") {
    return MakeError(Code::kInvalidInput, "kind must be AdmissionReview", "/kind");
  }
  JsonNode req = review.Find("request");
  if (!req.IsObject()) return MakeError(Code::kInvalidInput, "must be an object", "/request");
  AdmissionRequest r;
  auto uid = OptionalString(req, "uid", "/request");
  if (!uid) return uid.error();
  if (uid->empty()) return MakeError(Code::kInvalidInput, "is required", "/request/uid");
  r.uid = *uid;
  if (JsonNode k = req.Find("kind")) {
    if (!k.IsObject()) return MakeError(Code::kInvalidInput, "must be an object", "/request/kind");
    for (auto [field, out] :
         {std::pair{"group", &r.group}, std::pair{"version", &r.version}, std::pair{"kind", &r.kind}}) {
      auto v = OptionalString(k, field, "/request/kind");
      if (!v) return v.error();
      *out = *v;
    }
  }
  for (auto [field, out] :
       {std::pair{"namespace", &r.namespace_name}, std::pair{"name", &r.name}, std::pair{"operation", &r.operation}}) {
    auto v = OptionalString(req, field, "/request");
    if (!v) return v.error();
    *out = *v;
  }
  if (JsonNode dry = req.Find("dryRun")) {
    if (!dry.IsBool()) return MakeError(Code::kInvalidInput, "must be a boolean", "/request/dryRun");
    r.dry_run = dry.Bool();
  }
  r.object = req.Find("object");
  if (r.operation == "CREATE" && !r.object.IsObject()) {
    return MakeError(Code::kInvalidInput, "must be an object for CREATE", "/request/object");
  }
  return r;
}

std::vector<std::string> FitWarnings(const std::vector<std::string>& warnings) {
  std::vector<std::string> pieces;
  for (const auto& w : warnings) {
    std::string_view rest = w;
    if (rest.substr(0, kPrefix.size()) == kPrefix) rest.remove_prefix(kPrefix.size());
    bool first = true;
    while (!rest.empty()) {
      std::string head = first ? std::string(kPrefix) : std::string(kPrefix) + "... ";
      size_t room = kMaxWarningBytes - head.size();
      size_t cut = Utf8Cut(rest, room);
      if (cut < rest.size()) {
        size_t space = rest.substr(0, cut).rfind(' ');
        if (space != std::string_view::npos && space > room / 2) cut = space;
      }
      pieces.push_back(head + std::string(rest.substr(0, cut)));
      rest.remove_prefix(cut);
      while (!rest.empty() && rest.front() == ' ') rest.remove_prefix(1);
      first = false;
    }
  }
  std::vector<std::string> out;
  std::set<std::string> seen;
  size_t total = 0, dropped = 0;
  const size_t reserve = 80;  // room for the closing note
  for (auto& p : pieces) {
    if (!seen.insert(p).second) continue;
    if (total + p.size() > kMaxWarningsTotal - reserve) {
      ++dropped;
      continue;
    }
    total += p.size();
    out.push_back(std::move(p));
  }
  if (dropped > 0) {
    out.push_back(std::string(kPrefix) + std::to_string(dropped) +
                  " more warnings left out; run `shmguard audit` on the manifest for all of them");
  }
  return out;
}

Decision Decide(const AdmissionRequest& request, const Policy& policy, Face face, const NamespaceLabels& labels) {
  Decision d;
  if (request.operation != "CREATE") return d;  // pod fields are immutable after creation
  std::string api_version = request.group.empty() ? request.version : request.group + "/" + request.version;
  // Kinds the webhook does not evaluate are allowed untouched; the KubeRay kinds are evaluated
  // but their templates never produce a patch (PodTemplate::patchable).
  if (AdmissionRoleOf(api_version, request.kind) == AdmissionRole::kNone) return d;
  // Only Kubernetes objects are admitted: a body shaped like a Compose file is left alone.
  if (IsComposeDocument(request.object)) return d;

  // A /mutate answer carries warnings and denials only: the allowed pods' reasons and the
  // patch's descriptions are not put in words.
  Evaluation ev = Evaluate(request.object, policy, request.namespace_name,
                           face == Face::kMutate ? Wording::kDenialsAndWarnings : Wording::kEverything, nullptr,
                           labels.pod_security);
  d.verdict = ev.verdict;
  d.required_bytes = ev.RequiredBytes();
  d.name = ev.name;
  if (ev.verdict == Verdict::kSkip) return d;
  const bool enforce = ev.rule.mode == NamespaceMode::kEnforce || labels.enforce;

  std::vector<std::string> problems;  // what is wrong, for a denial or warnings
  for (const auto& p : ev.pods) {
    std::string prefix = ev.pods.size() > 1 ? p.label + ": " : "";
    if (p.verdict == Verdict::kDeny) {
      for (const auto& r : p.reasons) problems.push_back(prefix + r);
    } else if (p.verdict == Verdict::kPatch && face == Face::kValidate) {
      // An estimated size: first why /dev/shm is too small, with the numbers.
      if (p.estimated && !p.reasons.empty()) problems.push_back(prefix + p.reasons.back());
      for (const auto& c : p.changes) problems.push_back(prefix + "missing: " + c);
    }
  }
  for (const auto& r : ev.reasons) {
    if (ev.verdict == Verdict::kDeny) problems.push_back(r);
  }

  if (face == Face::kMutate) {
    if (ev.verdict == Verdict::kPatch) d.patch = std::move(ev.patch);
    std::vector<std::string> warnings = problems;
    for (const auto& w : ev.AllWarnings()) warnings.push_back(w);
    d.warnings = FitWarnings(warnings);
    return d;
  }
  if (enforce && !problems.empty()) {
    d.allowed = false;
    d.code = 403;
    d.message = "shmguard denied " + request.kind + " " + request.namespace_name + "/" +
                (request.name.empty() ? ev.name : request.name) + ":";
    for (const auto& p : problems) d.message += " " + p + ";";
    d.message.pop_back();
    return d;
  }
  for (const auto& w : ev.warnings) problems.push_back(w);  // the workload's own (TrainJob annotations)
  d.warnings = FitWarnings(problems);
  return d;
}

}  // namespace shmguard
