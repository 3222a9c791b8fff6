// The launcher's side of a pod: how many training processes it runs, how many such pods train
// together, and the NCCL settings that change /dev/shm, from the pod's annotations, its kind's
// fields, and its app containers' env and torchrun flags (docs/sources.md §2).
#include "core/facts/launch_facts.h"

#include <algorithm>
#include <cctype>
#include <iterator>

#include "core/plan/shm_plan.h"
#include "core/values/json_patch.h"

namespace shmguard {
namespace {

// "4" -> 4, "1:4" (elastic min:max) -> 4; nullopt otherwise.
std::optional<int64_t> ParseNodeCount(std::string_view s) {
  size_t colon = s.find(':');
  return ParseCount(colon == std::string_view::npos ? s : s.substr(colon + 1));
}

// Value of `--flag=V` or `--flag V` in a container's command/args, unquoted; "" if absent. The
// command and args are read as one line joined with spaces, its first kLaunchSearchBytes only,
// as policy mode's CEL reads them (admission_policy.cc launchLines).
std::string FindFlag(JsonNode container, std::initializer_list<std::string_view> flags) {
  std::string line;
  bool first = true;
  for (const char* field : {"command", "args"}) {
    for (JsonNode item : container.Find(field).Items()) {
      if (line.size() > kLaunchSearchBytes) break;
      if (!first) line += ' ';
      line += item.String();
      first = false;
    }
  }
  if (line.size() > kLaunchSearchBytes) line.resize(kLaunchSearchBytes);
  auto unquote = [](std::string_view word) {
    std::string v(word);
    v.erase(std::remove_if(v.begin(), v.end(), [](char c) { return c == '"' || c == '\''; }), v.end());
    return v;
  };
  // Whitespace-separated words, as a shell would split them (isspace in the C locale).
  auto is_space = [](char c) { return c == ' ' || (c >= '\t' && c <= '\r'); };
  bool value_next = false;  // the previous word was a flag: this one is its value
  std::string_view text = line;
  for (size_t i = 0; i < text.size();) {
    while (i < text.size() && is_space(text[i])) ++i;
    size_t start = i;
    while (i < text.size() && !is_space(text[i])) ++i;
    if (i == start) continue;
    std::string_view word = text.substr(start, i - start);
    if (value_next) return unquote(word);
    for (std::string_view flag : flags) {
      value_next = value_next || word == flag;
      if (word.size() > flag.size() && word.substr(0, flag.size()) == flag && word[flag.size()] == '=') {
        return unquote(word.substr(flag.size() + 1));
      }
    }
  }
  return {};
}

// The env values the launcher's side reads, from one pass over a container's env list: each
// variable's first entry with a string value, as the kubelet would set it; "" when absent.
struct LaunchEnv {
  std::string_view nproc_per_node, nnodes, nccl_shm_disable, nccl_p2p_disable;
  // What selects an RDMA transport (RdmaFromEnv).
  std::string_view nccl_net, nccl_ib_hca, nccl_ib_disable, nccl_net_plugin, fi_provider, ucx_net_devices;
};

// Each variable and where it goes: a new variable is a row here and a field above.
struct LaunchEnvRow {
  std::string_view name;
  std::string_view LaunchEnv::*field;
};
constexpr LaunchEnvRow kLaunchEnv[] = {
    {"PET_NPROC_PER_NODE", &LaunchEnv::nproc_per_node},
    {"PET_NNODES", &LaunchEnv::nnodes},
    {"NCCL_SHM_DISABLE", &LaunchEnv::nccl_shm_disable},
    {"NCCL_P2P_DISABLE", &LaunchEnv::nccl_p2p_disable},
    {"NCCL_NET", &LaunchEnv::nccl_net},
    {"NCCL_IB_HCA", &LaunchEnv::nccl_ib_hca},
    {"NCCL_IB_DISABLE", &LaunchEnv::nccl_ib_disable},
    {"NCCL_NET_PLUGIN", &LaunchEnv::nccl_net_plugin},
    {"FI_PROVIDER", &LaunchEnv::fi_provider},
    {"UCX_NET_DEVICES", &LaunchEnv::ucx_net_devices},
};
// A name shorter than every row's is none of them: most of an env list is passed over on this.
constexpr size_t kShortestLaunchEnv =
    std::min_element(std::begin(kLaunchEnv), std::end(kLaunchEnv),
                     [](const auto& a, const auto& b) { return a.name.size() < b.name.size(); }) -> name.size();

LaunchEnv ReadLaunchEnv(JsonNode container) {
  LaunchEnv out;
  unsigned seen = 0;  // bit i: row i's variable has its value
  for (JsonNode e : container.Find("env").Items()) {
    JsonNode name = e.Find("name");
    if (!name.IsString()) continue;
    const std::string_view n = name.String();
    if (n.size() < kShortestLaunchEnv) continue;
    for (unsigned i = 0; i < std::size(kLaunchEnv); ++i) {
      if ((seen >> i & 1) || n != kLaunchEnv[i].name) continue;
      JsonNode v = e.Find("value");
      if (v.IsString()) {
        out.*kLaunchEnv[i].field = v.String();
        seen |= 1u << i;
      }
      break;
    }
  }
  return out;
}

bool EqualsIgnoringCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) != std::tolower(static_cast<unsigned char>(b[i]))) return false;
  }
  return true;
}

// "env NAME=VALUE", the value cut to 64 bytes: it goes into findings and warnings.
std::string EnvReason(std::string_view name, std::string_view value) {
  constexpr size_t kMax = 64;
  std::string out = "env " + std::string(name) + "=" + std::string(value.substr(0, kMax));
  if (value.size() > kMax) out += "...";
  return out;
}

// Why the env has a container register host memory for RDMA, or "" (docs/sources.md §6):
// NCCL's IB transport, chosen by NCCL_NET=IB (compared without case, NVIDIA/nccl
// src/plugin/net.cc) or NCCL_IB_HCA, unless NCCL_IB_DISABLE=1 (src/transport/net_ib/init.cc);
// an external NCCL net plugin (NCCL_NET_PLUGIN other than "none": aws-ofi-nccl for EFA, the
// SHARP and gIB plugins); libfabric's EFA provider (FI_PROVIDER=efa); UCX given an RDMA device,
// which UCX names DEVICE:PORT (openucx/ucx src/uct/ib/base/ib_device.c).
std::string RdmaFromEnv(const LaunchEnv& e) {
  const bool ib_disabled = e.nccl_ib_disable == "1";
  if (!ib_disabled && EqualsIgnoringCase(e.nccl_net, "IB")) return EnvReason("NCCL_NET", e.nccl_net);
  if (!ib_disabled && !e.nccl_ib_hca.empty()) return EnvReason("NCCL_IB_HCA", e.nccl_ib_hca);
  if (!e.nccl_net_plugin.empty() && !EqualsIgnoringCase(e.nccl_net_plugin, "none")) {
    return EnvReason("NCCL_NET_PLUGIN", e.nccl_net_plugin);
  }
  if (EqualsIgnoringCase(e.fi_provider, "efa")) return EnvReason("FI_PROVIDER", e.fi_provider);
  if (e.ucx_net_devices.find(':') != std::string_view::npos) return EnvReason("UCX_NET_DEVICES", e.ucx_net_devices);
  return {};
}

// What the pod's app containers say, each read once: the containers' facts beside their nodes
// and env (init containers: none).
struct Launch {
  const PodTemplate& t;
  const std::vector<ContainerFacts>& containers;
  const std::vector<JsonNode>& nodes;
  std::vector<LaunchEnv> env;
  int64_t gpus;

  Launch(const PodTemplate& pod, const std::vector<JsonNode>& container_nodes, const PodFacts& f)
      : t(pod), containers(f.containers), nodes(container_nodes), env(nodes.size()), gpus(f.gpus) {
    for (size_t i = 0; i < nodes.size(); ++i) {
      if (!containers[i].init) env[i] = ReadLaunchEnv(nodes[i]);
    }
  }
};

// A count and where it was read: "annotation shmguard.io/procs-per-pod", "4 GPUs in the pod".
struct Counted {
  int64_t n = 1;
  std::string source;
  bool stated = false;  // written in the pod, not taken from its GPUs
  std::string pointer;
};
// "annotation NAME". Built in a buffer sized first: GCC 12's -Warray-bounds misreads the sum of a
// literal and a string as a copy past the short-string buffer.
std::string AnnotationWords(std::string_view name) {
  std::string words;
  words.reserve(sizeof("annotation ") + name.size());
  words.append("annotation ").append(name);
  return words;
}
// A count not written as one: the GPUs', the kind's pod count, a default.
Counted Unstated(int64_t n, std::string source) { return {n, std::move(source), false, {}}; }

// The inference server the first app container that launches one launches, or what could not
// be read of it.
struct ServerFound {
  std::optional<ServerLaunch> server;
  std::vector<ServerLaunch> more;  // the other app containers' servers (prefill and decode side by side)
  std::optional<Error> unread;
};

// KubeRay's `ray start`, as KubeRay writes it (its object store as rayStartParams set it).
Result<ServerLaunch> KubeRayStart(const PodTemplate& t) {
  ServerLaunch ray;
  ray.server = Server::kRay;
  ray.launched_by = "KubeRay's ray start";
  ray.pointer = t.spec_pointer;
  ray.ray_started = true;
  if (!t.ray_object_store.empty()) {
    const std::string written = "rayStartParams.object-store-memory=" + t.ray_object_store;
    ray.read.push_back(written);
    auto n = ParseCount(t.ray_object_store);
    if (!n || *n < 1) {
      return MakeError(Code::kInvalidInput, written + " is not a number of bytes", Location::Pointer(t.spec_pointer));
    }
    ray.object_store_bytes = *n;
  }
  return ray;
}

// Not looked for in a pod sized from DataLoader annotations, which a server's plan never
// replaces, nor where servers are not sized (policy mode). A KubeRay pod runs `ray start` as
// KubeRay writes it, not as its command says.
Result<ServerFound> ReadServer(const Launch& l) {
  ServerFound found;
  const PodTemplate& t = l.t;
  if (!t.servers_sized || t.annotations.count(kNumWorkersAnnotation) != 0 ||
      t.annotations.count(kBatchBytesAnnotation) != 0) {
    return found;
  }
  // Every app container's server: two in one pod share its /dev/shm.
  for (size_t i = 0; i < l.nodes.size(); ++i) {
    if (l.containers[i].init) continue;
    const ContainerConfig* config = nullptr;
    for (const auto& [name, c] : t.container_config) {
      if (name == l.containers[i].name) config = &c;
    }
    auto server = ReadServerLaunch(l.nodes[i], l.containers[i].pointer, config);
    if (!server && server.error().code == Code::kUnsupportedKind) {
      found.unread = server.error();
      break;
    }
    if (!server) return server.error();
    if (!*server) continue;
    (*server)->container_gpus = l.containers[i].gpus;
    if (!found.server) {
      found.server = std::move(**server);
    } else {
      found.more.push_back(std::move(**server));
    }
  }
  const bool ray_container = !l.containers.empty() && !l.containers[0].init;
  if (t.ray_node && ray_container && (!found.server || found.server->server == Server::kRay)) {
    auto ray = KubeRayStart(t);
    if (!ray) return ray.error();
    found.server = std::move(*ray);
    found.more.clear();
  }
  return found;
}

// "auto" and "gpu" (torchrun's words) mean the GPU count, when the pod has GPUs.
bool GpuWords(const std::string& v, int64_t gpus) { return (v == "auto" || v == "gpu") && gpus > 0; }

// Processes per pod, in the order of docs/sources.md §2.
Result<Counted> ReadProcs(const Launch& l) {
  const PodTemplate& t = l.t;
  const int64_t gpus = l.gpus;
  auto annotated = ReadCountAnnotation(t.annotations, kProcsPerPodAnnotation, 1, kMaxProcs);
  if (!annotated) return annotated.error();
  if (*annotated) {
    return Counted{**annotated, AnnotationWords(kProcsPerPodAnnotation), true,
                   t.AnnotationPointer(kProcsPerPodAnnotation)};
  }
  if (!t.procs_field.empty()) {  // the kind's own field, as its controller reads it
    auto n = ParseCount(t.procs_field);
    if (n && *n >= 1 && *n <= kMaxProcs) return Counted{*n, t.procs_source + " " + t.procs_field, true, t.spec_pointer};
    if (GpuWords(t.procs_field, gpus)) {
      return Unstated(std::min(gpus, kMaxProcs),
                      t.procs_source + " " + t.procs_field + " (" + std::to_string(gpus) + " GPUs)");
    }
  }
  for (int pass = 0; pass < 2; ++pass) {
    for (size_t i = 0; i < l.nodes.size(); ++i) {
      if (l.containers[i].init) continue;
      std::string v = pass == 0 ? std::string(l.env[i].nproc_per_node)
                                : FindFlag(l.nodes[i], {"--nproc_per_node", "--nproc-per-node"});
      auto n = ParseCount(v);
      std::string src = pass == 0 ? "env PET_NPROC_PER_NODE=" + v : "--nproc_per_node=" + v;
      if (n && *n >= 1 && *n <= kMaxProcs) {
        return Counted{*n, src, true, l.containers[i].pointer + (pass == 0 ? "/env" : "/command")};
      }
      if (GpuWords(v, gpus)) return Unstated(gpus, src + " (" + std::to_string(gpus) + " GPUs)");
    }
  }
  if (gpus > 0) {
    return Unstated(std::min(gpus, kMaxProcs), std::to_string(gpus) + " GPU" + (gpus == 1 ? "" : "s") + " in the pod");
  }
  return Unstated(1, "default");
}

// Nodes: how many such pods train together.
Result<Counted> ReadNodes(const Launch& l) {
  const PodTemplate& t = l.t;
  auto annotated = ReadCountAnnotation(t.annotations, kNodesAnnotation, 1, kMaxNodes);
  if (!annotated) return annotated.error();
  if (*annotated) {
    return Unstated(**annotated, AnnotationWords(kNodesAnnotation));
  }
  if (t.pods_together > 1) return Unstated(t.pods_together, t.pods_source);
  for (int pass = 0; pass < 2; ++pass) {
    for (size_t i = 0; i < l.nodes.size(); ++i) {
      if (l.containers[i].init) continue;
      std::string v = pass == 0 ? std::string(l.env[i].nnodes) : FindFlag(l.nodes[i], {"--nnodes"});
      auto n = ParseNodeCount(v);
      if (n && *n >= 1) return Unstated(std::min(*n, kMaxNodes), pass == 0 ? "env PET_NNODES=" + v : "--nnodes=" + v);
    }
  }
  return Unstated(1, "default");
}

// NCCL_SHM_DISABLE and NCCL_P2P_DISABLE from the GPU containers (every app container when none
// requests a GPU): the first container that sets each to 1, in words ("" none).
struct NcclOff {
  std::string shm, p2p;
};
NcclOff ReadNcclOff(const Launch& l, bool requests_gpus) {
  NcclOff off;
  for (size_t i = 0; i < l.nodes.size(); ++i) {
    const ContainerFacts& c = l.containers[i];
    if (c.init || (requests_gpus && c.gpus == 0)) continue;
    if (off.shm.empty() && l.env[i].nccl_shm_disable == "1") off.shm = "container \"" + c.name + "\"";
    if (off.p2p.empty() && l.env[i].nccl_p2p_disable == "1") off.p2p = "container \"" + c.name + "\"";
  }
  return off;
}

}  // namespace

std::vector<std::string> LaunchEnvNames() {
  std::vector<std::string> names;
  for (const auto& row : kLaunchEnv) names.emplace_back(row.name);
  return names;
}

Result<bool> ReadLaunchFacts(const PodTemplate& t, const std::vector<JsonNode>& container_nodes, PodFacts& f) {
  const Launch launch(t, container_nodes, f);
  auto server = ReadServer(launch);
  if (!server) return server.error();
  auto procs = ReadProcs(launch);
  if (!procs) return procs.error();
  auto nodes = ReadNodes(launch);
  if (!nodes) return nodes.error();
  const NcclOff nccl = ReadNcclOff(launch, f.requests_gpus);

  f.server = std::move(server->server);
  f.more_servers = std::move(server->more);
  f.launch_unread = std::move(server->unread);
  f.procs = procs->n;
  f.procs_source = std::move(procs->source);
  f.procs_stated = procs->stated;
  f.procs_pointer = std::move(procs->pointer);
  f.nodes = nodes->n;
  f.nodes_source = std::move(nodes->source);
  f.nccl_shm_disabled = !nccl.shm.empty();
  f.nccl_shm_disabled_source = nccl.shm;
  f.nccl_p2p_disabled = !nccl.p2p.empty();
  f.nccl_p2p_disabled_source = nccl.p2p;
  for (size_t i = 0; i < container_nodes.size(); ++i) {
    ContainerFacts& c = f.containers[i];
    if (!c.init && c.rdma.empty()) c.rdma = RdmaFromEnv(launch.env[i]);
  }
  return true;
}

}  // namespace shmguard
