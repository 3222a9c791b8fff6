// `shmguard serve`: flags -> ServerOptions, logging, and the process lifecycle: start, wait for
// SIGTERM/SIGINT, stop gracefully (finish in-flight requests), exit 0.
#pragma once

#include <CLI/CLI.hpp>

#include "cli/commands/exit_code.h"
#include "server/server.h"

namespace shmguard::cli {

// Adds the `serve` subcommand's flags to `app`, writing into `options` and `log_format`.
CLI::App* AddServeCommand(CLI::App& app, server::ServerOptions& options, std::string& log_format);

// Runs the server until SIGTERM or SIGINT. kUsage when the config, the certificate or a port
// cannot be loaded or bound (the message names which).
ExitCode RunServe(server::ServerOptions options, const std::string& log_format);

}  // namespace shmguard::cli
