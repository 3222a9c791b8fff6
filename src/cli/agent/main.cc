// `shmguard-agent`: the node agent (a DaemonSet), a program of its own so the image that runs on
// every node carries the agent and nothing of the webhook's server or the CLI.
#include <CLI/CLI.hpp>

#include "cli/agent/agent_command.h"
#include "cli/program/program_main.h"
#include "io/words/version.h"

int main(int argc, char** argv) {
  CLI::App app{
      "shmguard-agent: watches the /dev/shm of this node's pods (a DaemonSet): metrics, ShmNearFull "
      "Events, ShmProfiles, growth in place, leaked segments",
      "shmguard-agent"};
  app.set_version_flag("--version", shmguard::io::Version());
  int code = 0;
  shmguard::cli::AgentCommand command;
  shmguard::cli::AddAgentFlags(app, command);
  app.callback([&] { code = shmguard::cli::ToInt(shmguard::cli::RunAgent(command)); });
  return shmguard::cli::ParseAndRun(app, argc, argv, code);
}
