// `shmguard top`: what the pods of a namespace (or of every namespace, or of one node) use of
// their /dev/shm, as the node agents measure it, read through the API server as `kubectl top`
// reads metrics: each agent pod's /metrics through the pods/proxy subresource.
#pragma once

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdint>
#include <iosfwd>
#include <string>
#include <string_view>
#include <vector>

#include "cli/exit_code.h"

namespace shmguard::cli {

// One pod volume, or a device plugin's mount at a container's /dev/shm, as an agent reports it.
struct ShmUse {
  std::string namespace_, pod, volume, workload;
  std::string node;                       // the node of the agent that reported it
  uint64_t used = 0, size = 0, peak = 0;  // bytes; none for a device's mount
  // A device plugin's mount (shmguard_pod_shm_device_mount): its resource ("" for a volume), the
  // container, the node's path, and whether a volume of the pod hides it.
  std::string device, container, host_path;
  bool hidden = false;
  // A pod running with less /dev/shm than shmguard would give it
  // (shmguard_pod_shm_unpatched_required_bytes): that size; 0 for any other row.
  uint64_t unpatched_required = 0;
};

// The shmguard_pod_shm_{used,size,peak}_bytes samples of an agent's /metrics text (the
// Prometheus text format, label values escaped as it escapes them), one ShmUse per volume, and
// one per shmguard_pod_shm_device_mount and shmguard_pod_shm_unpatched_required_bytes sample, in
// the order the text first names them. Other
// lines are ignored.
std::vector<ShmUse> ParseShmMetrics(std::string_view text);

// `rows` as a table (NAMESPACE only when `all_namespaces`), sorted by namespace, pod, volume;
// sizes in Mi with one decimal, PEAK% of the size; a device's mount as its resource, with no
// sizes. Every text an agent sent is printed printable (io::Printable: control characters as
// \xNN) and at most 253 bytes (a Kubernetes name's limit). "No /dev/shm volumes ..." when empty.
void PrintTop(std::vector<ShmUse> rows, bool all_namespaces, std::ostream& out);

// What `shmguard top` reads of one agent: at most this many bytes of its /metrics, within this
// time (an agent of 1,000 pods serves about 0.5 MB).
inline constexpr size_t kMaxAgentMetricsBytes = size_t{16} << 20;
inline constexpr int kAgentMetricsSeconds = 10;

struct TopOptions {
  std::string namespace_;        // -n; default: the kubeconfig context's namespace, else "default"
  bool all_namespaces = false;   // -A
  std::string node;              // --node: only the agent of this node
  std::string kubeconfig;        // default: $KUBECONFIG's first file, else ~/.kube/config, else in-cluster
  std::string context;           // default: the kubeconfig's current-context
  std::string output = "table";  // table or json
  // Where the agents are: the chart's agent.namespace, and the labels of its DaemonSet's pods. A
  // pod elsewhere, or labelled only app.kubernetes.io/component=agent as many agents are, is not
  // read.
  std::string agent_namespace = "shmguard-agent";
  std::string agent_selector = "app.kubernetes.io/name=shmguard-agent,app.kubernetes.io/component=agent";
  // The bounds on one agent's answer (no flags: tests make them small).
  size_t agent_max_bytes = kMaxAgentMetricsBytes;
  std::chrono::milliseconds agent_deadline = std::chrono::seconds(kAgentMetricsSeconds);
};

CLI::App* AddTopCommand(CLI::App& app, TopOptions& options);

// kOk with the table (agents that cannot be read, or send more than agent_max_bytes or take
// longer than agent_deadline, are named on `err`, the others still shown); kUsage
// when there is no API configuration, the API refuses the list of agents, or no agent runs (the
// chart's agent.enabled).
ExitCode RunTop(const TopOptions& options, std::ostream& out, std::ostream& err);

}  // namespace shmguard::cli
