// Process exit codes of every program and subcommand (README "shmguard audit").
#pragma once

namespace shmguard::cli {

enum class ExitCode {
  kOk = 0,        // clean: nothing at or above --fail-on
  kFindings = 1,  // findings at or above --fail-on
  kUsage = 2,     // bad usage, unreadable input or config, I/O failure
};

inline int ToInt(ExitCode c) { return static_cast<int>(c); }

}  // namespace shmguard::cli
