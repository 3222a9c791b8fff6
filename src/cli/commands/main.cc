// `shmguard`, the command line: a table of subcommands (CLI11) over the adapters in src/cli. The
// webhook and the node agent are programs of their own (cli/webhook/main.cc, cli/agent/main.cc).
#include <CLI/CLI.hpp>
#include <iostream>

#include "cli/commands/audit_command.h"
#include "cli/commands/plan_command.h"
#include "cli/commands/policy_command.h"
#include "cli/commands/policy_file.h"
#include "cli/commands/report_command.h"
#include "cli/commands/top_command.h"
#include "cli/program/exit_code.h"
#include "cli/program/program_main.h"
#include "io/words/version.h"

namespace {

using shmguard::cli::ExitCode;
using shmguard::cli::ToInt;

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"shmguard: sizes /dev/shm for PyTorch/NCCL training pods on Kubernetes", "shmguard"};
  app.require_subcommand(1);
  app.set_version_flag("--version", shmguard::io::Version());
  int code = 0;

  shmguard::cli::PlanCommand plan;
  shmguard::cli::AddPlanCommand(app, plan)->callback(
      [&] { code = ToInt(shmguard::cli::RunPlanCommand(plan, std::cout, std::cerr)); });

  shmguard::cli::AuditCommand audit;
  shmguard::cli::AddAuditCommand(app, audit)->callback([&] {
    code = ToInt(shmguard::cli::RunAuditCommand(audit, std::cin, std::cout, std::cerr));
  });

  shmguard::cli::TopOptions top;
  shmguard::cli::AddTopCommand(app, top)->callback(
      [&] { code = ToInt(shmguard::cli::RunTop(top, std::cout, std::cerr)); });

  shmguard::cli::ReportCommand report;
  shmguard::cli::AddReportCommand(app, report)->callback([&] {
    code = ToInt(shmguard::cli::RunReport(report, std::cin, std::cout, std::cerr));
  });

  shmguard::cli::PolicyExportFlags policy_export;
  shmguard::cli::AddPolicyCommand(app, policy_export)->callback([&] {
    auto policy = shmguard::cli::LoadPolicyFor(policy_export.config, "policy export", std::cerr);
    code = policy ? ToInt(shmguard::cli::RunPolicyExport(policy_export, *policy, std::cout, std::cerr))
                  : ToInt(ExitCode::kUsage);
  });

  // Chart 0.1.0's one binary ran the webhook and the agent as subcommands: say where they went.
  for (const auto& [old, now] :
       {std::pair<const char*, const char*>{"serve", "shmguard-webhook"}, {"agent", "shmguard-agent"}}) {
    app.add_subcommand(old, "")->group("")->allow_extras()->callback([&code, old = old, now = now] {
      std::cerr << "shmguard: `shmguard " << old << "` is a program of its own: run " << now
                << " with the same flags\n";
      code = ToInt(ExitCode::kUsage);
    });
  }

  app.add_subcommand("version", "Print the version")->callback([] {
    std::cout << "shmguard " << shmguard::io::Version() << "\n";
  });

  return shmguard::cli::ParseAndRun(app, argc, argv, code);
}
