// `shmguard-webhook`: the mutating and validating admission webhook, a program of its own so the
// Deployment's image carries the server and nothing of the CLI or the node agent.
#include <CLI/CLI.hpp>

#include "cli/program/program_main.h"
#include "cli/webhook/webhook_command.h"
#include "io/words/version.h"

int main(int argc, char** argv) {
  CLI::App app{"shmguard-webhook: the mutating and validating admission webhook (HTTPS)", "shmguard-webhook"};
  app.set_version_flag("--version", shmguard::io::Version());
  int code = 0;
  shmguard::server::ServerOptions options;
  std::string log_format = "text";
  shmguard::cli::AddWebhookFlags(app, options, log_format);
  app.callback([&] { code = shmguard::cli::ToInt(shmguard::cli::RunWebhook(options, log_format)); });
  return shmguard::cli::ParseAndRun(app, argc, argv, code);
}
