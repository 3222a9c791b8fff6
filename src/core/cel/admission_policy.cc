// ExportAdmissionPolicies: the webhook's Pod path (pod_facts.cc, launch_facts.cc, shm_plan.cc,
// shm_estimate.cc, memory_limit.cc, shm_mount.cc, shm_patch.cc, shm_remedy.cc) as CEL variables
// that the mutating and the validating policies share (pod_variables.cc), after the policy's own
// values, each a variable whose expression is a literal. docs/policy-mode.md lists what is left
// out.
#include "core/cel/admission_policy.h"

#include <algorithm>
#include <string_view>

#include "core/cel/internal/cel_text.h"
#include "core/cel/internal/pod_variables.h"
#include "core/cel/internal/policy_mutation.h"
#include "core/checks/checks.h"
#include "core/facts/shm_mount.h"
#include "core/values/glob.h"
#include "core/workloads/pod_templates.h"

namespace shmguard {

using cel::CelArray;
using cel::CelBool;
using cel::CelInt;
using cel::CelList;
using cel::CelString;
using cel::CelVariables;
using cel::PatchExpression;
using cel::PlanExpression;
using cel::PodVariables;
using cel::QuantityText;
using cel::RegexOf;
using cel::ResizeVariables;
namespace {

using nlohmann::json;

// The namespace rules as CEL: each rule's regex, then for every setting one CEL value per rule,
// the last for the {mode: warn} a namespace matching no rule gets.
struct RuleValues {
  std::vector<std::string> regexes, levels, lock, host_ipc, require, enforce, ignore, off;
};

Result<RuleValues> ReadRules(const Policy& policy) {
  if (policy.namespaces.size() > kMaxCelNamespaceRules) {
    return MakeError(Code::kInvalidInput, "namespaces: " + std::to_string(policy.namespaces.size()) +
                                              " rules, more than the " + std::to_string(kMaxCelNamespaceRules) +
                                              " policy mode writes into CEL");
  }
  RuleValues r;
  for (size_t i = 0; i <= policy.namespaces.size(); ++i) {
    const bool fallback = i == policy.namespaces.size();
    NamespaceRule rule = fallback ? NamespaceRule{} : policy.namespaces[i];
    r.levels.push_back(CelInt(static_cast<int>(rule.pod_security)));
    const IpcLockMode lock_mode = IpcLockIn(policy, rule);
    r.lock.push_back(CelInt(lock_mode == IpcLockMode::kAuto     ? 0
                            : lock_mode == IpcLockMode::kAlways ? 1
                            : lock_mode == IpcLockMode::kAll    ? 2
                                                                : 3));
    r.host_ipc.push_back(CelBool(HostIpcIn(policy, rule) == HostIpcMode::kAlways));
    r.require.push_back(CelBool(rule.require_annotations));
    r.enforce.push_back(CelBool(rule.mode == NamespaceMode::kEnforce));
    r.off.push_back(CelBool(rule.mode == NamespaceMode::kOff));
    std::vector<std::string> ids;
    for (Check c : rule.ignore) ids.emplace_back(InfoOf(c).id);
    r.ignore.push_back(CelList(ids));
    if (fallback) break;
    auto regex = RegexOf(rule.match);
    if (!regex) {
      return MakeError(Code::kInvalidInput, "namespaces[" + std::to_string(i) + "].match: " + regex.error().message);
    }
    if (regex->size() > kMaxCelRegexBytes) {
      return MakeError(Code::kInvalidInput,
                       "namespaces[" + std::to_string(i) + "].match: its globs make a regular expression of " +
                           std::to_string(regex->size()) + " bytes, more than the " +
                           std::to_string(kMaxCelRegexBytes) + " policy mode writes into CEL; split the rule");
    }
    r.regexes.push_back(*regex);
  }
  return r;
}

// A setting's values by rule: the one value when every rule has it (no regex runs then), else a
// list read at the rule's index.
std::string ByRule(const std::vector<std::string>& values) {
  if (std::all_of(values.begin(), values.end(), [&](const std::string& v) { return v == values[0]; })) {
    return values[0];
  }
  return CelArray(values) + "[variables.rule]";
}

// The policy's values, each a variable of its own whose expression is a literal: every
// expression of PodVariables is fixed text that reads them, and nothing is filled in by
// rescanning.
Result<CelVariables> PolicyValues(const Policy& policy, const PolicyExportOptions& o, const RuleValues& r) {
  auto rdma = RegexOf(policy.rdma_resources);
  if (!rdma) return MakeError(Code::kInvalidInput, "rdmaResources: " + rdma.error().message);
  std::vector<std::string> names = {kShmVolumeName};
  for (int i = 1; i <= 16; ++i) names.push_back(std::string(kShmVolumeName) + "-" + std::to_string(i));
  const auto& k = policy.sizing;
  return CelVariables{
      {"ruleRegexes", CelList(r.regexes)},
      {"ruleLevel", ByRule(r.levels)},
      {"ruleLock", ByRule(r.lock)},
      {"ruleHostIpc", ByRule(r.host_ipc)},
      {"ruleRequire", ByRule(r.require)},
      {"ruleEnforce", ByRule(r.enforce)},
      {"ruleIgnore", ByRule(r.ignore)},
      {"podSecurityLabel", CelString(o.pod_security_label)},
      {"enforceLabel", CelString(o.enforce_label)},
      {"gpuResources", CelList(policy.gpu_resources)},
      {"mpsResources", CelList(policy.mps_resources)},
      {"rdmaRegex", CelString(policy.rdma_resources.empty() ? "^$^" : *rdma)},
      {"prefetchDefault", CelInt(k.prefetch_factor)},
      {"safetyPpm", CelInt(k.safety_ppm)},
      {"baseBytes", CelInt(k.base_bytes)},
      {"multiGpuFloorBytes", CelInt(k.multi_gpu_floor_bytes)},
      {"ncclConnectionBytes", CelInt(k.nccl_connection_bytes)},
      {"ncclProxyBytes", CelInt(k.nccl_proxy_pool_bytes)},
      {"inFlightExtra", CelInt(k.in_flight_extra)},
      {"minimumBytes", CelInt(policy.unannotated.minimum_bytes)},
      {"fractionPpm", CelInt(policy.unannotated.fraction_ppm)},
      {"maxFractionPpm", CelInt(policy.max_fraction_ppm)},
      {"unannotatedFloor", CelBool(policy.unannotated.mode == UnannotatedMode::kFloor)},
      {"unannotatedLeave", CelBool(policy.unannotated.mode == UnannotatedMode::kLeave)},
      {"volumeNames", CelList(names)},
      {"initMountsAll", CelBool(policy.init_container_mounts == ContainerSelection::kAll)},
      {"initMountsGpu", CelBool(policy.init_container_mounts == ContainerSelection::kGpuContainers)},
  };
}

json Variable(const std::string& name, const std::string& expression) {
  return {{"name", name}, {"expression", expression}};
}

// The rule's regexes, the rule, then the values and the rest of `pod`'s variables (a variable
// reads only those before it; `pod` begins with the rule).
json Variables(const CelVariables& values, const CelVariables& pod) {
  json variables = json::array();
  for (const auto& [name, expression] : values) {
    variables.push_back(Variable(name, expression));
    if (name == "ruleRegexes") variables.push_back(Variable(pod[0].first, pod[0].second));
  }
  for (size_t i = 1; i < pod.size(); ++i) variables.push_back(Variable(pod[i].first, pod[i].second));
  return variables;
}

// Which pods reach the policies at all: as the chart's webhooks' matchConditions, and not in a
// namespace whose rule is `mode: off`, nor opted out with shmguard.io/mode. matchConditions read
// no variables: the first rule that matches is computed in place.
json MatchConditions(const Policy& policy, const RuleValues& r) {
  json conditions = json::array();
  const std::string gpus = CelList(policy.gpu_resources);
  conditions.push_back(
      {{"name", "gpu-pod-or-annotated"},
       {"expression",
        "(has(object.metadata.annotations) && object.metadata.annotations.exists(k, k.startsWith('shmguard.io/'))) || "
        "(object.spec.containers + (has(object.spec.initContainers) ? object.spec.initContainers : [])).exists(c, "
        "has(c.resources) && ((has(c.resources.limits) && " +
            gpus + ".exists(g, g in c.resources.limits)) || (has(c.resources.requests) && " + gpus +
            ".exists(g, g in c.resources.requests))))"}});
  if (std::find(r.off.begin(), r.off.end(), "true") != r.off.end()) {
    std::string rule;
    for (const auto& regex : r.regexes) rule += (rule.empty() ? "" : ", ") + CelString(regex);
    rule = "([" + rule + "].transformList(i, r, request.namespace.matches(r), i) + [" +
           std::to_string(r.regexes.size()) + "])[0]";
    conditions.push_back(
        {{"name", "namespace-rule-not-off"}, {"expression", "!" + CelArray(r.off) + "[" + rule + "]"}});
  }
  conditions.push_back({{"name", "not-opted-out"},
                        {"expression", "!has(object.metadata.annotations) || !('" + std::string(kModeAnnotation) +
                                           "' in object.metadata.annotations)"}});
  return conditions;
}

json ResourceRules(const char* operation = "CREATE", const char* resource = "pods") {
  return json::array(
      {{{"apiGroups", {""}}, {"apiVersions", {"v1"}}, {"operations", {operation}}, {"resources", {resource}}}});
}

// The MutatingAdmissionPolicy, with the plan's variable after the shared ones.
json MutatingPolicy(const PolicyExportOptions& o, const json& conditions, json variables) {
  variables.push_back(Variable("plan", PlanExpression()));
  return {
      {"apiVersion", "admissionregistration.k8s.io/v1"},
      {"kind", "MutatingAdmissionPolicy"},
      {"metadata", {{"name", o.name}}},
      {"spec",
       {{"matchConstraints", {{"resourceRules", ResourceRules()}}},
        {"matchConditions", conditions},
        {"failurePolicy", "Ignore"},
        {"reinvocationPolicy", "Never"},
        {"variables", variables},
        {"mutations",
         json::array({{{"patchType", "JSONPatch"}, {"jsonPatch", {{"expression", PatchExpression(o.hybrid)}}}}})}}}};
}

// A check as two ValidatingAdmissionPolicies, `<name>-enforce` (denies) and `<name>-warn` (warns),
// and their bindings. matchConditions have no namespaceObject: which of the two applies is each
// validation's first term, variables.enforce.
struct Validation {
  std::string name;
  json rules, conditions, variables, validations;
};

void AddEnforceAndWarn(const Validation& v, const json& selector, std::vector<json>& out) {
  for (const bool enforcing : {true, false}) {
    const std::string name = v.name + (enforcing ? "-enforce" : "-warn");
    json checks = v.validations;
    for (auto& c : checks) {
      c["expression"] =
          std::string(enforcing ? "!" : "") + "variables.enforce || (" + c["expression"].get<std::string>() + ")";
    }
    out.push_back({{"apiVersion", "admissionregistration.k8s.io/v1"},
                   {"kind", "ValidatingAdmissionPolicy"},
                   {"metadata", {{"name", name}}},
                   {"spec",
                    {{"matchConstraints", {{"resourceRules", v.rules}}},
                     {"matchConditions", v.conditions},
                     {"failurePolicy", "Ignore"},
                     {"variables", v.variables},
                     {"validations", checks}}}});
    out.push_back({{"apiVersion", "admissionregistration.k8s.io/v1"},
                   {"kind", "ValidatingAdmissionPolicyBinding"},
                   {"metadata", {{"name", name}}},
                   {"spec",
                    {{"policyName", name},
                     {"validationActions", enforcing ? json::array({"Deny"}) : json::array({"Warn"})},
                     {"matchResources", {{"namespaceSelector", selector}}}}}});
  }
}

// Creation: validation sees the object after mutation: what is wrong, as the policies'
// `problems` says; and a /dev/shm still below need (the mutation did not run, failed or was
// exempted).
Validation CreationChecks(const PolicyExportOptions& o, const json& conditions, const json& variables) {
  const json validations = json::array(
      {{{"expression", "size(variables.problems) == 0"},
        {"messageExpression", "'shmguard: ' + variables.problems.join('; ')"},
        {"reason", "Invalid"}},
       {{"expression",
         "variables.targetBytes < 0 || !variables.shmParts || (variables.mountKind == 1 && variables.sizeLimit != 0 && "
         "variables.sizeLimit >= variables.targetBytes && variables.gpuContainersMount)"},
        {"messageExpression",
         "'shmguard: /dev/shm needs ' + string(variables.targetBytes) + ' bytes; the pod was not patched'"},
        {"reason", "Invalid"}}});
  // The mutating policy's own verdict, which it writes into every pod it matches: a pod it found
  // nothing wrong with and patched is not evaluated again.
  json vconditions = conditions;
  vconditions.push_back(
      {{"name", "not-judged-ok"},
       {"expression",
        "!has(object.metadata.annotations) || !('shmguard.io/plan' in object.metadata.annotations) || "
        "!object.metadata.annotations['shmguard.io/plan'].endsWith(',\"verdict\":\"ok\"}')"}});
  return {o.name, ResourceRules(), vconditions, variables, validations};
}

// A resize of a running pod (docs/checks.md#resize-below-shm; verdict/resize.h EvaluateResize).
Validation ResizeChecks(const PolicyExportOptions& o, const json& conditions, const CelVariables& values) {
  const json validations = json::array(
      {{{"expression", "variables.resizeFits || !variables.resizeWorse || '" +
                           std::string(InfoOf(Check::kResizeBelowShm).id) + "' in variables.exempt"},
        {"messageExpression",
         "'shmguard: this resize leaves the memory limit ' + " + QuantityText("variables.newLimit") +
             " + ' too small for ' + variables.shmName + '\\'s ' + " + QuantityText("variables.newShm") +
             " + ' of /dev/shm (resize-below-shm): it may take at most ' + string(variables.maxFractionPpm) + "
             "' ppm of the limit; keep the limit at ' + " +
             QuantityText("variables.resizeMinimum") + " + ' or more'"},
        {"reason", "Invalid"}}});
  return {o.name + "-resize", ResourceRules("UPDATE", "pods/resize"), conditions, Variables(values, ResizeVariables()),
          validations};
}

}  // namespace

Result<std::vector<json>> ExportAdmissionPolicies(const Policy& policy, const PolicyExportOptions& o) {
  auto rules = ReadRules(policy);
  if (!rules) return rules.error();
  auto values = PolicyValues(policy, o, *rules);
  if (!values) return values.error();
  const json variables = Variables(*values, PodVariables());
  const json conditions = MatchConditions(policy, *rules);
  const json selector = {
      {"matchExpressions",
       json::array({{{"key", "kubernetes.io/metadata.name"}, {"operator", "NotIn"}, {"values", o.excluded_namespaces}},
                    {{"key", o.enabled_label}, {"operator", "NotIn"}, {"values", {"false"}}}})}};
  std::vector<json> out;
  out.push_back(MutatingPolicy(o, conditions, variables));
  out.push_back({{"apiVersion", "admissionregistration.k8s.io/v1"},
                 {"kind", "MutatingAdmissionPolicyBinding"},
                 {"metadata", {{"name", o.name}}},
                 {"spec", {{"policyName", o.name}, {"matchResources", {{"namespaceSelector", selector}}}}}});
  if (!o.hybrid) {
    AddEnforceAndWarn(CreationChecks(o, conditions, variables), selector, out);
    AddEnforceAndWarn(ResizeChecks(o, conditions, *values), selector, out);
  }
  for (json& object : out) {  // every name, and every name a binding refers to, with the suffix
    object["metadata"]["name"] = object["metadata"]["name"].get<std::string>() + o.name_suffix;
    if (json* spec = &object["spec"]; spec->contains("policyName")) {
      (*spec)["policyName"] = (*spec)["policyName"].get<std::string>() + o.name_suffix;
    }
  }
  return out;
}

std::string GlobToRegex(std::string_view glob) {
  auto r = GlobRegex(glob);
  return r ? *r : std::string();
}

}  // namespace shmguard
