// RunAgent: signal mask, the API client (in-cluster, or --api-server), agent start, sigwait, stop.
#include "cli/agent/agent_command.h"

#include <csignal>
#include <cstdlib>

#include "cli/program/api_flags.h"
#include "io/config/config.h"
#include "io/words/log.h"

namespace shmguard::cli {

void AddAgentFlags(CLI::App& app, AgentCommand& command) {
  auto& o = command.agent;
  if (const char* node = std::getenv("NODE_NAME")) o.node_name = node;
  app.add_option("--node-name", o.node_name, "this node's name (default: $NODE_NAME)");
  app.add_option("--kubelet-dir", o.kubelet_dir, "the kubelet's root directory as mounted here")->capture_default_str();
  int interval_ms = static_cast<int>(o.interval.count());
  app.add_option_function<int>(
         "--interval-ms", [&o](int ms) { o.interval = std::chrono::milliseconds(ms); },
         "time between two samples of every volume")
      ->default_val(interval_ms)
      ->check(CLI::Range(100, 600000));
  app.add_option("--threshold", o.threshold, "a volume's use, as a fraction of its size, that records ShmNearFull")
      ->capture_default_str()
      ->check(CLI::Range(0.01, 1.0));
  app.add_option("--metrics-port", o.metrics_port, "plain HTTP port for /healthz, /readyz, /metrics")
      ->capture_default_str();
  app.add_option("--bind-address", o.bind_address, "address the metrics port listens on")->capture_default_str();
  app.add_option("--log-format", command.log_format, "text or json")->check(CLI::IsMember({"text", "json"}));
  app.add_option("--config", command.config_file,
                 "policy YAML: its namespace rules' growInPlace and maxFractionOfMemoryLimit (built-in without it)");
  app.add_option("--record-profiles", o.record_profiles,
                 "write each workload's peak and runs to its ShmProfile (true or false)")
      ->capture_default_str();
  int record_ms = static_cast<int>(o.record_interval.count());
  app.add_option_function<int>(
         "--record-interval-ms", [&o](int ms) { o.record_interval = std::chrono::milliseconds(ms); },
         "while a pod's peak grows, how often it is written")
      ->default_val(record_ms)
      ->check(CLI::Range(0, 3600000));
  app.add_option_function<std::string>(
         "--leaked-segments", [&o](const std::string& v) { o.leaked_segments = *agent::ParseLeakMode(v); },
         "find the files in restarted pods' /dev/shm that no process of the pod holds: status (the default: from "
         "the pods' status and the files' change times, no privilege; reports only), exact (from the pods' "
         "processes: needs the host's PID namespace, CAP_SYS_PTRACE and CAP_DAC_READ_SEARCH; reports and "
         "deletes where allowed) or off")
      ->default_str("status")
      ->check([](const std::string& v) {
        return agent::ParseLeakMode(v) ? std::string() : "must be status, exact or off";
      });
  app.add_option("--proc-dir", o.proc_dir, "the host's /proc as mounted here")->capture_default_str();
  app.add_option("--device-checkpoint", command.device_checkpoint,
                 "the kubelet's device manager checkpoint, where device plugins' mounts at /dev/shm (NVIDIA's "
                 "MPS) are read (default: <kubelet-dir>/device-plugins/kubelet_internal_checkpoint; \"none\": "
                 "read none)");
  AddApiFlags(&app, command.api);
}

ExitCode RunAgent(const AgentCommand& command) {
  const auto& options = command.agent;
  auto format = command.log_format == "json" ? io::LogFormat::kJson : io::LogFormat::kText;
  auto log = io::MakeLogger(format);
  auto fail = [&](const std::string& why) {
    io::LogEvent(*log, format, spdlog::level::critical, "cannot start", {{"error", why}});
    log->flush();
    return ExitCode::kUsage;
  };
  if (options.node_name.empty()) return fail("no node name: give --node-name or set NODE_NAME");
  agent::AgentOptions agent_options = options;
  agent_options.device_checkpoint = command.device_checkpoint == "none" ? ""
                                    : command.device_checkpoint.empty()
                                        ? options.kubelet_dir + "/" + kDeviceCheckpointPath
                                        : command.device_checkpoint;
  if (!command.config_file.empty()) {
    auto policy = io::LoadPolicy(command.config_file, io::Readable::kRegularFiles);
    if (!policy) return fail(policy.error().ToString());
    agent_options.policy = std::move(*policy);
  }
  Result<kube::KubeConfig> config = kube::ResolveApi(command.api);
  if (!config) return fail(config.error().ToString());
  // spdlog's loggers take their own lock: any of the agent's threads may log.
  agent_options.on_api_failure = [log, format](const agent::ApiFailure& f) {
    io::LogEvent(*log, format, f.namespace_terminating ? spdlog::level::debug : spdlog::level::warn,
                 "the API server did not take a request",
                 {{"object", f.what}, {"status", std::to_string(f.status)}, {"error", f.why}});
  };

  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  std::signal(SIGPIPE, SIG_IGN);

  agent::ShmAgent agent(agent_options, std::make_shared<kube::KubeClient>(*config));
  auto started = agent.Start();
  if (!started) return fail(started.error().ToString());
  io::LogEvent(*log, format, spdlog::level::info, "watching /dev/shm",
               {{"node", options.node_name},
                {"kubelet_dir", options.kubelet_dir},
                {"api_server", config->server},
                {"metrics_port", std::to_string(agent.metrics_port())},
                {"device_checkpoint", agent_options.device_checkpoint}});
  int sig = 0;
  sigwait(&signals, &sig);
  io::LogEvent(*log, format, spdlog::level::info, "stopping", {{"signal", sig == SIGTERM ? "SIGTERM" : "SIGINT"}});
  agent.Stop();
  log->flush();
  return ExitCode::kOk;
}

}  // namespace shmguard::cli
