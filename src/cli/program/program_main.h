// What each of shmguard's programs (shmguard, shmguard-webhook, shmguard-agent) does with its
// command line: parse it, run what it chose, and turn a parse error or a bug into a message and
// an exit code instead of a crash.
#pragma once

#include <CLI/CLI.hpp>

#include "cli/program/exit_code.h"

namespace shmguard::cli {

// Parses `argv` into `app` (whose callbacks set `code`) and returns the process's exit code:
// `code` after a clean parse, 0 after --help or --version, kUsage after a parse error (a
// mistyped subcommand named, with the app's subcommands) or an exception (an internal error).
int ParseAndRun(CLI::App& app, int argc, char** argv, const int& code);

}  // namespace shmguard::cli
