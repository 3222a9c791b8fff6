// libFuzzer target: the whole admission path, request bytes -> response bytes, both faces.
// Beyond "no crash": a 5xx is a bug, the response must be an AdmissionReview echoing the uid,
// and a returned patch must apply (RFC 6902, nlohmann) to the object that was sent. A body
// parsed where it lies (as the server does, with bytes of the next request behind it) must be
// answered exactly as a copied one. And the decision read off simdjson's tape (the server's
// JsonNode) must be the decision read off nlohmann's tree of the same text.
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "core/verdict/admission.h"
#include "io/formats/fast_json.h"
#include "server/admission_handler.h"

namespace {
std::string DecodeBase64(const std::string& s);

// Both readers of `body`, when both accept it as JSON: the same request and the same decision.
void CheckSameAsTree(std::string_view body, const shmguard::Policy& policy, shmguard::Face face) {
  auto tree = nlohmann::json::parse(body, nullptr, false);
  auto view = shmguard::io::ParseJsonView(body);
  if (tree.is_discarded() || !view) return;  // simdjson is stricter (nesting, huge numbers)
  auto from_tree = shmguard::ParseReview(tree);
  auto from_view = shmguard::ParseReview(*view);
  if (from_tree.has_value() != from_view.has_value()) std::abort();
  if (!from_tree) {
    if (from_tree.error().ToString() != from_view.error().ToString()) std::abort();
    return;
  }
  auto a = shmguard::Decide(*from_tree, {policy, face});
  auto b = shmguard::Decide(*from_view, {policy, face});
  if (a.allowed != b.allowed || a.code != b.code || a.findings != b.findings || a.prefix_pods != b.prefix_pods ||
      !(a.patch == b.patch) || a.verdict != b.verdict || a.required_bytes != b.required_bytes || a.name != b.name) {
    std::abort();
  }
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view body(reinterpret_cast<const char*>(data), size);
  static const shmguard::Policy policy;
  for (auto face : {shmguard::Face::kMutate, shmguard::Face::kValidate}) {
    shmguard::server::AdmissionRoute route;
    route.face = face;
    auto answer = [&](shmguard::server::ReviewBody b) {
      if (auto refused = shmguard::server::CheckAdmissionRequest(route, "application/json", b.text)) return *refused;
      return shmguard::server::HandleAdmission(b, route, {policy});
    };
    auto x = answer({body});
    std::string buffer = std::string(body) + std::string(shmguard::io::kJsonReadAhead, '"');
    auto in_place = answer({std::string_view(buffer).substr(0, body.size()), /*padded=*/true});
    if (in_place.status != x.status || in_place.body != x.body) std::abort();
    CheckSameAsTree(body, policy, face);
    auto response = nlohmann::json::parse(x.body);  // always valid JSON
    if (response["apiVersion"] != "admission.k8s.io/v1") std::abort();
    if (x.status != 200 || !response["response"].contains("patch")) continue;
    auto request = nlohmann::json::parse(body, nullptr, false);
    if (request.is_discarded()) std::abort();  // we answered 200 to something that is not JSON
    auto patch = nlohmann::json::parse(DecodeBase64(response["response"]["patch"]));
    (void)request["request"]["object"].patch(patch);  // throws (-> crash report) if it does not apply
  }
  return 0;
}

namespace {
std::string DecodeBase64(const std::string& s) {
  static const std::string kChars = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  int val = 0, bits = -8;
  for (char c : s) {
    if (c == '=') break;
    size_t p = kChars.find(c);
    if (p == std::string::npos) std::abort();
    val = (val << 6) + static_cast<int>(p);
    bits += 6;
    if (bits >= 0) {
      out.push_back(static_cast<char>((val >> bits) & 0xFF));
      bits -= 8;
    }
  }
  return out;
}
}  // namespace
