// The flags of a program that talks to the API server from a pod (the agent; the webhook with
// --observations, --resource-claims or --config-maps): in-cluster by default, or --api-server
// with --api-ca-file and --api-token-file from outside one (the end-to-end suite). ResolveApi (kube_client.h) turns
// them into a KubeConfig.
#pragma once

#include <CLI/CLI.hpp>

#include "kube/kube_config.h"

namespace shmguard::cli {

void AddApiFlags(CLI::App* cmd, kube::KubeConfig& api);

}  // namespace shmguard::cli
