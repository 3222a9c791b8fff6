// deploy/ and charts/shmguard, checked against what `shmguard-webhook` really serves: the
// Deployment's own args start the binary, and its probes and the webhook paths are requested
// from it. The chart's values and the Dockerfile as files: chart_and_image_test.cc.
#include <httplib.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>

#include "core/workloads/pod_templates.h"
#include "io/config/config.h"
#include "io/files/manifests.h"
#include "io/formats/yaml_json.h"
#include "test_util.h"
#include "tls_fixture.h"

namespace shmguard::test {
namespace {

using nlohmann::json;

namespace fs = std::filesystem;

std::string Source(const std::string& rel) { return std::string(SOURCE_DIR) + "/" + rel; }

// Every object in deploy/, by kind (and name for the webhook configs).
std::map<std::string, json> DeployObjects() {
  std::map<std::string, json> out;
  for (const auto& entry : fs::directory_iterator(Source("deploy"))) {
    // deploy/monitoring/ needs the Prometheus Operator's CRDs: not part of `kubectl apply -f deploy/`.
    if (!entry.is_regular_file()) continue;
    auto text = io::ReadFileText(entry.path().string());
    REQUIRE(text.has_value());
    for (const auto& d : io::ParseManifests(*text, entry.path().string())) {
      INFO((d.error ? d.error->ToString() : ""));
      REQUIRE(d.object.has_value());
      const json o = d.object->ToJson();
      std::string key = o["kind"].get<std::string>();
      if (out.count(key)) key += "/" + o["metadata"]["name"].get<std::string>();
      out[key] = o;
    }
  }
  return out;
}

std::map<std::string, std::string> Args(const json& container) {
  std::map<std::string, std::string> args;
  for (const auto& a : container["args"]) {
    std::string s = a;
    size_t eq = s.find('=');
    args[s.substr(0, eq)] = eq == std::string::npos ? "" : s.substr(eq + 1);
  }
  return args;
}

TEST_CASE("deploy/ holds every object with the fields an install needs", "[deploy]") {
  auto objs = DeployObjects();
  for (const char* kind : {"Namespace", "ServiceAccount", "ConfigMap", "Deployment", "PodDisruptionBudget", "Service",
                           "MutatingWebhookConfiguration", "ValidatingWebhookConfiguration", "Issuer", "Certificate"}) {
    CAPTURE(kind);
    CHECK(objs.count(kind) == 1);
  }
  const json& dep = objs["Deployment"];
  CHECK(dep["spec"]["replicas"] == 2);
  const json& pod = dep["spec"]["template"]["spec"];
  CHECK(pod["securityContext"]["runAsNonRoot"] == true);
  CHECK(pod["securityContext"]["runAsUser"].get<int>() > 0);
  CHECK(pod["securityContext"]["seccompProfile"]["type"] == "RuntimeDefault");
  // Replicas spread over nodes and zones, preferred (ScheduleAnyway) so that a one-node cluster still
  // runs them all; a rolling update never takes one away before its successor is ready.
  std::set<std::string> spread;
  for (const auto& t : pod["topologySpreadConstraints"]) {
    CHECK(t["whenUnsatisfiable"] == "ScheduleAnyway");
    spread.insert(t["topologyKey"].get<std::string>());
  }
  CHECK(spread == std::set<std::string>{"kubernetes.io/hostname", "topology.kubernetes.io/zone"});
  CHECK(dep["spec"]["strategy"]["rollingUpdate"]["maxUnavailable"] == 0);
  CHECK(dep["spec"]["strategy"]["rollingUpdate"]["maxSurge"] == 1);
  const json& c = pod["containers"][0];
  CHECK(c["securityContext"]["readOnlyRootFilesystem"] == true);
  CHECK(c["securityContext"]["allowPrivilegeEscalation"] == false);
  CHECK(c["securityContext"]["capabilities"]["drop"] == json::array({"ALL"}));
  CHECK(c["resources"]["limits"].contains("memory"));
  CHECK(objs["PodDisruptionBudget"]["spec"]["minAvailable"] == 1);
  auto args = Args(c);
  // The webhook's own image and program: flags only, no subcommand.
  CHECK(c["image"].get<std::string>().rfind("shmguard-webhook:", 0) == 0);
  CHECK(c["args"][0].get<std::string>().rfind("--", 0) == 0);
  for (const char* flag : {"--config", "--tls-cert-file", "--tls-key-file", "--port", "--metrics-port"}) {
    CAPTURE(flag);
    CHECK(args.count(flag) == 1);
  }
  // Mounted files: the config directory is mounted whole (subPath mounts never update, which
  // would defeat hot reload), and every file the args name lies under a mount.
  for (const auto& m : c["volumeMounts"]) CHECK_FALSE(m.contains("subPath"));
  for (const char* flag : {"--config", "--tls-cert-file", "--tls-key-file"}) {
    bool mounted = false;
    for (const auto& m : c["volumeMounts"]) {
      if (args[flag].rfind(m["mountPath"].get<std::string>() + "/", 0) == 0) mounted = true;
    }
    CAPTURE(flag, args[flag]);
    CHECK(mounted);
  }
  // Ports: container ports = the flags; probes on the metrics port; the Service targets them.
  std::map<std::string, int> ports;
  for (const auto& p : c["ports"]) ports[p["name"]] = p["containerPort"];
  CHECK(ports["webhook"] == std::stoi(args["--port"]));
  CHECK(ports["metrics"] == std::stoi(args["--metrics-port"]));
  CHECK(c["readinessProbe"]["httpGet"]["port"] == "metrics");
  CHECK(c["livenessProbe"]["httpGet"]["port"] == "metrics");
  for (const auto& p : objs["Service"]["spec"]["ports"]) {
    if (p["name"] == "webhook") {
      CHECK(p["port"] == 443);
      CHECK(p["targetPort"] == "webhook");
    }
  }
}

TEST_CASE("deploy/ agent reads no other process and writes nothing of the kubelet's pods", "[deploy]") {
  const auto objects = DeployObjects();
  REQUIRE(objects.count("DaemonSet"));
  const json& spec = objects.at("DaemonSet")["spec"]["template"]["spec"];
  // Leaked segments are found from the pods' status and the files' times: not the host's PID
  // namespace, and no capability at all (the exact mode's are the chart's opt-in).
  CHECK_FALSE(spec.contains("hostPID"));
  CHECK_FALSE(spec.contains("hostNetwork"));
  const json& agent = spec["containers"][0];
  // The agent's own image and program: flags only, no subcommand.
  CHECK(agent["image"].get<std::string>().rfind("shmguard-agent:", 0) == 0);
  CHECK(agent["args"][0].get<std::string>().rfind("--", 0) == 0);
  CHECK(agent["securityContext"]["capabilities"]["drop"] == json::array({"ALL"}));
  CHECK_FALSE(agent["securityContext"]["capabilities"].contains("add"));
  CHECK(agent["securityContext"]["allowPrivilegeEscalation"] == false);
  CHECK(agent["securityContext"]["privileged"] == false);
  CHECK(Args(agent).at("--leaked-segments") == "status");
  // Reclaiming is off: the kubelet's pod directory is read-only.
  for (const auto& m : agent["volumeMounts"]) {
    CAPTURE(m.dump());
    CHECK(m["readOnly"] == true);
  }
}

TEST_CASE("deploy/ webhook configurations are safe to install", "[deploy]") {
  auto objs = DeployObjects();
  const json& mutating = objs["MutatingWebhookConfiguration"];
  const json& validating = objs["ValidatingWebhookConfiguration"];
  for (const json* cfg : {&mutating, &validating}) {
    CHECK((*cfg)["metadata"]["annotations"]["cert-manager.io/inject-ca-from"] ==
          "shmguard-system/shmguard-serving-cert");
    for (const auto& w : (*cfg)["webhooks"]) {
      CAPTURE(w["name"]);
      CHECK(w["sideEffects"] == "None");
      CHECK(w["admissionReviewVersions"] == json::array({"v1"}));
      CHECK(w["timeoutSeconds"].get<int>() <= 5);
      CHECK(w["clientConfig"]["service"]["name"] == objs["Service"]["metadata"]["name"]);
      CHECK(w["clientConfig"]["service"]["port"] == 443);
      // Cluster-wide: every namespace but the system ones, shmguard's own and those opted out.
      const json& selector = w["namespaceSelector"];
      CHECK_FALSE(selector.value("matchLabels", json::object()).contains("shmguard.io/enabled"));
      std::map<std::string, json> expressions;
      for (const auto& e : selector["matchExpressions"]) expressions[e["key"]] = e;
      CHECK(expressions["kubernetes.io/metadata.name"] ==
            json::parse(R"({"key": "kubernetes.io/metadata.name", "operator": "NotIn",
                            "values": ["kube-system", "kube-public", "kube-node-lease", "shmguard-system"]})"));
      CHECK(expressions["shmguard.io/enabled"] ==
            json::parse(R"({"key": "shmguard.io/enabled", "operator": "NotIn", "values": ["false"]})"));
      // Baseline and restricted namespaces go to the path that says so; the others to the plain one.
      const std::string path = w["clientConfig"]["service"]["path"];
      const json& level = expressions["pod-security.kubernetes.io/enforce"];
      if (size_t at = path.find("/pod-security/"); at != std::string::npos) {
        CHECK(level == json({{"key", "pod-security.kubernetes.io/enforce"},
                             {"operator", "In"},
                             {"values", {path.substr(at + 14)}}}));
      } else {
        CHECK(level == json::parse(R"({"key": "pod-security.kubernetes.io/enforce", "operator": "NotIn",
                                       "values": ["baseline", "restricted"]})"));
      }
      // Only GPU pods and pods that name shmguard reach it; every other kind does. What the
      // expression lets through is checked by the API server's own CEL, and that it is the
      // chart's by helm itself (e2e: match_conditions_test.go, helm_test.go).
      REQUIRE(w["matchConditions"].size() == 1);
      CHECK(w["objectSelector"]["matchExpressions"][0] ==
            json({{"key", "app.kubernetes.io/name"}, {"operator", "NotIn"}, {"values", {"shmguard"}}}));
      // Every kind shmguard evaluates is registered where its role says, and nothing else.
      const bool validate = path.rfind("/validate", 0) == 0;
      // A namespaceSelector never skips a cluster-scoped object: those kinds go only to the
      // entry of each face that serves privileged, unenforced namespaces.
      const bool plain = path == "/mutate" || path == "/validate";
      std::set<std::string> registered, expected, cluster_scoped;
      int resize_rules = 0;
      for (const auto& r : w["rules"]) {
        // A resize of a running pod: validated, never mutated (docs/checks.md#resize-below-shm).
        if (r["operations"] == json::array({"UPDATE"})) {
          CHECK(r == json::parse(R"({"apiGroups": [""], "apiVersions": ["v1"], "operations": ["UPDATE"],
                                    "resources": ["pods/resize"], "scope": "Namespaced"})"));
          ++resize_rules;
          continue;
        }
        CHECK(r["operations"] == json::array({"CREATE"}));
        if (r["scope"] == "Cluster") {
          for (const auto& resource : r["resources"]) cluster_scoped.insert(resource.get<std::string>());
        }
        for (const auto& group : r["apiGroups"]) {
          for (const auto& version : r["apiVersions"]) {
            for (const auto& resource : r["resources"]) {
              std::string gv = group == "" ? version.get<std::string>()
                                           : group.get<std::string>() + "/" + version.get<std::string>();
              registered.insert(gv + " " + resource.get<std::string>());
            }
          }
        }
      }
      std::set<std::string> expected_cluster_scoped;
      // Where nothing can be denied (deploy/'s policy has no `mode: enforce` rule), the kinds the
      // mutating webhook answers are not validated again: one webhook call per GPU pod.
      const bool warn_only = validate && path.rfind("/validate/enforce", 0) != 0;
      for (const KindInfo& k : KnownKinds()) {
        if (k.cluster_scoped && !plain) continue;
        if (warn_only) {
          if (k.role == AdmissionRole::kValidate) {
            expected.insert(std::string(k.api_version) + " " + std::string(k.resource));
            if (k.cluster_scoped) expected_cluster_scoped.insert(std::string(k.resource));
          }
          continue;
        }
        if (k.role == AdmissionRole::kMutate || (validate && k.role == AdmissionRole::kValidate)) {
          expected.insert(std::string(k.api_version) + " " + std::string(k.resource));
          if (k.cluster_scoped) expected_cluster_scoped.insert(std::string(k.resource));
        }
      }
      CHECK(resize_rules == (validate ? 1 : 0));
      CHECK(registered == expected);
      CHECK(cluster_scoped == expected_cluster_scoped);
    }
  }
  std::set<std::string> paths;
  REQUIRE(mutating["webhooks"].size() == 3);
  for (const auto& w : mutating["webhooks"]) {
    CHECK(w["failurePolicy"] == "Ignore");
    CHECK(w["reinvocationPolicy"] == "IfNeeded");
    paths.insert(w["clientConfig"]["service"]["path"]);
  }
  // Enforcement only where the namespace is labelled for it: denials and failing closed.
  REQUIRE(validating["webhooks"].size() == 6);
  for (const auto& w : validating["webhooks"]) {
    std::string path = w["clientConfig"]["service"]["path"];
    paths.insert(path);
    bool enforce_label =
        w["namespaceSelector"].value("matchLabels", json::object()).value("shmguard.io/enforce", "") == "true";
    CHECK((w["failurePolicy"] == "Fail") == enforce_label);
    CHECK((path.rfind("/validate/enforce", 0) == 0) == enforce_label);
    if (!enforce_label) {
      CHECK(w["namespaceSelector"]["matchExpressions"].dump().find(
                R"({"key":"shmguard.io/enforce","operator":"NotIn","values":["true"]})") != std::string::npos);
    }
  }
  CHECK(paths == std::set<std::string>{
                     "/mutate", "/mutate/pod-security/baseline", "/mutate/pod-security/restricted", "/validate",
                     "/validate/pod-security/baseline", "/validate/pod-security/restricted", "/validate/enforce",
                     "/validate/enforce/pod-security/baseline", "/validate/enforce/pod-security/restricted"});
  const json& cert = objs["Certificate"];
  CHECK(cert["spec"]["secretName"] == "shmguard-tls");
  CHECK(cert["spec"]["dnsNames"][0] == "shmguard.shmguard-system.svc");
}

// The dry-run line of the README and the chart's NOTES: `kubectl api-resources -o name` filtered
// by a pattern that must name every kind shmguard evaluates, as kubectl names its resource.
TEST_CASE("the audit-before-install line covers every kind shmguard evaluates", "[deploy]") {
  const std::string readme = ReadTestdata("../../README.md");
  const std::string notes = ReadTestdata("../../charts/shmguard/templates/NOTES.txt");
  std::smatch m;
  REQUIRE(std::regex_search(readme, m, std::regex(R"(kubectl api-resources -o name \| grep -xE '([^']+)')")));
  const std::string pattern = m[1];
  CHECK(notes.find("grep -xE '" + pattern + "'") != std::string::npos);
  const std::regex names(pattern, std::regex::extended);
  int kinds = 0;
  for (const KindInfo& k : KnownKinds()) {
    if (k.resource.empty()) continue;  // Compose: not an API kind
    std::string api_version(k.api_version);
    size_t slash = api_version.find('/');
    std::string name = std::string(k.resource) + (slash == std::string::npos ? "" : "." + api_version.substr(0, slash));
    CAPTURE(name);
    CHECK(std::regex_match(name, names));
    ++kinds;
  }
  CHECK(kinds >= 25);
  CHECK_FALSE(std::regex_match(std::string("services"), names));
  CHECK_FALSE(std::regex_match(std::string("jobs.batchx"), names));
}

TEST_CASE("deploy/ ConfigMap policy loads with shmguard's config loader", "[deploy]") {
  auto objs = DeployObjects();
  std::string policy_yaml = objs["ConfigMap"]["data"]["policy.yaml"];
  auto policy = io::ParsePolicy(policy_yaml, "deploy/20-configmap.yaml");
  INFO((policy ? "" : policy.error().ToString()));
  REQUIRE(policy.has_value());
  CHECK(MatchNamespace(*policy, "shmguard-system").mode == NamespaceMode::kOff);
  CHECK(MatchNamespace(*policy, "kube-system").mode == NamespaceMode::kOff);
  // Installed cluster-wide, nothing is denied unless a namespace is labelled for it.
  CHECK(MatchNamespace(*policy, "ml-vision").mode == NamespaceMode::kWarn);
}

TEST_CASE("the Deployment's args start shmguard, as non-root on a read-only root, serving its probes and webhook paths",
          "[deploy][net]") {
  auto objs = DeployObjects();
  const json& c = objs["Deployment"]["spec"]["template"]["spec"]["containers"][0];
  auto deploy_args = Args(c);
  TempDir dir;
  IssueCert(dir.path(), "localhost", dir.File("tls.crt"), dir.File("tls.key"));
  std::ofstream(dir.File("policy.yaml")) << objs["ConfigMap"]["data"]["policy.yaml"].get<std::string>();
  int port = FreePort(), metrics_port = FreePort();
  std::vector<std::string> args;
  for (const auto& a : c["args"]) {  // the same args, files and ports moved to this machine
    std::string s = a;
    std::string flag = s.substr(0, s.find('='));
    if (flag == "--config") s = flag + "=" + dir.File("policy.yaml");
    if (flag == "--tls-cert-file") s = flag + "=" + dir.File("tls.crt");
    if (flag == "--tls-key-file") s = flag + "=" + dir.File("tls.key");
    if (flag == "--port") s = flag + "=" + std::to_string(port);
    if (flag == "--metrics-port") s = flag + "=" + std::to_string(metrics_port);
    args.push_back(s);
    if (flag == "--observations") {
      // Not in a pod: an API server that cannot be reached (port 1 on loopback refuses). The
      // webhook serves all the same, sizing from the formula while its watch retries.
      std::ofstream(dir.File("token")) << "t\n";
      for (std::string extra : {std::string("--api-server=https://127.0.0.1:1"), "--api-ca-file=" + dir.File("ca.crt"),
                                "--api-token-file=" + dir.File("token")}) {
        args.push_back(extra);
      }
    }
  }
  args.push_back("--bind-address=127.0.0.1");
  // As the Deployment runs it: user 65532 (runAsUser) on a read-only root filesystem
  // (readOnlyRootFilesystem), in a private mount namespace of this test.
  fs::permissions(dir.path(), fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                                  fs::perms::others_read | fs::perms::others_exec);
  for (const char* f : {"tls.crt", "tls.key", "policy.yaml", "ca.crt", "token"}) {
    fs::permissions(dir.File(f),
                    fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read | fs::perms::others_read);
  }
  std::string uid =
      std::to_string(objs["Deployment"]["spec"]["template"]["spec"]["securityContext"]["runAsUser"].get<int>());
  std::string command = "mount -o remount,bind,ro / && exec setpriv --reuid=" + uid + " --regid=" + uid +
                        " --clear-groups --no-new-privs \"$0\" \"$@\"";
  std::vector<std::string> wrapped = {"-m", "--propagation", "private", "sh", "-c", command, SHMGUARD_WEBHOOK_BINARY};
  wrapped.insert(wrapped.end(), args.begin(), args.end());
  Process p(wrapped, dir.File("log"), "unshare");
  REQUIRE(WaitReady(metrics_port, 10));
  httplib::Client metrics("127.0.0.1", metrics_port);
  for (const char* probe : {"readinessProbe", "livenessProbe"}) {
    auto res = metrics.Get(c[probe]["httpGet"]["path"].get<std::string>());
    REQUIRE(res);
    CHECK(res->status == 200);
  }
  for (const auto& cfg : {objs["MutatingWebhookConfiguration"], objs["ValidatingWebhookConfiguration"]}) {
    for (const auto& w : cfg["webhooks"]) {
      TlsConnection conn(port, dir.File("ca.crt"));
      REQUIRE(conn.ok());
      auto reply = conn.Post(
          w["clientConfig"]["service"]["path"].get<std::string>() + "?timeout=5s",
          ReviewJson(R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":"x"},"spec":{"containers":[]}})", "ml-a"));
      CHECK(reply.status == 200);
    }
  }
  p.Signal(SIGTERM);
  CHECK(p.Wait(15) == 0);
}

TEST_CASE("install-without-cert-manager.sh fills caBundle and the TLS Secret", "[deploy]") {
  TempDir dir;
  REQUIRE(std::system(("\"" + Source("scripts/install-without-cert-manager.sh") + "\" --output " + dir.path() +
                       " >/dev/null 2>&1")
                          .c_str()) == 0);
  int webhooks = 0;
  std::string ca_pem;
  for (const auto& entry : fs::directory_iterator(dir.path())) {
    auto text = io::ReadFileText(entry.path().string());
    REQUIRE(text.has_value());
    CHECK(text->find("cert-manager") == std::string::npos);
    for (const auto& d : io::ParseManifests(*text, entry.path().string())) {
      REQUIRE(d.object.has_value());
      const json o = d.object->ToJson();
      if (o["kind"] == "Secret") {
        CHECK(o["type"] == "kubernetes.io/tls");
        ca_pem = DecodeBase64(o["data"]["ca.crt"]);
        CHECK(DecodeBase64(o["data"]["tls.key"]).find("PRIVATE KEY") != std::string::npos);
      }
      if (o["kind"].get<std::string>().find("WebhookConfiguration") != std::string::npos) {
        for (const auto& w : o["webhooks"]) {
          ++webhooks;
          CHECK(w["clientConfig"].contains("caBundle"));
        }
      }
      CHECK(o["kind"] != "Certificate");
    }
  }
  CHECK(webhooks == 9);
  CHECK(ca_pem.find("BEGIN CERTIFICATE") != std::string::npos);
}

}  // namespace
}  // namespace shmguard::test
