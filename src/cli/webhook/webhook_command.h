// `shmguard-webhook`: flags -> ServerOptions, logging, and the process lifecycle: start, wait
// for SIGTERM/SIGINT, stop gracefully (finish in-flight requests), exit 0.
#pragma once

#include <CLI/CLI.hpp>

#include "cli/program/exit_code.h"
#include "server/server.h"

namespace shmguard::cli {

// Adds the webhook's flags to `app` (the program's), writing into `options` and `log_format`.
void AddWebhookFlags(CLI::App& app, server::ServerOptions& options, std::string& log_format);

// Runs the server until SIGTERM or SIGINT. kUsage when the config, the certificate or a port
// cannot be loaded or bound (the message names which).
ExitCode RunWebhook(server::ServerOptions options, const std::string& log_format);

}  // namespace shmguard::cli
