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

#include "shmguard/admission.h"
#include "shmguard/policy.h"

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
// nullopt for any other path.
struct AdmissionRoute {
  AdmissionRoute(Face f = Face::kMutate, bool e = false, std::optional<std::string_view> level = std::nullopt)
      : face(f), enforce(e), pod_security(level) {}
  Face face;
  bool enforce;
  std::optional<std::string_view> pod_security;  // as given, checked by HandleAdmission
};
std::optional<AdmissionRoute> MatchAdmissionRoute(std::string_view path, std::string_view target);

// `route.pod_security`: anything but privileged, baseline or restricted is a 400.
// `observations`: the ShmProfiles the webhook keeps from its watch (Decide); nullptr: none.
AdmissionExchange HandleAdmission(std::string_view body, std::string_view content_type, const Policy& policy,
                                  const AdmissionRoute& route, bool body_padded = false,
                                  const ObservationIndex* observations = nullptr, const ClaimIndex* claims = nullptr);

// The AdmissionReview every error answer carries, so the API server can show why: allowed
// false, status.code and status.message.
std::string ErrorReview(int status, std::string_view message);

// Standard base64 (RFC 4648 §4), from a table of character pairs (checked against OpenSSL's
// EVP_EncodeBlock in the tests).
std::string Base64(std::string_view bytes);

}  // namespace shmguard::server
