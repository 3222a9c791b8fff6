// `shmguard-agent`: flags -> AgentOptions and the in-cluster API client, logging, and the
// process lifecycle: start, wait for SIGTERM/SIGINT, stop, exit 0.
#pragma once

#include <CLI/CLI.hpp>

#include "agent/shm_agent.h"
#include "cli/program/exit_code.h"
#include "kube/kube_config.h"

namespace shmguard::cli {

// What `shmguard-agent` runs with.
struct AgentCommand {
  agent::AgentOptions agent;
  // The API server. Default: the pod's in-cluster configuration (KubeConfig::InCluster). With
  // `server` set (--api-server, for an agent outside a pod, as the end-to-end suite runs one),
  // `ca_file` and `token_file` must be set too.
  kube::KubeConfig api;
  std::string log_format = "json";  // text or json
  std::string config_file;          // --config: the policy (growInPlace rules); read once at start
  // --device-checkpoint: the kubelet's device manager checkpoint; "" (the default) is the
  // kubelet directory's, "none" reads none.
  std::string device_checkpoint;
};

// Adds the agent's flags to `app` (the program's), writing into `command`. The node's name
// defaults to $NODE_NAME (the DaemonSet sets it from spec.nodeName).
void AddAgentFlags(CLI::App& app, AgentCommand& command);

// Runs the agent until SIGTERM or SIGINT. kUsage when the node's name is missing, there is no
// API configuration (not in a pod, and no --api-server), or the metrics port cannot be bound
// (the message says which).
ExitCode RunAgent(const AgentCommand& command);

}  // namespace shmguard::cli
