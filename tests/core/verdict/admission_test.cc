// ParseReview and Decide (both faces, every mode); the words of its answers are
// tests/server/admission_words_test.cc.
#include "core/verdict/admission.h"

#include <catch2/catch.hpp>

#include "test_util.h"

namespace shmguard {
namespace {

using nlohmann::json;

json Review(const json& object, const std::string& ns, const std::string& op = "CREATE",
            const std::string& kind = "Pod") {
  json k = kind == "JobSet"                              ? json{{"group", "jobset.x-k8s.io"}, {"version", "v1alpha2"}}
           : kind == "Deployment" || kind == "DaemonSet" ? json{{"group", "apps"}, {"version", "v1"}}
                                                         : json{{"group", ""}, {"version", "v1"}};
  k["kind"] = kind;
  return {{"apiVersion", "admission.k8s.io/v1"},
          {"kind", "AdmissionReview"},
          {"request",
           {{"uid", "705ab4f5-6393-11e8-b7cc-42010a800002"},
            {"kind", k},
            {"namespace", ns},
            {"operation", op},
            {"dryRun", false},
            {"object", object}}}};
}

const char* kPod = R"(
apiVersion: v1
kind: Pod
metadata: {name: p, annotations: {shmguard.io/num-workers: "8", shmguard.io/batch-bytes: 160Mi}}
spec:
  containers: [{name: t, resources: {limits: {nvidia.com/gpu: 4, memory: 64Gi}}}]
)";
const char* kTooBig = R"(
apiVersion: v1
kind: Pod
metadata: {name: big, annotations: {shmguard.io/num-workers: "8", shmguard.io/batch-bytes: 1Gi}}
spec:
  containers: [{name: t, resources: {limits: {nvidia.com/gpu: 4, memory: 64Gi}}}]
)";

// A parsed request with the review it views.
struct Parsed {
  std::unique_ptr<json> review;
  AdmissionRequest request;
  operator const AdmissionRequest&() const { return request; }  // NOLINT: for Decide
};

Parsed Parse(json review) {
  Parsed p{std::make_unique<json>(std::move(review)), {}};
  auto r = ParseReview(*p.review);
  INFO((r ? "" : r.error().ToString()));
  REQUIRE(r.has_value());
  p.request = *r;
  return p;
}

TEST_CASE("ParseReview reads an admission.k8s.io/v1 request", "[admission]") {
  Parsed parsed = Parse(Review(test::Yaml(kPod), "ml-a"));
  const AdmissionRequest& r = parsed.request;
  CHECK(r.uid == "705ab4f5-6393-11e8-b7cc-42010a800002");
  CHECK(r.kind == "Pod");
  CHECK(r.version == "v1");
  CHECK(r.namespace_name == "ml-a");
  CHECK(r.operation == "CREATE");
}

TEST_CASE("ParseReview rejects malformed reviews naming the field", "[admission]") {
  struct Case {
    json review;
    const char* where;
  };
  json good = Review(test::Yaml(kPod), "ml-a");
  auto with = [&](const char* pointer, json value) {
    json j = good;
    j[json::json_pointer(pointer)] = std::move(value);
    return j;
  };
  json no_request = good;
  no_request.erase("request");
  const Case cases[] = {
      {json::array(), "/"},
      {with("/apiVersion", "admission.k8s.io/v1beta1"), "/apiVersion"},
      {with("/kind", "Pod"), "/kind"},
      {no_request, "/request"},
      {with("/request/uid", 42), "/request/uid"},
      {with("/request/uid", ""), "/request/uid"},
      {with("/request/kind", "Pod"), "/request/kind"},
      {with("/request/namespace", json::object()), "/request/namespace"},
      {with("/request/dryRun", "yes"), "/request/dryRun"},
      {with("/request/object", "pod"), "/request/object"},
  };
  for (const auto& c : cases) {
    CAPTURE(c.review.dump());
    json copy = c.review;
    auto r = ParseReview(copy);
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error().code == Code::kInvalidInput);
    CHECK(r.error().where.pointer == c.where);
  }
}

TEST_CASE("ParseReview accepts the kubernetes/api round-trip fixture", "[admission][corpus]") {
  SHMGUARD_REQUIRE_CORPUS();
  json review = json::parse(test::ReadCorpus("k8s-api/admission.k8s.io.v1.AdmissionReview.json"));
  auto r = ParseReview(review);
  REQUIRE(r.has_value());
  CHECK(r->uid == "uidValue");
  Decision d = Decide(*r, {Policy{}, Face::kMutate});  // not a Pod: allowed untouched
  CHECK(d.allowed);
  CHECK(d.patch.empty());
}

TEST_CASE("Decide mutates CREATE of Pods and of the kinds whose templates it patches", "[admission]") {
  Parsed create = Parse(Review(test::Yaml(kPod), "team-a"));
  Decision d = Decide(create, {Policy{}, Face::kMutate});
  CHECK(d.allowed);
  CHECK(d.verdict == Verdict::kPatch);
  REQUIRE_FALSE(d.patch.empty());
  CHECK(create.request.object.Copy().patch(d.patch.ToJson())["spec"]["volumes"][0]["name"] == "dshm");
  CHECK(d.required_bytes == 14078ll << 20);

  for (const char* op : {"UPDATE", "DELETE", "CONNECT"}) {
    CAPTURE(op);
    Decision other = Decide(Parse(Review(test::Yaml(kPod), "team-a", op)), {Policy{}, Face::kMutate});
    CHECK(other.allowed);
    CHECK(other.patch.empty());
  }
  // A Deployment's template is patched when it is created; a DaemonSet's pods are checked one by
  // one when they are created, so the DaemonSet itself is left alone.
  json pod = test::Yaml(kPod);
  for (const char* kind : {"Deployment", "DaemonSet"}) {
    CAPTURE(kind);
    json controller = {{"apiVersion", "apps/v1"},
                       {"kind", kind},
                       {"metadata", {{"name", "d"}}},
                       {"spec", {{"template", {{"metadata", pod["metadata"]}, {"spec", pod["spec"]}}}}}};
    Parsed parsed = Parse(Review(controller, "team-a", "CREATE", kind));
    Decision dep = Decide(parsed, {Policy{}, Face::kMutate});
    CHECK(dep.allowed);
    if (std::string(kind) == "DaemonSet") {
      CHECK(dep.patch.empty());
      continue;
    }
    REQUIRE_FALSE(dep.patch.empty());
    json patched = parsed.request.object.Copy().patch(dep.patch.ToJson());
    CHECK(patched["spec"]["template"]["spec"]["volumes"][0]["name"] == "dshm");
  }
  CHECK(Decide(Parse(Review(test::Yaml(kPod), "kube-system")), {Policy{}, Face::kMutate}).patch.empty());
  // A body shaped like a Compose file is no Pod, whatever request.kind says: left alone.
  json compose = test::Yaml("services: {train: {gpus: all}}\n");
  REQUIRE(Evaluate(compose, Policy{}).verdict == Verdict::kPatch);
  for (Face face : {Face::kMutate, Face::kValidate}) {
    Decision c = Decide(Parse(Review(compose, "team-a")), {Policy{}, face});
    CHECK(c.allowed);
    CHECK(c.verdict == Verdict::kSkip);
    CHECK(c.patch.empty());
    CHECK(c.findings.empty());
  }
}

// Hybrid mode: the exported policy's floor, then the webhook. Whatever the floor, the pod the
// webhook lets through is the one it would make of the pod its author wrote, unless it would deny
// or skip that one: then the floor stands.
TEST_CASE("Decide puts the webhook's plan in place of the policy's floor", "[admission][policy_floor]") {
  const json author = test::Yaml(kPod);  // needs 14078Mi
  auto alone = [&](const json& pod) {
    Parsed p = Parse(Review(pod, "team-a"));
    Decision d = Decide(p, {Policy{}, Face::kMutate});
    return p.request.object.Copy().patch(d.patch.ToJson());
  };
  auto floored = [](json pod, const std::string& plan, const std::string& size, bool added) {
    pod["metadata"]["annotations"]["shmguard.io/plan"] = plan;
    if (added) {
      pod["spec"]["volumes"] = json::array({{{"name", "dshm"}, {"emptyDir", {{"medium", "Memory"}}}}});
      pod["spec"]["containers"][0]["volumeMounts"] = json::array({{{"name", "dshm"}, {"mountPath", "/dev/shm"}}});
    }
    pod["spec"]["volumes"].back()["emptyDir"]["sizeLimit"] = size;
    return pod;
  };
  json sized = author;  // an author's own /dev/shm of 1Gi
  sized["spec"]["volumes"] =
      json::array({{{"name", "shm"}, {"emptyDir", {{"medium", "Memory"}, {"sizeLimit", "1Gi"}}}}});
  sized["spec"]["containers"][0]["volumeMounts"] = json::array({{{"name", "shm"}, {"mountPath", "/dev/shm"}}});
  json ample = sized;  // ...of 16Gi, which the webhook finds enough
  ample["spec"]["volumes"][0]["emptyDir"]["sizeLimit"] = "16Gi";
  struct Case {
    const char* name;
    json written, floor;
  };
  const std::vector<Case> cases = {
      {"added, larger than the plan", author,
       floored(author,
               R"({"added":true,"mountedIn":[0],"policyMode":true,"required":"20Gi","volume":"dshm","verdict":"ok"})",
               "20Gi", true)},
      {"added, smaller than the plan", author,
       floored(author,
               R"({"added":true,"mountedIn":[0],"policyMode":true,"required":"2Gi","volume":"dshm","verdict":"ok"})",
               "2Gi", true)},
      {"raised", sized,
       floored(sized, R"({"policyMode":true,"raisedFrom":"1Gi","required":"20Gi","volume":"shm"})", "20Gi", false)},
      {"raised from what the webhook finds enough", ample,
       floored(ample, R"({"policyMode":true,"raisedFrom":"16Gi","required":"20Gi","volume":"shm"})", "20Gi", false)},
  };
  for (const Case& c : cases) {
    SECTION(c.name) {
      Parsed p = Parse(Review(c.floor, "team-a"));
      Decision d = Decide(p, {Policy{}, Face::kMutate});
      CHECK(d.allowed);
      json out = p.request.object.Copy().patch(d.patch.ToJson());
      json want = alone(c.written);
      if (want["metadata"]["annotations"].empty()) want["metadata"]["annotations"] = json::object();
      CHECK(out == want);
    }
  }
  SECTION("the webhook's own plan is no floor") {
    json mine = alone(author);
    Parsed p = Parse(Review(mine, "team-a"));
    CHECK(Decide(p, {Policy{}, Face::kMutate}).patch.empty());
  }
  SECTION("a pod the webhook would deny keeps its floor") {
    json floor =
        floored(test::Yaml(kTooBig),
                R"({"added":true,"mountedIn":[0],"policyMode":true,"required":"60Gi","volume":"dshm"})", "60Gi", true);
    Parsed p = Parse(Review(floor, "team-a"));
    Decision d = Decide(p, {Policy{}, Face::kMutate});
    CHECK(d.patch.empty());
    CHECK(d.verdict == Verdict::kDeny);
  }
}

TEST_CASE("Decide: /validate denies in enforce and warns in warn, /mutate never denies", "[admission]") {
  Parsed enforce = Parse(Review(test::Yaml(kTooBig), "ml-a"));
  Parsed warn = Parse(Review(test::Yaml(kTooBig), "team-a"));

  Decision v_enforce = Decide(enforce, {Policy{}, Face::kValidate});
  CHECK_FALSE(v_enforce.allowed);
  CHECK(v_enforce.code == 403);
  // The denial cites the arithmetic it refuses, then the error.
  CHECK(test::Ids(v_enforce.findings) == std::vector<std::string>{"shm-plan", "shm-over-memory-limit"});
  CHECK(v_enforce.findings[1].Number("required_bytes") == 88727ll << 20);
  CHECK(v_enforce.findings[1].Number("memory_limit_bytes") == 64ll << 30);

  Decision v_warn = Decide(warn, {Policy{}, Face::kValidate});
  CHECK(v_warn.allowed);
  CHECK(test::Ids(v_warn.findings) == std::vector<std::string>{"shm-plan", "shm-over-memory-limit"});

  // /mutate never denies: the same findings as warnings, the plan citing the arithmetic.
  Decision m_enforce = Decide(enforce, {Policy{}, Face::kMutate});
  CHECK(m_enforce.allowed);
  CHECK(m_enforce.patch.empty());
  CHECK(test::Ids(m_enforce.findings) == std::vector<std::string>{"shm-plan", "shm-over-memory-limit"});

  // An unpatched pod reaching /validate in enforce: the mutating webhook did not run, and what
  // its patch answers is the denial.
  Decision missing = Decide(Parse(Review(test::Yaml(kPod), "ml-a")), {Policy{}, Face::kValidate});
  CHECK_FALSE(missing.allowed);
  CHECK(test::Ids(missing.findings) == std::vector<std::string>{"shm-below-need"});
  // With NCCL over InfiniBand, as root: IPC_LOCK is a part of the patch, missing too.
  json ib = test::Yaml(kPod);
  ib["spec"]["containers"][0]["env"] = json::array({{{"name", "NCCL_NET"}, {"value", "IB"}}});
  Decision ib_missing = Decide(Parse(Review(ib, "ml-a")), {Policy{}, Face::kValidate});
  CHECK(test::Ids(ib_missing.findings) == std::vector<std::string>{"shm-below-need", "ipc-lock-missing"});
  CHECK(Decide(Parse(Review(ib, "ml-a")), {Policy{}, Face::kMutate}).findings.empty());
  // /mutate patches it and says nothing about what the patch fixes.
  Decision mutated_answer = Decide(Parse(Review(test::Yaml(kPod), "ml-a")), {Policy{}, Face::kMutate});
  CHECK_FALSE(mutated_answer.patch.empty());
  CHECK(mutated_answer.findings.empty());
  // The same pod after /mutate passes /validate.
  Parsed patched = Parse(Review(test::Yaml(kPod), "ml-a"));
  json mutated = patched.request.object.Copy().patch(Decide(patched, {Policy{}, Face::kMutate}).patch.ToJson());
  patched.request.object = mutated;
  Decision after = Decide(patched, {Policy{}, Face::kValidate});
  CHECK(after.allowed);
  CHECK(test::Ids(after.findings).empty());
}

TEST_CASE("Decide handles JobSets end to end", "[admission]") {
  // The shape of JobSet's PyTorch example: one replicated job of 4 indexed pods running torchrun.
  json js = test::Yaml(R"(
apiVersion: jobset.x-k8s.io/v1alpha2
kind: JobSet
metadata: {name: pytorch}
spec:
  replicatedJobs:
  - name: workers
    template:
      spec:
        parallelism: 4
        completions: 4
        template:
          spec:
            containers:
            - name: pytorch
              image: pytorch:latest
              command: [bash, -xc, "torchrun --nproc_per_node=1 --nnodes=4 mnist.py"]
)");
  js["metadata"]["annotations"] = {{"shmguard.io/num-workers", "4"}, {"shmguard.io/batch-bytes", "8Mi"}};
  Parsed r = Parse(Review(js, "team-a", "CREATE", "JobSet"));
  Decision d = Decide(r, {Policy{}, Face::kMutate});
  REQUIRE(d.verdict == Verdict::kPatch);
  json out = r.request.object.Copy().patch(d.patch.ToJson());
  const json& tmpl = out["spec"]["replicatedJobs"][0]["template"]["spec"]["template"];
  CHECK(tmpl["spec"]["volumes"][0]["emptyDir"]["medium"] == "Memory");
  CHECK(tmpl["metadata"]["annotations"]["shmguard.io/nodes"] == "4");
}

}  // namespace
}  // namespace shmguard
