// Compose documents: services read as one-container pods, shm_size and ulimits patched.
#include "core/workloads/compose.h"

#include <algorithm>
#include <cctype>
#include <charconv>

#include "core/values/compact_json.h"
#include "core/values/json_patch.h"
#include "core/values/quantity.h"

namespace shmguard {
namespace {

using nlohmann::json;

constexpr int64_t kMaxGpus = 1 << 20;  // more than any host has: a typo, not a count

Error Invalid(const std::string& pointer, std::string message) {
  return MakeError(Code::kInvalidInput, std::move(message), Location::Pointer(pointer));
}

// A device request's count "all", in any case.
bool IsAll(std::string_view text) {
  constexpr std::string_view kAll = "all";
  return std::equal(text.begin(), text.end(), kAll.begin(), kAll.end(),
                    [](char a, char b) { return std::tolower(static_cast<unsigned char>(a)) == b; });
}

// A scalar as Compose reads it into a string (numbers and booleans as YAML wrote them).
std::string ScalarText(JsonNode v) { return v.IsString() ? std::string(v.String()) : v ? v.Dump() : ""; }

// Words of `command` or `entrypoint`: a string (one shell line) or a list.
void AppendCommand(JsonNode value, json& into) {
  if (value.IsArray()) {
    for (JsonNode item : value.Items()) into.push_back(ScalarText(item));
  } else if (value) {
    into.push_back(ScalarText(value));
  }
}

// `environment` as a pod's env list: a mapping, or a list of "NAME=value" ("NAME" alone takes
// the value from the shell running Compose, which shmguard cannot know).
Result<json> ReadEnvironment(JsonNode value, const std::string& pointer) {
  json env = json::array();
  if (value.IsObject()) {
    for (const auto& [name, v] : value.Members()) {
      if (v) env.push_back({{"name", name}, {"value", ScalarText(v)}});
    }
  } else if (value.IsArray()) {
    for (JsonNode item : value.Items()) {
      std::string_view text = item.String();
      size_t eq = text.find('=');
      if (eq != std::string_view::npos) {
        env.push_back({{"name", text.substr(0, eq)}, {"value", text.substr(eq + 1)}});
      }
    }
  } else if (value) {
    return Invalid(pointer, "must be a mapping or a list of NAME=value");
  }
  return env;
}

// shmguard.io/* labels: a mapping, or a list of "key=value".
Result<json> ReadLabels(JsonNode value, const std::string& pointer) {
  json labels = json::object();
  auto keep = [&](std::string_view key, std::string text) {
    if (key.rfind(kAnnotationPrefix, 0) == 0) labels[std::string(key)] = std::move(text);
  };
  if (value.IsObject()) {
    for (const auto& [key, v] : value.Members()) keep(key, ScalarText(v));
  } else if (value.IsArray()) {
    for (JsonNode item : value.Items()) {
      std::string_view text = item.String();
      size_t eq = text.find('=');
      keep(text.substr(0, eq), eq == std::string_view::npos ? "" : std::string(text.substr(eq + 1)));
    }
  } else if (value) {
    return Invalid(pointer, "must be a mapping or a list of key=value");
  }
  return labels;
}

// GPUs a service reserves; `all` when a request takes every GPU of the host.
struct ServiceGpus {
  int64_t count = 0;
  bool all = false;
  std::string pointer;  // the request that asks for every GPU
};

// One device request (deploy.resources.reservations.devices[i] or gpus[i]): `count` (a number
// or "all"), else the number of `device_ids`, else all (compose-go types/device.go).
Result<bool> AddRequest(JsonNode request, const std::string& pointer, ServiceGpus& gpus) {
  if (!request.IsObject()) return Invalid(pointer, "must be a device request mapping");
  JsonNode count = request.Find("count");
  int64_t n = 0;
  if (count.IsInteger()) {
    n = count.Integer();
  } else if (count.IsString()) {
    std::string_view text = count.String();
    if (IsAll(text)) {
      n = -1;
    } else if (auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
               ec != std::errc() || end != text.data() + text.size()) {
      return Invalid(pointer + "/count", "must be a number or \"all\", not \"" + std::string(text) + "\"");
    }
  } else if (count) {
    return Invalid(pointer + "/count", "must be a number or \"all\"");
  } else if (JsonNode ids = request.Find("device_ids"); ids.IsArray()) {
    for ([[maybe_unused]] JsonNode id : ids.Items()) ++n;
  } else {
    n = -1;
  }
  if (n == -1) {
    gpus.all = true;
    if (gpus.pointer.empty()) gpus.pointer = pointer;
  } else if (n < 0 || n > kMaxGpus) {
    return Invalid(pointer + "/count", "must be \"all\" or a GPU count from 0 to " + std::to_string(kMaxGpus));
  } else {
    gpus.count = std::min(gpus.count + n, kMaxGpus);
  }
  return true;
}

// deploy.resources.reservations.devices with capabilities [gpu], and `gpus` (Compose 2.30).
Result<ServiceGpus> ReadGpus(JsonNode service, const std::string& at) {
  ServiceGpus gpus;
  std::string devices_at = at + "/deploy/resources/reservations/devices";
  JsonNode devices = service.Find("deploy").Find("resources").Find("reservations").Find("devices");
  if (devices && !devices.IsArray()) return Invalid(devices_at, "must be a list of device requests");
  size_t i = 0;
  for (JsonNode d : devices.Items()) {
    std::string pointer = devices_at + "/" + std::to_string(i++);
    bool gpu = false;
    for (JsonNode c : d.Find("capabilities").Items()) gpu = gpu || c.Is("gpu");
    if (!gpu) continue;
    auto added = AddRequest(d, pointer, gpus);
    if (!added) return added.error();
  }
  JsonNode requests = service.Find("gpus");
  if (requests.IsString()) {
    if (!requests.Is("all")) return Invalid(at + "/gpus", "must be \"all\" or a list of device requests");
    gpus.all = true;
    if (gpus.pointer.empty()) gpus.pointer = at + "/gpus";
  } else if (requests.IsArray()) {
    i = 0;
    for (JsonNode r : requests.Items()) {
      auto added = AddRequest(r, at + "/gpus/" + std::to_string(i++), gpus);
      if (!added) return added.error();
    }
  } else if (requests) {
    return Invalid(at + "/gpus", "must be \"all\" or a list of device requests");
  }
  return gpus;
}

// The memory limit: mem_limit, else deploy.resources.limits.memory.
struct ServiceMemory {
  std::optional<int64_t> bytes;
  std::string source, pointer;
};

Result<ServiceMemory> ReadMemory(JsonNode service, const std::string& at) {
  ServiceMemory m;
  if (JsonNode v = service.Find("mem_limit")) {
    auto bytes = ReadComposeBytes(v, at + "/mem_limit");
    if (!bytes) return bytes.error();
    m.bytes = *bytes;
    m.source = "mem_limit";
    m.pointer = at + "/mem_limit";
  } else if (JsonNode limit = service.Find("deploy").Find("resources").Find("limits").Find("memory")) {
    auto bytes = ReadComposeBytes(limit, at + "/deploy/resources/limits/memory");
    if (!bytes) return bytes.error();
    m.bytes = *bytes;
    m.source = "deploy.resources.limits.memory";
    m.pointer = at + "/deploy/resources/limits/memory";
  } else {
    m.source = "the service sets no mem_limit";
    m.pointer = at + "/mem_limit";
  }
  return m;
}

// How a service reaches RDMA through its `devices` (the RDMA verbs devices under
// /dev/infiniband, short "HOST[:CONTAINER[:PERMS]]" or long {source, target}): "devices
// /dev/infiniband/uverbs0", else "".
std::string RdmaDevices(JsonNode service) {
  constexpr std::string_view kVerbs = "/dev/infiniband";
  for (JsonNode d : service.Find("devices").Items()) {
    std::string_view path = d.IsString() ? d.String() : d.Find("source").String();
    path = path.substr(0, path.find(':'));
    if (path.substr(0, kVerbs.size()) == kVerbs && (path.size() == kVerbs.size() || path[kVerbs.size()] == '/')) {
      return "devices " + std::string(path.substr(0, 64));
    }
  }
  return {};
}

// The pod spec shmguard reads a service as: one container with its GPUs, memory limit, command
// and environment; hostIPC for `ipc: host`. Also fills the template's annotations (labels),
// memory source and notes.
Result<json> ServicePodSpec(JsonNode service, const std::string& name, const std::string& at, PodTemplate& t,
                            json& labels) {
  if (!service.IsObject()) return Invalid(at, "must be a service mapping");
  auto gpus = ReadGpus(service, at);
  if (!gpus) return gpus.error();
  auto memory = ReadMemory(service, at);
  if (!memory) return memory.error();
  auto env = ReadEnvironment(service.Find("environment"), at + "/environment");
  if (!env) return env.error();
  auto read_labels = ReadLabels(service.Find("labels"), at + "/labels");
  if (!read_labels) return read_labels.error();
  labels = std::move(*read_labels);

  json container = {{"name", name}, {"command", json::array()}, {"env", std::move(*env)}};
  AppendCommand(service.Find("entrypoint"), container["command"]);
  AppendCommand(service.Find("command"), container["command"]);
  int64_t count = gpus->count;
  if (gpus->all && count == 0) {
    count = 1;
    t.findings.push_back(Finding(Check::kComposeGpuCountUnknown, gpus->pointer));
  }
  json limits = json::object();
  if (count > 0) limits["nvidia.com/gpu"] = count;
  if (memory->bytes) limits["memory"] = std::to_string(*memory->bytes);
  container["resources"] = {{"limits", std::move(limits)}};
  t.memory_limit_source = memory->source;
  t.memory_limit_pointer = memory->pointer;
  t.rdma = RdmaDevices(service);
  return json{{"containers", json::array({std::move(container)})}, {"hostIPC", service.Find("ipc").Is("host")}};
}

}  // namespace

bool IsComposeDocument(JsonNode object) {
  return object.IsObject() && !object.Find("apiVersion") && !object.Find("kind") && object.Find("services").IsObject();
}

Result<Workload> ReadCompose(JsonNode object, Workload w) {
  JsonNode services = object.Find("services");
  if (!services.IsObject()) return Invalid("/services", "must be a mapping of services");
  w.kind = "Compose";
  w.name = object.StringMember("name");
  w.separate_pods = true;
  // Every template views this tree: filled completely before the first view is taken.
  auto built = std::make_shared<json>(json::object());
  std::vector<std::string> names;
  for (const auto& [name, service] : services.Members()) {
    PodTemplate t;
    t.label = "service " + std::string(name);
    t.spec_pointer = "/services/" + EscapePointerToken(name);
    t.metadata_pointer = t.spec_pointer + "/labels";
    t.compose_service = service;
    json labels;
    auto spec = ServicePodSpec(service, std::string(name), t.spec_pointer, t, labels);
    if (!spec) {
      t.error = spec.error();
      spec = json{{"containers", json::array()}};
    }
    (*built)[std::string(name)] = {{"spec", std::move(*spec)}, {"labels", std::move(labels)}};
    names.emplace_back(name);
    w.templates.push_back(std::move(t));
  }
  for (size_t i = 0; i < names.size(); ++i) {
    const json& entry = (*built)[names[i]];
    PodTemplate& t = w.templates[i];
    t.spec = entry["spec"];
    for (const auto& [key, value] : JsonNode(entry["labels"]).Members()) t.annotations.emplace(key, value);
  }
  w.built = std::move(built);
  return w;
}

}  // namespace shmguard
