// `shmguard policy export`: flags, and the objects as YAML documents.
#include "cli/commands/policy_command.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <ostream>

#include "io/formats/yaml_emit.h"

namespace shmguard::cli {

CLI::App* AddPolicyCommand(CLI::App& app, PolicyExportFlags& o) {
  auto* policy = app.add_subcommand("policy", "Policy mode: shmguard as admission policies, without a webhook");
  policy->require_subcommand(1);
  auto* cmd = policy->add_subcommand(
      "export", "Write the MutatingAdmissionPolicy, ValidatingAdmissionPolicies and bindings for a policy file");
  cmd->add_option("--config", o.config, "policy YAML, as serve reads it; built-in defaults without it");
  cmd->add_option("--name", o.objects.name, "the objects' name (default shmguard)");
  cmd->add_option("--exclude-namespace", o.objects.excluded_namespaces,
                  "a namespace the bindings never reach (repeatable; default kube-system, kube-public, "
                  "kube-node-lease)");
  cmd->add_option("--enabled-label", o.objects.enabled_label,
                  "namespaces labelled LABEL=false are left alone (default shmguard.io/enabled)");
  cmd->add_option("--enforce-label", o.objects.enforce_label,
                  "namespaces labelled LABEL=true are enforced (default shmguard.io/enforce)");
  cmd->add_option("--pod-security-label", o.objects.pod_security_label,
                  "the namespace label that holds its Pod Security level (default "
                  "pod-security.kubernetes.io/enforce)");
  cmd->add_option("--static", o.static_dir,
                  "write the objects as kube-apiserver's static manifests (names ending in .static.k8s.io, "
                  "Kubernetes 1.37+, or 1.36 with ManifestBasedAdmissionControlConfig) to DIR/mutating and "
                  "DIR/validating, and print the AdmissionConfiguration that loads them");
  cmd->add_option_function<std::string>(
         "--mode", [&o](const std::string& mode) { o.objects.hybrid = mode == "hybrid"; },
         "policy: every object, shmguard without a webhook (default); hybrid: the mutating policy and its binding "
         "only, a floor under the webhook, which puts its own plan in its place")
      ->check(CLI::IsMember({"policy", "hybrid"}));
  return cmd;
}

namespace {

// A label key as Kubernetes validates it (IsQualifiedName): an optional DNS subdomain prefix and
// '/', then 1 to 63 of [A-Za-z0-9-_.], starting and ending alphanumeric.
bool IsLabelKey(std::string_view key) {
  const size_t slash = key.find('/');
  std::string_view prefix = slash == std::string_view::npos ? "" : key.substr(0, slash);
  std::string_view name = slash == std::string_view::npos ? key : key.substr(slash + 1);
  auto alnum = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; };
  if (slash != std::string_view::npos) {
    if (prefix.empty() || prefix.size() > 253 || !alnum(prefix.front()) || !alnum(prefix.back())) return false;
    for (char c : prefix) {
      if (!(std::islower(static_cast<unsigned char>(c)) || std::isdigit(static_cast<unsigned char>(c)) || c == '-' ||
            c == '.')) {
        return false;
      }
    }
  }
  if (name.empty() || name.size() > 63 || !alnum(name.front()) || !alnum(name.back())) return false;
  return std::all_of(name.begin(), name.end(), [&](char c) { return alnum(c) || c == '-' || c == '_' || c == '.'; });
}

// An object name as Kubernetes validates it (IsDNS1123Subdomain): lower-case letters, digits,
// '-' and '.', starting and ending alphanumeric, at most `most` long. It is also a file name here.
bool IsSubdomain(std::string_view name, size_t most) {
  auto alnum = [](char c) {
    return std::islower(static_cast<unsigned char>(c)) || std::isdigit(static_cast<unsigned char>(c));
  };
  if (name.empty() || name.size() > most || !alnum(name.front()) || !alnum(name.back())) return false;
  return std::all_of(name.begin(), name.end(), [&](char c) { return alnum(c) || c == '-' || c == '.'; });
}

// The objects as one YAML stream.
std::string Documents(const std::vector<nlohmann::json>& objects) {
  std::string text;
  for (const auto& object : objects) text += (text.empty() ? "" : "---\n") + io::JsonToYaml(object);
  return text;
}

// Writes `text` to `path` whole: to a temporary file beside it, then renamed over it, so that
// kube-apiserver, which watches the directory, never reads half a file. "" or why not.
std::string WriteWhole(const std::filesystem::path& path, const std::string& text) {
  std::error_code ec;
  std::filesystem::create_directories(path.parent_path(), ec);
  if (ec) return path.parent_path().string() + ": " + ec.message();
  const std::filesystem::path temporary = path.string() + ".tmp";  // not .yaml: the loader skips it
  {
    std::ofstream file(temporary, std::ios::binary | std::ios::trunc);
    if (!(file << text) || !file.flush()) return temporary.string() + ": " + std::strerror(errno);
  }
  std::filesystem::rename(temporary, path, ec);
  return ec ? path.string() + ": " + ec.message() : "";
}

// The static manifests: the mutating objects and the validating ones in a directory each (each
// plugin's staticManifestsDir holds only its own kinds), and the AdmissionConfiguration.
ExitCode WriteStatic(const std::string& dir, const std::string& name, const std::vector<nlohmann::json>& objects,
                     std::ostream& out, std::ostream& err) {
  std::vector<nlohmann::json> mutating, validating;
  for (const auto& object : objects) {
    (object.value("kind", "").rfind("Mutating", 0) == 0 ? mutating : validating).push_back(object);
  }
  const std::filesystem::path root = std::filesystem::absolute(dir);
  nlohmann::json plugins = nlohmann::json::array();
  struct Plugin {
    const char* kind;  // the plugin's name and its configuration's kind start with it
    const char* subdir;
    const std::vector<nlohmann::json>& objects;
  };
  for (const Plugin& p : {Plugin{"Mutating", "mutating", mutating}, Plugin{"Validating", "validating", validating}}) {
    const std::filesystem::path file = root / p.subdir / (name + ".yaml");
    if (p.objects.empty()) {  // hybrid: none; an earlier export's would still be loaded
      std::error_code ec;
      std::filesystem::remove(file, ec);
      continue;
    }
    if (std::string why = WriteWhole(file, Documents(p.objects)); !why.empty()) {
      err << "shmguard policy export: cannot write " << why << "\n";
      return ExitCode::kUsage;
    }
    plugins.push_back({{"name", std::string(p.kind) + "AdmissionPolicy"},
                       {"configuration",
                        {{"apiVersion", "apiserver.config.k8s.io/v1"},
                         {"kind", std::string(p.kind) + "AdmissionPolicyConfiguration"},
                         {"staticManifestsDir", (root / p.subdir).string()}}}});
  }
  out << io::JsonToYaml(
      {{"apiVersion", "apiserver.config.k8s.io/v1"}, {"kind", "AdmissionConfiguration"}, {"plugins", plugins}});
  return ExitCode::kOk;
}

}  // namespace

ExitCode RunPolicyExport(const PolicyExportFlags& flags, const Policy& policy, std::ostream& out, std::ostream& err) {
  PolicyExportOptions o = flags.objects;
  if (!flags.static_dir.empty()) o.name_suffix = kStaticSuffix;
  // The longest name made from it: "<name>-enforce" and the suffix.
  const size_t most = 253 - std::string_view("-enforce").size() - o.name_suffix.size();
  if (!IsSubdomain(o.name, most)) {
    err << "shmguard policy export: --name: \"" << o.name << "\" is not an object name (lower-case letters, digits, "
        << "'-' and '.', starting and ending with a letter or digit, at most " << most << " characters)\n";
    return ExitCode::kUsage;
  }
  for (const auto& [flag, label] : {std::pair<const char*, const std::string&>{"--enabled-label", o.enabled_label},
                                    {"--enforce-label", o.enforce_label},
                                    {"--pod-security-label", o.pod_security_label}}) {
    if (!IsLabelKey(label)) {
      err << "shmguard policy export: " << flag << ": \"" << label
          << "\" is not a label key ([DNS subdomain/]name of letters, digits, '-', '_', '.')\n";
      return ExitCode::kUsage;
    }
  }
  auto objects = ExportAdmissionPolicies(policy, o);
  if (!objects) {
    err << "shmguard policy export: " << objects.error().message << "\n";
    return ExitCode::kUsage;
  }
  if (!flags.static_dir.empty()) return WriteStatic(flags.static_dir, flags.objects.name, *objects, out, err);
  out << Documents(*objects);
  return ExitCode::kOk;
}

}  // namespace shmguard::cli
