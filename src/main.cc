// shmguard's entry point: a table of subcommands (CLI11) over the adapters in src/cli.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <iostream>

#include "cli/agent_command.h"
#include "cli/audit_command.h"
#include "cli/exit_code.h"
#include "cli/plan_command.h"
#include "cli/policy_command.h"
#include "cli/report_command.h"
#include "cli/serve_command.h"
#include "cli/top_command.h"
#include "io/config.h"
#include "io/observations.h"
#include "shmguard/facts/pod_facts.h"

namespace {

using shmguard::cli::ExitCode;
using shmguard::cli::ToInt;

// Built-in defaults when `path` is empty; the config's error on stderr otherwise.
// A count as shmguard's flags take it: decimal digits, at most 18 (ParseCount); the error quotes
// the text, not what CLI11 would have made of it.
const CLI::Validator kCount(
    [](std::string& text) -> std::string {
      return shmguard::ParseCount(text) ? std::string() : "\"" + text + "\" is not a whole number of at most 18 digits";
    },
    "COUNT");

std::optional<shmguard::Policy> LoadPolicyOrDefaults(const std::string& path, const char* command) {
  if (path.empty()) return shmguard::Policy{};
  auto policy = shmguard::io::LoadPolicy(path);
  if (!policy) {
    std::cerr << "shmguard " << command << ": config " << policy.error().ToString() << "\n";
    return std::nullopt;
  }
  return *policy;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"shmguard: sizes /dev/shm for PyTorch/NCCL training pods on Kubernetes"};
  app.require_subcommand(1);
  app.set_version_flag("--version", SHMGUARD_VERSION);
  std::string config;
  int code = 0;

  shmguard::cli::PlanOptions plan;
  auto* plan_cmd = app.add_subcommand("plan", "Size /dev/shm for one job from its DataLoader settings");
  // Ranges are RunPlan's to check (it names the flag), as for every other caller; a count too
  // long for int64 is refused here, quoting what was typed (CLI11 would saturate it first).
  auto* workers =
      plan_cmd->add_option("--num-workers", plan.num_workers, "DataLoader num_workers per process")->check(kCount);
  plan_cmd->add_option("--prefetch-factor", plan.prefetch_factor, "DataLoader prefetch_factor (default 2)")
      ->check(kCount);
  plan_cmd->add_option("--batch-bytes", plan.batch_bytes, "bytes of one collated batch, a quantity: 48Mi, 5e7");
  plan_cmd->add_option("--procs", plan.procs, "training processes per pod (default: GPUs, else 1)")->check(kCount);
  plan_cmd->add_option("--gpus", plan.gpus, "GPUs in the pod")->check(kCount);
  plan_cmd->add_option("--nodes", plan.nodes, "pods training together (> 1: multi-node NCCL)")->check(kCount);
  plan_cmd->add_option("--memory-limit", plan.memory_limit, "the pod's memory limit, a quantity: 64Gi");
  plan_cmd->add_flag(
      "--rdma", plan.rdma,
      "the job registers host memory for RDMA (NCCL over InfiniBand/RoCE, EFA, UCX): raise locked memory");
  plan_cmd->add_option("--server", plan.server, "an inference server instead: vllm, sglang, tgi, triton, ray");
  plan_cmd->add_option("--object-store-memory", plan.object_store,
                       "a Ray object store beside the server (or --server ray's), a quantity: 10Gi");
  // Every other flag is the server's own, as its parser spells it (--tensor-parallel-size 8,
  // -tp 8, --distributed-executor-backend ray...): read by the same rows as a pod's launch.
  plan_cmd->allow_extras();
  plan_cmd->add_option("-o,--output", plan.output, "text or json")->check(CLI::IsMember({"text", "json"}));
  plan_cmd->add_option("--config", config, "policy YAML (sizing constants); built-in defaults without it");
  plan_cmd->callback([&] {
    plan.server_args = plan_cmd->remaining();
    if (plan.server.empty() && !plan.server_args.empty()) {
      std::cerr << "shmguard plan: " << plan.server_args.front()
                << " is not a flag of plan (a server's flags follow --server NAME)\n";
      code = ToInt(ExitCode::kUsage);
      return;
    }
    if (plan.server.empty() && workers->count() == 0) {
      std::cerr << "shmguard plan: --num-workers is required (or --server for an inference server)\n";
      code = ToInt(ExitCode::kUsage);
      return;
    }
    auto policy = LoadPolicyOrDefaults(config, "plan");
    code = policy ? ToInt(shmguard::cli::RunPlan(plan, *policy, std::cout, std::cerr)) : ToInt(ExitCode::kUsage);
  });

  shmguard::cli::AuditOptions audit;
  auto* audit_cmd = app.add_subcommand("audit", "Dry-run the webhook over manifest files (CI)");
  audit_cmd->add_option("paths", audit.paths, "files, directories (*.yaml, *.yml, *.json) or - for stdin")->required();
  std::string format = "table", fail_on = "error", report_api = "wgpolicy";
  std::vector<std::string> ignore;
  audit_cmd->add_option("-o,--output", format, "table, json, yaml, patched, sarif, junit, github or policyreport")
      ->check([](const std::string& f) {
        return shmguard::cli::ParseAuditFormat(f)
                   ? std::string()
                   : "use table, json, yaml, patched, sarif, junit, github or policyreport";
      });
  audit_cmd
      ->add_option("--fail-on", fail_on,
                   "exit 1 at a finding this severe: error (default; alias deny), warning (alias warn), info")
      ->check([](const std::string& s) {
        return shmguard::cli::ParseFailOn(s) ? std::string() : "use error, warning or info (or deny, warn)";
      });
  audit_cmd
      ->add_option("--ignore", ignore,
                   "exempt a check by ID (docs/checks.md); repeatable or comma-separated: "
                   "reported as suppressed, never counted")
      ->delimiter(',')
      ->allow_extra_args(false)  // one value per --ignore: paths follow it
      ->check([](const std::string& id) {
        return shmguard::FindCheck(id) ? std::string() : "\"" + id + "\" is not a check ID (docs/checks.md)";
      });
  audit_cmd
      ->add_option("--report-api", report_api,
                   "-o policyreport: wgpolicy (wgpolicyk8s.io/v1alpha2, default) "
                   "or openreports (openreports.io/v1alpha1)")
      ->check(CLI::IsMember({"wgpolicy", "openreports"}));
  audit_cmd
      ->add_option("--docs-url", audit.docs_url,
                   "-o sarif: where docs/checks.md is published (https://...); each rule's helpUri "
                   "links to its check's section")
      ->check([](const std::string& url) {
        const bool absolute = url.rfind("https://", 0) == 0 || url.rfind("http://", 0) == 0;
        const bool plain = std::all_of(url.begin(), url.end(), [](char c) { return c > ' ' && c < 127 && c != '#'; });
        return absolute && plain ? std::string()
                                 : "an absolute http(s) URL without a fragment, such as "
                                   "https://github.com/ORG/shmguard/blob/v1.0.0/docs/checks.md";
      });
  audit_cmd->add_option("--config", config, "policy YAML; built-in defaults without it");
  std::string observations_file;
  shmguard::ObservationIndex observations;
  audit_cmd->add_flag("--policy-mode", audit.policy_mode,
                      "report what the admission policies of `shmguard policy export` would do instead of the "
                      "webhook (docs/policy-mode.md)");
  audit_cmd->add_option("--observations", observations_file,
                        "ShmProfiles (kubectl get shmprofiles -A -o yaml): size each workload from what its pods "
                        "used, as the webhook does");
  audit_cmd->add_option("-j,--jobs", audit.jobs, "threads parsing and evaluating documents (default: one per CPU)")
      ->check(CLI::Range(1, 256));
  audit_cmd
      ->add_option("--max-file-bytes", audit.max_file_bytes,
                   "a file (or stdin) holding more is an error; the other paths are still read")
      ->capture_default_str()
      ->check(CLI::Range(size_t{1}, size_t{1} << 40));
  audit_cmd->callback([&] {
    audit.output = *shmguard::cli::ParseAuditFormat(format);  // one of them: checked above
    audit.fail_on = *shmguard::cli::ParseFailOn(fail_on);
    for (const auto& id : ignore) audit.ignore.checks.push_back(*shmguard::FindCheck(id));
    audit.report_api =
        report_api == "openreports" ? shmguard::cli::ReportApi::kOpenReports : shmguard::cli::ReportApi::kWgPolicy;
    auto policy = LoadPolicyOrDefaults(config, "audit");
    if (!observations_file.empty()) {
      auto loaded = shmguard::io::LoadObservations(observations_file);
      if (!loaded) {
        std::cerr << "shmguard audit: --observations " << loaded.error().ToString() << "\n";
        code = ToInt(ExitCode::kUsage);
        return;
      }
      observations = std::move(*loaded);
      audit.observations = &observations;
    }
    code = policy ? ToInt(shmguard::cli::RunAudit(audit, *policy, std::cin, std::cout, std::cerr))
                  : ToInt(ExitCode::kUsage);
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
    auto policy = LoadPolicyOrDefaults(policy_export.config, "policy export");
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
