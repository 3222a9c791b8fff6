// shmguard's entry point: a table of subcommands (CLI11) over the adapters in src/cli.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <iostream>

#include "cli/commands/agent_command.h"
#include "cli/commands/audit_command.h"
#include "cli/commands/exit_code.h"
#include "cli/commands/plan_command.h"
#include "cli/commands/policy_command.h"
#include "cli/commands/policy_file.h"
#include "cli/commands/report_command.h"
#include "cli/commands/serve_command.h"
#include "cli/commands/top_command.h"

namespace {

using shmguard::cli::ExitCode;
using shmguard::cli::ToInt;

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"shmguard: sizes /dev/shm for PyTorch/NCCL training pods on Kubernetes"};
  app.require_subcommand(1);
  app.set_version_flag("--version", SHMGUARD_VERSION);
  int code = 0;

  shmguard::cli::PlanCommand plan;
  shmguard::cli::AddPlanCommand(app, plan)->callback(
      [&] { code = ToInt(shmguard::cli::RunPlanCommand(plan, std::cout, std::cerr)); });

  shmguard::cli::AuditCommand audit;
  shmguard::cli::AddAuditCommand(app, audit)->callback([&] {
    code = ToInt(shmguard::cli::RunAuditCommand(audit, std::cin, std::cout, std::cerr));
  });

  shmguard::server::ServerOptions serve;
  std::string log_format = "text";
  auto* serve_cmd = shmguard::cli::AddServeCommand(app, serve, log_format);
  serve_cmd->callback([&] { code = ToInt(shmguard::cli::RunServe(serve, log_format)); });

  shmguard::cli::AgentCommand agent;
  auto* agent_cmd = shmguard::cli::AddAgentCommand(app, agent);
  agent_cmd->callback([&] { code = ToInt(shmguard::cli::RunAgent(agent)); });

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
    code = policy ? ToInt(shmguard::cli::RunPolicyExport(policy_export.objects, *policy, std::cout, std::cerr))
                  : ToInt(ExitCode::kUsage);
  });

  app.add_subcommand("version", "Print the version")->callback([] {
    std::cout << "shmguard " << SHMGUARD_VERSION << "\n";
  });

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // CLI11 checks for a subcommand before it reports unexpected words, so a mistyped one
    // ("shmguard audti") would only read "A subcommand is required": name it, and the table's.
    const std::vector<std::string> words = app.remaining();
    if (dynamic_cast<const CLI::RequiredError*>(&e) && app.get_subcommands().empty() && !words.empty()) {
      std::string names;
      for (const CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; })) {
        names += (names.empty() ? "" : ", ") + sub->get_name();
      }
      std::cerr << "shmguard: unknown subcommand '" << words.front() << "': use one of " << names << "\n"
                << "Run with --help for more information.\n";
      return ToInt(ExitCode::kUsage);
    }
    return app.exit(e) == 0 ? 0 : ToInt(ExitCode::kUsage);
  } catch (const std::exception& e) {  // a bug: say so instead of terminating
    std::cerr << "shmguard: internal error: " << e.what() << "\n";
    return ToInt(ExitCode::kUsage);
  }
  return code;
}
