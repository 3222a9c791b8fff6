// `shmguard agent`: flags -> AgentOptions and the in-cluster API client, logging, and the
// process lifecycle: start, wait for SIGTERM/SIGINT, stop, exit 0.
#pragma once

#include <CLI/CLI.hpp>

#include "cli/exit_code.h"
#include "server/shm_agent.h"

namespace shmguard::cli {

// Adds the `agent` subcommand's flags to `app`, writing into `options` and `log_format`. The
// node's name defaults to $NODE_NAME (the DaemonSet sets it from spec.nodeName).
CLI::App* AddAgentCommand(CLI::App& app, server::AgentOptions& options, std::string& log_format);

// Runs the agent until SIGTERM or SIGINT. kUsage when the node's name is missing, the pod has no
// in-cluster configuration, or the metrics port cannot be bound (the message says which).
ExitCode RunAgent(server::AgentOptions options, const std::string& log_format);

}  // namespace shmguard::cli
