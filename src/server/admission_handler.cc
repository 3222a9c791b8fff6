// HandleAdmission: HTTP-level checks, ParseReview, Decide, and the AdmissionReview response.
#include "server/admission_handler.h"

#include <array>
#include <bit>
#include <cstdint>
#include <cstring>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/values/compact_json.h"
#include "io/formats/fast_json.h"
#include "server/admission_words.h"

namespace shmguard::server {
namespace {

using nlohmann::json;

// The AdmissionReview response, as controller-runtime's admission.Response builds it: one
// answer through named constructors — Allowed, Denied (a status code and message), Errored (no
// uid: the request could not be read) — and the parts an answer may carry, Patched and
// WithWarnings. Written directly: the base64 patch goes in as it is rather than through the JSON
// string escaper, which was a tenth of a JobSet's decision.
class Response {
 public:
  static Response Allowed(std::string_view uid) { return Response(uid, true); }
  static Response Denied(std::string_view uid, int code, std::string_view message) {
    Response r(uid, false);
    r.code_ = code;
    r.message_ = message;
    r.reason_ = "Forbidden";
    return r;
  }
  static Response Errored(int code, std::string_view message) {
    Response r("", false);
    r.code_ = code;
    r.message_ = message;
    return r;
  }
  // The RFC 6902 patch, base64 ([A-Za-z0-9+/=]); empty: none.
  Response& Patched(std::string patch_base64) {
    patch_ = std::move(patch_base64);
    return *this;
  }
  Response& WithWarnings(std::vector<std::string> warnings) {
    warnings_ = std::move(warnings);
    return *this;
  }
  std::string Json() const {
    std::string out = R"({"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","response":{"uid":)";
    out += JsonQuoted(uid_);
    out += allowed_ ? R"(,"allowed":true)" : R"(,"allowed":false)";
    if (!patch_.empty()) {
      out += R"(,"patchType":"JSONPatch","patch":")";
      out += patch_;  // nothing to escape
      out += '"';
    }
    if (!warnings_.empty()) {
      out += R"(,"warnings":[)";
      for (size_t i = 0; i < warnings_.size(); ++i) {
        if (i) out += ',';
        out += JsonQuoted(warnings_[i]);
      }
      out += ']';
    }
    if (code_ != 0) {
      out += R"(,"status":{"code":)" + std::to_string(code_) + R"(,"message":)" + JsonQuoted(message_);
      if (!reason_.empty()) out += R"(,"reason":")" + reason_ + '"';
      out += '}';
    }
    out += "}}";
    return out;
  }

 private:
  Response(std::string_view uid, bool allowed) : uid_(uid), allowed_(allowed) {}
  std::string uid_;
  bool allowed_;
  std::string patch_;
  std::vector<std::string> warnings_;
  int code_ = 0;
  std::string message_, reason_;
};

void Fail(AdmissionExchange& x, int status, std::string message) {
  x.status = status;
  x.outcome = Outcome::kError;
  x.body = ErrorReview(status, message);
  x.error = std::move(message);
}

bool IsJsonContentType(std::string_view ct) {
  size_t semi = ct.find(';');
  std::string_view media = ct.substr(0, semi);
  while (!media.empty() && media.back() == ' ') media.remove_suffix(1);
  std::string lower(media);
  for (auto& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return lower == "application/json";
}

// The review's request, read in place (io::ParseJsonView: valid until this thread's next parse),
// or the one error that says why the body is not an AdmissionReview.
Result<AdmissionRequest> DecodeReview(std::string_view body, bool padded) {
  auto review = io::ParseJsonView(body, padded);  // read in place: no tree is built
  if (!review) return MakeError(Code::kInvalidInput, "request body is " + review.error().message);
  auto request = ParseReview(*review);
  if (!request) return MakeError(Code::kInvalidInput, "malformed AdmissionReview: " + request.error().ToString());
  return request;
}

}  // namespace

const char* OutcomeName(Outcome o) {
  switch (o) {
    case Outcome::kAllowed: return "allowed";
    case Outcome::kPatched: return "patched";
    case Outcome::kDenied: return "denied";
    case Outcome::kError: return "error";
  }
  return "error";
}

std::string ErrorReview(int status, std::string_view message) { return Response::Errored(status, message).Json(); }

// RFC 4648 base64, twelve bits at a time from a table of character pairs. OpenSSL's
// EVP_EncodeBlock encodes in constant time, at ~10 instructions a byte: 7 % of a JobSet's
// request for a patch that is not secret.
constexpr auto kBase64Pairs = [] {
  constexpr std::string_view kAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::array<char, 2 * 4096> t{};
  for (size_t i = 0; i < 4096; ++i) {
    t[2 * i] = kAlphabet[i >> 6];
    t[2 * i + 1] = kAlphabet[i & 63];
  }
  return t;
}();

std::string Base64(std::string_view bytes) {
  std::string out(4 * ((bytes.size() + 2) / 3), '\0');
  const auto* in = reinterpret_cast<const unsigned char*>(bytes.data());
  char* to = out.data();
  size_t i = 0;
  for (; i + 8 <= bytes.size(); i += 6, to += 8) {  // six bytes from one big-endian load
    uint64_t v;
    std::memcpy(&v, in + i, sizeof v);
    if constexpr (std::endian::native == std::endian::little) v = __builtin_bswap64(v);
    v >>= 16;
    std::memcpy(to, &kBase64Pairs[2 * (v >> 36)], 2);
    std::memcpy(to + 2, &kBase64Pairs[2 * ((v >> 24) & 0xFFF)], 2);
    std::memcpy(to + 4, &kBase64Pairs[2 * ((v >> 12) & 0xFFF)], 2);
    std::memcpy(to + 6, &kBase64Pairs[2 * (v & 0xFFF)], 2);
  }
  for (; i + 3 <= bytes.size(); i += 3, to += 4) {
    const uint32_t v = uint32_t{in[i]} << 16 | uint32_t{in[i + 1]} << 8 | in[i + 2];
    std::memcpy(to, &kBase64Pairs[2 * (v >> 12)], 2);
    std::memcpy(to + 2, &kBase64Pairs[2 * (v & 0xFFF)], 2);
  }
  if (const size_t rest = bytes.size() - i; rest > 0) {
    const uint32_t v = uint32_t{in[i]} << 16 | (rest == 2 ? uint32_t{in[i + 1]} << 8 : 0);
    std::memcpy(to, &kBase64Pairs[2 * (v >> 12)], 2);
    to[2] = rest == 2 ? kBase64Pairs[2 * (v & 0xFFF)] : '=';
    to[3] = '=';
  }
  return out;
}

std::optional<AdmissionRoute> MatchAdmissionRoute(std::string_view path, std::string_view target) {
  AdmissionRoute route;
  std::string_view rest;
  if (path.rfind("/mutate", 0) == 0) {
    route.face = Face::kMutate;
    rest = path.substr(7);
  } else if (path.rfind("/validate", 0) == 0) {
    route.face = Face::kValidate;
    rest = path.substr(9);
  } else {
    return std::nullopt;
  }
  if (route.face == Face::kValidate && (rest == "/enforce" || rest.rfind("/enforce/", 0) == 0)) {
    route.enforce = true;
    rest.remove_prefix(8);
  }
  std::optional<std::string_view> level;
  constexpr std::string_view kLevelPath = "/pod-security/";
  if (rest.rfind(kLevelPath, 0) == 0) {
    level = rest.substr(kLevelPath.size());
  } else if (!rest.empty()) {
    return std::nullopt;
  }
  // The first podSecurity=... of the query ("?timeout=10s&podSecurity=baseline").
  size_t q = target.find('?');
  std::string_view query = q == std::string_view::npos ? std::string_view() : target.substr(q + 1);
  while (!query.empty() && !level) {
    size_t amp = query.find('&');
    std::string_view param = query.substr(0, amp);
    if (param.rfind("podSecurity=", 0) == 0) level = param.substr(12);
    query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
  }
  if (level) {
    auto parsed = ParsePodSecurityLevel(*level);
    if (parsed) {
      route.pod_security = *parsed;
    } else {
      route.error = "unknown Pod Security level \"" + std::string(*level) +
                    "\": the route takes privileged, baseline or restricted";
    }
  }
  return route;
}

std::optional<AdmissionExchange> CheckAdmissionRequest(const AdmissionRoute& route, std::string_view content_type,
                                                       std::string_view body) {
  AdmissionExchange x;
  if (!route.error.empty()) {
    Fail(x, 400, route.error);
  } else if (!IsJsonContentType(content_type)) {
    Fail(x, 415, "Content-Type must be application/json, got \"" + std::string(content_type) + "\"");
  } else if (body.empty()) {
    Fail(x, 400, "empty request body: expected an admission.k8s.io/v1 AdmissionReview");
  } else {
    return std::nullopt;
  }
  return x;
}

AdmissionExchange HandleAdmission(const ReviewBody& body, const AdmissionRoute& route,
                                  const AdmissionContext& context) {
  AdmissionExchange x;
  auto request = DecodeReview(body.text, body.padded);
  if (!request) {
    Fail(x, 400, request.error().message);
    return x;
  }
  x.uid = request->uid;
  x.kind = request->kind;
  x.namespace_name = request->namespace_name;
  x.operation = request->operation;
  x.dry_run = request->dry_run;
  Decision d = Decide(*request, {context.policy, route.face, NamespaceLabels{route.pod_security, route.enforce},
                                 context.observations, context.claims, context.budget, context.config_maps});
  x.name = !d.name.empty() ? d.name : request->name;
  x.verdict = d.verdict;
  x.required_bytes = d.required_bytes;
  std::string patch = d.patch.empty() ? "" : Base64(d.patch.Text());
  x.outcome = !d.allowed ? Outcome::kDenied : d.patch.empty() ? Outcome::kAllowed : Outcome::kPatched;
  x.status = 200;
  if (!d.allowed) {
    const std::string message =
        DenialMessage(d, request->kind, request->namespace_name, request->name.empty() ? d.name : request->name);
    x.body = Response::Denied(request->uid, d.code, message).Patched(std::move(patch)).Json();
    return x;
  }
  std::vector<std::string> warnings = DecisionWarnings(d);
  x.warnings = warnings.size();
  x.body = Response::Allowed(request->uid).Patched(std::move(patch)).WithWarnings(std::move(warnings)).Json();
  return x;
}

}  // namespace shmguard::server
