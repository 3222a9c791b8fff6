// The admission exchange without a socket: routes, and the HTTP-level answers of HandleAdmission.
#include "server/admission_handler.h"

#include <openssl/evp.h>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <random>

#include "tls_fixture.h"

namespace shmguard::server {
namespace {

using nlohmann::json;

TEST_CASE("MatchAdmissionRoute: the two faces, with the Pod Security level by query or by path",
          "[admission_handler]") {
  struct Case {
    const char* path;
    const char* target;
    bool matches;
    Face face;
    const char* level;  // nullptr: none given
    bool enforce = false;
  };
  const Case cases[] = {
      {"/mutate", "/mutate", true, Face::kMutate, nullptr},
      {"/validate", "/validate?timeout=10s", true, Face::kValidate, nullptr},
      {"/mutate", "/mutate?podSecurity=baseline", true, Face::kMutate, "baseline"},
      {"/mutate", "/mutate?timeout=10s&podSecurity=restricted&podSecurity=baseline", true, Face::kMutate, "restricted"},
      {"/validate", "/validate?podSecurity=", true, Face::kValidate, ""},
      {"/validate", "/validate?podsecurity=baseline", true, Face::kValidate, nullptr},  // names are case-sensitive
      {"/mutate/pod-security/restricted", "/mutate/pod-security/restricted", true, Face::kMutate, "restricted"},
      {"/validate/pod-security/baseline", "/validate/pod-security/baseline?timeout=5s", true, Face::kValidate,
       "baseline"},
      {"/mutate/pod-security/", "/mutate/pod-security/", true, Face::kMutate, ""},
      {"/validate/enforce", "/validate/enforce?timeout=10s", true, Face::kValidate, nullptr, true},
      {"/validate/enforce/pod-security/restricted", "/validate/enforce/pod-security/restricted", true, Face::kValidate,
       "restricted", true},
      {"/validate/enforce", "/validate/enforce?podSecurity=baseline", true, Face::kValidate, "baseline", true},
      {"/mutate/enforce", "/mutate/enforce", false, Face::kMutate, nullptr},  // mutation is the same everywhere
      {"/validate/enforcex", "/validate/enforcex", false, Face::kValidate, nullptr},
      {"/validate/pod-security/baseline/enforce", "/validate/pod-security/baseline/enforce", true, Face::kValidate,
       "baseline/enforce"},  // a level that is not one: the route's error
      {"/mutate/", "/mutate/", false, Face::kMutate, nullptr},
      {"/mutatex", "/mutatex", false, Face::kMutate, nullptr},
      {"/mutate/baseline", "/mutate/baseline", false, Face::kMutate, nullptr},
      {"/healthz", "/healthz", false, Face::kMutate, nullptr},
      {"/", "/", false, Face::kMutate, nullptr},
  };
  for (const Case& c : cases) {
    CAPTURE(c.target);
    auto route = MatchAdmissionRoute(c.path, c.target);
    REQUIRE(route.has_value() == c.matches);
    if (!route) continue;
    CHECK(route->face == c.face);
    CHECK(route->enforce == c.enforce);
    // The level is parsed with the route: a name that is not one is the route's error (400).
    auto level = c.level ? ParsePodSecurityLevel(c.level) : std::optional(PodSecurityLevel::kPrivileged);
    CHECK(route->error.empty() == level.has_value());
    if (level) CHECK(route->pod_security == *level);
  }
}

// The patch's base64 is RFC 4648's, as OpenSSL writes it, for every length's padding and every
// byte value; RFC 4648's own examples first.
TEST_CASE("Base64 writes what OpenSSL's encoder writes", "[admission_handler]") {
  CHECK(Base64("") == "");
  CHECK(Base64("f") == "Zg==");
  CHECK(Base64("fo") == "Zm8=");
  CHECK(Base64("foo") == "Zm9v");
  CHECK(Base64("foob") == "Zm9vYg==");
  CHECK(Base64("fooba") == "Zm9vYmE=");
  CHECK(Base64("foobar") == "Zm9vYmFy");
  std::mt19937 random(31);
  for (size_t size = 0; size < 1000; size += 1 + size / 8) {
    std::string bytes(size, '\0');
    for (size_t i = 0; i < size; ++i) {
      bytes[i] = static_cast<char>(size % 2 ? random() : i);  // odd sizes random, even ones 0, 1, 2...
    }
    std::string openssl(4 * ((size + 2) / 3) + 1, '\0');
    int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(openssl.data()),
                            reinterpret_cast<const unsigned char*>(bytes.data()), static_cast<int>(size));
    openssl.resize(static_cast<size_t>(n));
    CAPTURE(size);
    CHECK(Base64(bytes) == openssl);
  }
}

// What the server does with a request on an admission route: CheckAdmissionRequest, then
// HandleAdmission.
AdmissionExchange Answer(const std::string& review, const std::string& path, const Policy& policy,
                         std::string_view content_type = "application/json") {
  auto route = MatchAdmissionRoute(path.substr(0, path.find('?')), path);
  REQUIRE(route);
  if (auto refused = CheckAdmissionRequest(*route, content_type, review)) return *refused;
  return HandleAdmission({review}, *route, {policy});
}

TEST_CASE("An unknown Pod Security level, a content type that is not JSON and an empty body get a 400 or 415",
          "[admission_handler]") {
  const std::string pod = R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":{"containers":[
    {"name":"t","resources":{"limits":{"nvidia.com/gpu":4,"memory":"64Gi"}}}]}})";
  const std::string review = test::ReviewJson(pod, "team-a");
  Policy always;  // hostIPC: always, so that what baseline keeps out shows
  always.host_ipc = HostIpcMode::kAlways;
  AdmissionExchange bad = Answer(review, "/mutate?podSecurity=admin", always);
  CHECK(bad.status == 400);
  json body = json::parse(bad.body);
  CHECK(body["response"]["allowed"] == false);
  CHECK(body["response"]["status"]["message"] ==
        "unknown Pod Security level \"admin\": the route takes privileged, baseline or restricted");
  CHECK(Answer(review, "/mutate", always, "text/plain").status == 415);
  CHECK(Answer("", "/mutate", always).status == 400);
  AdmissionExchange garbage = Answer("{", "/mutate", always);
  CHECK(garbage.status == 400);
  CHECK_THAT(json::parse(garbage.body)["response"]["status"]["message"].get<std::string>(),
             Catch::StartsWith("request body is "));

  AdmissionExchange baseline = Answer(review, "/mutate/pod-security/baseline", always);
  CHECK(baseline.status == 200);
  CHECK(baseline.outcome == Outcome::kPatched);
  json patch = json::parse(test::DecodeBase64(json::parse(baseline.body)["response"]["patch"]));
  for (const auto& op : patch) CHECK(op["path"] != "/spec/hostIPC");
  AdmissionExchange privileged = Answer(review, "/mutate", always);
  CHECK(json::parse(test::DecodeBase64(json::parse(privileged.body)["response"]["patch"])).dump().find("hostIPC") !=
        std::string::npos);
}

// A spent budget: the review is answered review-over-budget, unsized — allowed with the warning by
// /mutate and /validate in warn namespaces, denied by /validate in enforce ones.
TEST_CASE("HandleAdmission answers a review whose work budget is spent", "[admission_handler]") {
  struct Spent : WorkBudget {
    bool Exhausted() const override { return true; }
  } spent;
  const std::string pod = R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":{"containers":[
    {"name":"t","resources":{"limits":{"nvidia.com/gpu":4,"memory":"64Gi"}}}]}})";
  const std::string review = test::ReviewJson(pod, "team-a");
  for (const char* path : {"/mutate", "/validate", "/validate/enforce"}) {
    CAPTURE(path);
    auto route = MatchAdmissionRoute(path, path);
    AdmissionExchange x = HandleAdmission({review}, *route, {Policy{}, nullptr, nullptr, &spent});
    json r = json::parse(x.body)["response"];
    CHECK_FALSE(r.contains("patch"));
    if (std::string(path) == "/validate/enforce") {
      CHECK(r["allowed"] == false);
      CHECK_THAT(r["status"]["message"].get<std::string>(), Catch::Contains("more CPU time than shmguard gives one"));
    } else {
      CHECK(r["allowed"] == true);
      INFO(r["warnings"].dump());
      REQUIRE(r["warnings"].size() == 1);
      CHECK_THAT(r["warnings"][0].get<std::string>(), Catch::Contains("more CPU time"));
    }
  }
}

}  // namespace
}  // namespace shmguard::server
