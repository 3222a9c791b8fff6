// SpikeDomDecision: the benchmark Pod's decision over simdjson's DOM, its patch written as text.
// A measurement, not the product (see the header): every shape it does not cover is a 501.
#include "spike_dom_decision.h"

#include <simdjson.h>

#include <charconv>
#include <string>
#include <vector>

#include "server/admission_handler.h"
#include "shmguard/patch/shm_patch.h"
#include "shmguard/plan/shm_plan.h"
#include "shmguard/policy/policy.h"
#include "shmguard/values/compact_json.h"
#include "shmguard/values/quantity.h"
#include "shmguard/workloads/pod_templates.h"

namespace shmguard::bench {
namespace {

namespace dom = simdjson::dom;

std::string_view StringAt(dom::element e, std::string_view key) {
  std::string_view s;
  return e[key].get_string().get(s) ? std::string_view() : s;
}

// A decimal count, or -1.
int64_t Count(std::string_view s) {
  int64_t v = -1;
  auto [end, err] = std::from_chars(s.data(), s.data() + s.size(), v);
  return err == std::errc() && end == s.data() + s.size() && v >= 0 ? v : -1;
}

std::string Unsupported(int& status, const char* why) {
  status = 501;
  return std::string("spike: ") + why;
}

struct Container {
  int index = 0;
  int64_t gpus = 0;
};

}  // namespace

std::string SpikeDomDecision(std::string_view body, bool padded, int& status) {
  thread_local dom::parser parser;
  dom::element review, object, spec;
  dom::object annotations;
  if (parser.parse(body.data(), body.size(), /*realloc_if_needed=*/!padded).get(review) ||
      review["request"]["object"].get(object) || object["spec"].get(spec) ||
      object["metadata"]["annotations"].get_object().get(annotations)) {
    return Unsupported(status, "not a Pod review with annotations");
  }
  if (StringAt(object, "kind") != "Pod") return Unsupported(status, "not a Pod");
  const std::string_view uid = StringAt(review["request"], "uid");
  if (uid.empty() || uid.find_first_not_of("0123456789abcdef-") != std::string_view::npos) {
    return Unsupported(status, "a uid that is not a UUID");  // written into the answer unescaped
  }
  std::string_view text;
  if (annotations[kPlanAnnotation].get_string().get(text) == simdjson::SUCCESS) {
    return Unsupported(status, "already planned");
  }
  ShmInputs in;
  in.workers = annotations[kNumWorkersAnnotation].get_string().get(text) ? -1 : Count(text);
  if (!annotations[kPrefetchFactorAnnotation].get_string().get(text)) in.prefetch_factor = Count(text);
  if (in.workers < 1 || in.prefetch_factor < 1 || annotations[kBatchBytesAnnotation].get_string().get(text)) {
    return Unsupported(status, "sizing annotations");
  }
  auto batch = ParseBytes(text, kBatchBytesAnnotation);
  if (!batch) return Unsupported(status, "batch-bytes");
  in.batch_bytes = *batch;

  std::vector<Container> containers;
  int64_t gpus = 0, memory = 0;
  dom::array list;
  if (spec["containers"].get_array().get(list)) return Unsupported(status, "no containers");
  for (dom::element c : list) {
    Container x{static_cast<int>(containers.size()), 0};
    dom::object limits;
    if (c["resources"]["limits"].get_object().get(limits) || limits["memory"].get_string().get(text)) {
      return Unsupported(status, "a container without a memory limit");
    }
    auto bytes = ParseBytes(text, "memory");
    if (!bytes) return Unsupported(status, "memory limit");
    memory += *bytes;
    if (!limits["nvidia.com/gpu"].get_string().get(text)) x.gpus = Count(text);
    if (x.gpus < 0) return Unsupported(status, "GPU count");
    gpus += x.gpus;
    dom::array env;
    if (x.gpus > 0 && !c["env"].get_array().get(env)) {
      for (dom::element e : env) {
        if (StringAt(e, "name") == "PET_NPROC_PER_NODE") in.procs = Count(StringAt(e, "value"));
      }
    }
    dom::array mounts;
    if (!c["volumeMounts"].get_array().get(mounts)) {
      for (dom::element m : mounts) {
        if (StringAt(m, "mountPath") == kShmPath) return Unsupported(status, "/dev/shm mounted");
      }
    }
    dom::element security;
    if (x.gpus > 0 && !c["securityContext"].get(security)) return Unsupported(status, "securityContext");
    containers.push_back(x);
  }
  if (in.procs < 1) return Unsupported(status, "PET_NPROC_PER_NODE");
  dom::array volumes;
  if (spec["volumes"].get_array().get(volumes)) return Unsupported(status, "no volumes");
  for (dom::element v : volumes) {
    if (StringAt(v, "name") == kShmVolumeName) return Unsupported(status, "a dshm volume");
  }
  bool host_ipc = false;
  if (spec["hostIPC"].get_bool().get(host_ipc) != simdjson::SUCCESS) host_ipc = false;

  auto plan = PlanShm(in, SizingConstants{});  // the default policy's, as the decide server uses
  if (!plan || plan->required_bytes > memory / 2) return Unsupported(status, "plan or memory limit");
  const std::string required = FormatBytes(plan->required_bytes);
  // The plan annotation's value, as PlanAnnotation writes it.
  const std::string plan_value = R"({"batchBytes":")" + FormatBytes(in.batch_bytes) + R"(","gpus":)" +
                                 std::to_string(gpus) + R"(,"nodes":1,"prefetchFactor":)" +
                                 std::to_string(in.prefetch_factor) + R"(,"procs":)" + std::to_string(in.procs) +
                                 R"(,"required":")" + required + R"(","workers":)" + std::to_string(in.workers) + "}";
  const bool add_host_ipc = gpus > 1 && !host_ipc;
  std::string patch = R"([{"op":"add","path":"/spec/volumes/-","value":{"emptyDir":{"medium":"Memory","sizeLimit":")" +
                      required + R"("},"name":"dshm"}})";
  for (const Container& c : containers) {
    const std::string path = "/spec/containers/" + std::to_string(c.index);
    patch += R"(,{"op":"add","path":")" + path + R"(/volumeMounts/-","value":{"mountPath":"/dev/shm","name":"dshm"}})";
    if (c.gpus > 0) {
      patch +=
          R"(,{"op":"add","path":")" + path + R"(/securityContext","value":{"capabilities":{"add":["IPC_LOCK"]}}})";
    }
  }
  if (add_host_ipc) patch += R"(,{"op":"add","path":"/spec/hostIPC","value":true})";
  patch += R"(,{"op":"add","path":"/metadata/annotations/shmguard.io~1plan","value":)" + JsonQuoted(plan_value) + "}]";
  status = 200;
  return R"({"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","response":{"uid":")" + std::string(uid) +
         R"(","allowed":true,"patchType":"JSONPatch","patch":")" + server::Base64(patch) + R"("}})";
}

}  // namespace shmguard::bench
