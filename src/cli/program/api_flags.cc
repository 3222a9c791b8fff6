// AddApiFlags: --api-server, --api-ca-file, --api-token-file.
#include "cli/program/api_flags.h"

namespace shmguard::cli {

void AddApiFlags(CLI::App* cmd, kube::KubeConfig& api) {
  auto* server =
      cmd->add_option("--api-server", api.server, "the API server's URL, when not in a pod (default: in-cluster)");
  cmd->add_option("--api-ca-file", api.ca_file, "with --api-server: the CA bundle of its certificate")
      ->needs(server)
      ->check(CLI::ExistingFile);
  cmd->add_option("--api-token-file", api.token_file,
                  "with --api-server: the bearer token's file, re-read when it changes")
      ->needs(server)
      ->check(CLI::ExistingFile);
}

}  // namespace shmguard::cli
