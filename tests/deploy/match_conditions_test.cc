// The webhook configurations' matchConditions, evaluated with a real CEL implementation
// (tests/cel: npm @bufbuild/cel, installed by scripts/test.sh) over every Pod of the test data:
// a Pod the expressions keep away from shmguard must be one shmguard would neither patch, warn
// about nor deny; every other kind always reaches it.
#include <catch2/catch.hpp>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "io/manifests.h"
#include "server/tls_fixture.h"
#include "shmguard/admission.h"
#include "shmguard/pod_templates.h"
#include "test_util.h"

namespace shmguard::test {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

std::string Source(const std::string& rel) { return std::string(SOURCE_DIR) + "/" + rel; }

// Every document of the YAML files under `dir` that parses.
std::vector<json> Objects(const std::string& dir) {
  std::vector<json> out;
  for (const auto& entry : fs::recursive_directory_iterator(dir)) {
    std::string path = entry.path().string();
    if (!entry.is_regular_file() ||
        (path.find(".yaml") == std::string::npos && path.find(".yml") == std::string::npos)) {
      continue;
    }
    auto text = io::ReadFileText(path);
    if (!text) continue;
    for (auto& d : io::ParseManifests(*text, path)) {
      if (d.object && d.object->is_object()) out.push_back(std::move(*d.object));
    }
  }
  return out;
}

// The Pods an object stands for: itself, or one per pod template with the template's metadata
// and spec (what its controller creates).
void AddPods(const json& object, std::vector<json>& pods) {
  auto w = FindPodTemplates(object);
  if (!w || w->kind == "Compose") return;
  if (w->is_pod) {
    pods.push_back(object);
    return;
  }
  for (const auto& t : w->templates) {
    if (!t.spec.IsObject() || t.containers.data() != kPodSpecContainers) continue;  // an Argo template is no PodSpec
    json pod = {{"apiVersion", "v1"},
                {"kind", "Pod"},
                {"metadata", t.metadata ? t.metadata.Copy() : json::object()},
                {"spec", t.spec.Copy()}};
    pod["metadata"]["name"] = w->name + "-" + t.label;
    pods.push_back(std::move(pod));
  }
}

// Pods written for the edges of the expression.
const char* kEdgePods[] = {
    R"({"kind": "Pod", "metadata": {"name": "gpu-in-requests"}, "spec": {"containers": [
        {"name": "a", "resources": {"requests": {"nvidia.com/gpu": "1"}}}]}})",
    R"({"kind": "Pod", "metadata": {"name": "gpu-in-init"}, "spec": {"initContainers": [
        {"name": "i", "resources": {"limits": {"amd.com/gpu": 1}}}], "containers": [{"name": "a"}]}})",
    R"({"kind": "Pod", "metadata": {"name": "annotated", "annotations": {"shmguard.io/num-workers": "4",
        "shmguard.io/batch-bytes": "8Mi"}}, "spec": {"containers": [{"name": "a"}]}})",
    R"({"kind": "Pod", "metadata": {"name": "opted-out", "annotations": {"shmguard.io/mode": "skip"}},
        "spec": {"containers": [{"name": "a", "resources": {"limits": {"nvidia.com/gpu": 8}}}]}})",
    R"({"kind": "Pod", "metadata": {"name": "other-annotations", "annotations": {"team": "a"}, "labels": {"x": "y"}},
        "spec": {"containers": [{"name": "a", "resources": {"limits": {"cpu": "4", "memory": "8Gi"}}}]}})",
    R"({"kind": "Pod", "metadata": {"name": "zero-gpus"}, "spec": {"containers": [
        {"name": "a", "resources": {"limits": {"nvidia.com/gpu": 0}}}]}})",
    R"({"kind": "Pod", "metadata": {"name": "other-device"}, "spec": {"containers": [
        {"name": "a", "resources": {"limits": {"example.com/fpga": 1}}}]}})",
    R"({"kind": "Pod", "metadata": {"name": "no-containers"}, "spec": {}})",
    R"({"kind": "Pod", "metadata": {"name": "empty-resources"}, "spec": {"containers": [{"name": "a", "resources": {}}],
        "volumes": [{"name": "dshm", "emptyDir": {"medium": "Memory"}}], "hostIPC": true}})",
};

std::string RunNode(const std::string& input) {
  const std::string in_file = fs::temp_directory_path() / ("shmguard-cel-" + std::to_string(getpid()) + ".json");
  std::ofstream(in_file) << input;
  std::string command = "node \"" + Source("tests/cel/match_conditions.mjs") + "\" < \"" + in_file + "\" 2>&1";
  std::string out;
  FILE* p = popen(command.c_str(), "r");
  REQUIRE(p != nullptr);
  char buf[65536];
  while (size_t n = fread(buf, 1, sizeof buf, p)) out.append(buf, n);
  int status = pclose(p);
  fs::remove(in_file);
  INFO(out.substr(0, 2000));
  REQUIRE(status == 0);
  return out;
}

json Review(const json& object, const std::string& kind) {
  return {{"apiVersion", "admission.k8s.io/v1"},
          {"kind", "AdmissionReview"},
          {"request",
           {{"uid", "u"},
            {"kind", {{"group", ""}, {"version", "v1"}, {"kind", kind}}},
            {"resource", {{"group", ""}, {"version", "v1"}, {"resource", "pods"}}},
            {"namespace", "team-a"},
            {"operation", "CREATE"},
            {"object", object}}}};
}

TEST_CASE("matchConditions keep away only the Pods shmguard would leave alone", "[deploy][cel]") {
  INFO("tests/cel needs its npm packages: npm ci --prefix tests/cel (scripts/test.sh runs it)");
  REQUIRE(fs::exists(Source("tests/cel/node_modules/@bufbuild/cel/package.json")));

  // The expressions of every entry of both configurations: one and the same.
  std::set<std::string> expressions;
  int entries = 0;
  for (const char* file :
       {"deploy/60-mutatingwebhookconfiguration.yaml", "deploy/61-validatingwebhookconfiguration.yaml"}) {
    auto docs = io::ParseManifests(ReadTestdata("../../" + std::string(file)), file);
    REQUIRE(docs.size() == 1);
    for (const auto& w : (*docs[0].object)["webhooks"]) {
      for (const auto& c : w["matchConditions"]) expressions.insert(c["expression"]);
      ++entries;
    }
  }
  CHECK(entries == 9);
  REQUIRE(expressions.size() == 1);

  std::vector<json> pods;
  for (const char* text : kEdgePods) pods.push_back(json::parse(text));
  for (const auto& o : Objects(Source("examples"))) AddPods(o, pods);
  const size_t own = pods.size();
  if (HaveCorpus()) {
    for (const auto& o : Objects(CorpusPath())) AddPods(o, pods);
  }
  CAPTURE(own, pods.size());
  REQUIRE((pods.size() > own || !HaveCorpus()));

  json input = {{"expressions", json(expressions)}, {"requests", json::array()}};
  for (const auto& pod : pods)
    input["requests"].push_back({{"request", Review(pod, "Pod")["request"]}, {"object", pod}});
  // Other kinds always pass, whatever their content.
  const json jobset = Yaml("apiVersion: jobset.x-k8s.io/v1alpha2\nkind: JobSet\nmetadata: {name: j}\nspec: {}\n");
  input["requests"].push_back(
      {{"request", {{"kind", {{"group", "jobset.x-k8s.io"}, {"version", "v1alpha2"}, {"kind", "JobSet"}}}}},
       {"object", jobset}});
  json results = json::parse(RunNode(input.dump()));
  REQUIRE(results.size() == pods.size() + 1);
  CHECK(results.back() == true);

  const Policy defaults;
  Policy strict;  // enforce everywhere, annotations required: the most shmguard ever says
  strict.namespaces = {NamespaceRule{{"*"}, NamespaceMode::kEnforce, true, PodSecurityLevel::kPrivileged}};
  int kept = 0, left_out = 0;
  std::set<std::string> kept_names;
  for (size_t i = 0; i < pods.size(); ++i) {
    const std::string name = pods[i]["metadata"].value("name", "");
    CAPTURE(name, results[i].dump());
    REQUIRE(results[i].is_boolean());  // never an error: an error would fail closed under Fail
    if (results[i] == true) {
      ++kept;
      kept_names.insert(name);
      continue;
    }
    ++left_out;
    json review = Review(pods[i], "Pod");
    auto request = ParseReview(review);
    REQUIRE(request.has_value());
    for (const Policy* policy : {&defaults, static_cast<const Policy*>(&strict)}) {
      for (Face face : {Face::kMutate, Face::kValidate}) {
        Decision d = Decide(*request, *policy, face, NamespaceLabels{PodSecurityLevel::kPrivileged, true});
        CHECK(d.allowed);
        CHECK(d.patch.empty());
        CHECK(d.warnings.empty());
      }
    }
  }
  for (const char* name : {"gpu-in-requests", "gpu-in-init", "annotated", "opted-out", "zero-gpus"}) {
    CAPTURE(name);
    CHECK(kept_names.count(name) == 1);
  }
  for (const char* name : {"other-annotations", "other-device", "no-containers", "empty-resources"}) {
    CAPTURE(name);
    CHECK(kept_names.count(name) == 0);
  }
  CHECK(kept >= 5);
  CHECK(left_out >= 4);
}

}  // namespace
}  // namespace shmguard::test
