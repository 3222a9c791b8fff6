// One admission HTTP exchange without the socket: body and content type in, status and an
// admission.k8s.io/v1 AdmissionReview out (controller-runtime's webhook/admission/http.go is
// the model). Checks the content type (415), empty and malformed bodies and JSON nesting (400).
// The body's size is capped by the transport (413) before the body is read; an exception here
// is a bug, which the server turns into a 500 (WebhookServer::HandleWebhook).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "core/policy/policy.h"
#include "core/verdict/admission.h"

namespace shmguard::server {

// What the webhook answered, for the metrics and the decision log.
enum class Outcome { kAllowed, kPatched, kDenied, kError };
const char* OutcomeName(Outcome o);  // "allowed", "patched", "denied", "error"

struct AdmissionExchange {
  int status = 200;  // 200, or 400/415 with an AdmissionReview explaining why
  std::string body;  // the AdmissionReview response
  // For the decision log and metrics:
  std::string uid, kind, namespace_name, name, operation;
  Outcome outcome = Outcome::kError;
  std::string error;  // why status != 200
  bool dry_run = false;
  Verdict verdict = Verdict::kSkip;
  int64_t required_bytes = 0;
  size_t warnings = 0;
};

// The admission routes: POST /mutate and /validate, with what the webhook configuration knows
// of the namespace from its labels: /validate/enforce for namespaces labelled for enforcement,
// and the Pod Security level as the query parameter podSecurity=LEVEL or the path suffix
// /pod-security/LEVEL — the form a webhook configuration can name, since the API server accepts
// no query in clientConfig.service.path and only DNS-1123 segments in it:
//   /mutate[/pod-security/LEVEL]   /validate[/enforce][/pod-security/LEVEL]
// nullopt for any other path. The level is parsed here: anything but privileged, baseline or
// restricted sets `error`, which the request is answered with (400).
struct AdmissionRoute {
  Face face = Face::kMutate;
  bool enforce = false;
  PodSecurityLevel pod_security = PodSecurityLevel::kPrivileged;
  std::string error;  // "" for a route that may be answered
};
std::optional<AdmissionRoute> MatchAdmissionRoute(std::string_view path, std::string_view target);

// Before the body is read as a review: a route with an error, a content type that is not JSON
// (415) or an empty body (400) is answered at once, with an AdmissionReview saying why; nullopt
// when the request may go on to HandleAdmission.
std::optional<AdmissionExchange> CheckAdmissionRequest(const AdmissionRoute& route, std::string_view content_type,
                                                       std::string_view body);

// The body of a POST as the transport read it; `padded`: simdjson's padding follows it.
struct ReviewBody {
  std::string_view text;
  bool padded = false;
};

// What the answer reads besides the review: the policy, the indexes the webhook keeps from its
// watches (nullptr: none), and the work one review may take (nullptr: no bound).
struct AdmissionContext {
  const Policy& policy;
  const ObservationIndex* observations = nullptr;
  const ClaimIndex* claims = nullptr;
  const WorkBudget* budget = nullptr;
  const ConfigMapIndex* config_maps = nullptr;
};

// The answer to one review: decoded (DecodeReview; a body that is not one is a 400), then
// decided for the route's face and the namespace it describes (Decide).
// REQUIRES: CheckAdmissionRequest(route, ...) gave nullopt.
AdmissionExchange HandleAdmission(const ReviewBody& body, const AdmissionRoute& route, const AdmissionContext& context);

// The AdmissionReview every error answer carries, so the API server can show why: allowed
// false, status.code and status.message.
std::string ErrorReview(int status, std::string_view message);

// Standard base64 (RFC 4648 §4), from a table of character pairs (checked against OpenSSL's
// EVP_EncodeBlock in the tests).
std::string Base64(std::string_view bytes);

}  // namespace shmguard::server
