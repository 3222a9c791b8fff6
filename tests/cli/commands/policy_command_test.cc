// `shmguard policy export`: the objects on stdout, and --static: kube-apiserver's static
// manifests (every name, and every policy a binding names, ending in .static.k8s.io), a
// directory per plugin, written whole, and the AdmissionConfiguration that loads them.
#include "cli/commands/policy_command.h"

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "test_util.h"
#include "tls_fixture.h"  // TempDir

namespace shmguard::cli {
namespace {

namespace fs = std::filesystem;

struct Export {
  ExitCode code;
  std::string out, err;
};

Export Run(const PolicyExportFlags& flags) {
  std::ostringstream out, err;
  const ExitCode code = RunPolicyExport(flags, Policy{}, out, err);
  return {code, out.str(), err.str()};
}

std::string Read(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST_CASE("policy export writes the objects, and --static kube-apiserver's static manifests", "[policy_command]") {
  const Export plain = Run({});
  REQUIRE(plain.code == ExitCode::kOk);
  const auto objects = test::YamlDocuments(plain.out);
  REQUIRE(objects.size() == 10);  // the mutating policy and binding, four validating policies and bindings
  CHECK(objects[0]["metadata"]["name"] == "shmguard");

  test::TempDir dir;
  PolicyExportFlags flags;
  flags.static_dir = dir.File("static");
  const Export written = Run(flags);
  REQUIRE(written.code == ExitCode::kOk);
  const fs::path root = fs::absolute(flags.static_dir);
  const auto mutating = test::YamlDocuments(Read(root / "mutating" / "shmguard.yaml"));
  const auto validating = test::YamlDocuments(Read(root / "validating" / "shmguard.yaml"));
  CHECK(mutating.size() == 2);
  CHECK(validating.size() == 8);
  for (const auto* part : {&mutating, &validating}) {
    const std::string kind = part == &mutating ? "Mutating" : "Validating";
    for (const auto& o : *part) {
      CAPTURE(o["kind"], o["metadata"]["name"]);
      CHECK(o["kind"].get<std::string>().rfind(kind, 0) == 0);  // each plugin's directory holds its kinds only
      CHECK(o["apiVersion"] == "admissionregistration.k8s.io/v1");
      CHECK_THAT(o["metadata"]["name"].get<std::string>(), Catch::EndsWith(".static.k8s.io"));
      if (o["spec"].contains("policyName")) {
        CHECK_THAT(o["spec"]["policyName"].get<std::string>(), Catch::EndsWith(".static.k8s.io"));
      }
    }
  }
  CHECK(mutating[0]["metadata"]["name"] == "shmguard.static.k8s.io");
  // Nothing but the two files: no temporary left behind.
  size_t files = 0;
  for (const auto& e : fs::recursive_directory_iterator(root)) files += e.is_regular_file();
  CHECK(files == 2);
  // The AdmissionConfiguration names each directory for its plugin.
  const nlohmann::json config = test::Yaml(written.out);
  CHECK(config["kind"] == "AdmissionConfiguration");
  REQUIRE(config["plugins"].size() == 2);
  CHECK(config["plugins"][0]["name"] == "MutatingAdmissionPolicy");
  CHECK(config["plugins"][0]["configuration"]["kind"] == "MutatingAdmissionPolicyConfiguration");
  CHECK(config["plugins"][0]["configuration"]["staticManifestsDir"] == (root / "mutating").string());
  CHECK(config["plugins"][1]["name"] == "ValidatingAdmissionPolicy");
  CHECK(config["plugins"][1]["configuration"]["staticManifestsDir"] == (root / "validating").string());

  // Hybrid: the floor alone; the validating file an earlier export left goes, or it would load.
  flags.objects.hybrid = true;
  const Export hybrid = Run(flags);
  REQUIRE(hybrid.code == ExitCode::kOk);
  CHECK(fs::exists(root / "mutating" / "shmguard.yaml"));
  CHECK_FALSE(fs::exists(root / "validating" / "shmguard.yaml"));
  CHECK(test::Yaml(hybrid.out)["plugins"].size() == 1);

  // A directory whose name YAML would read otherwise (": ", "#") comes back as it is.
  flags.static_dir = dir.File("floor: #1");
  const Export odd = Run(flags);
  REQUIRE(odd.code == ExitCode::kOk);
  CHECK(test::Yaml(odd.out)["plugins"][0]["configuration"]["staticManifestsDir"] ==
        (fs::absolute(flags.static_dir) / "mutating").string());
}

TEST_CASE("policy export refuses a name that is no object name, and a directory it cannot write", "[policy_command]") {
  test::TempDir dir;
  PolicyExportFlags flags;
  flags.static_dir = dir.File("static");
  for (const char* name : {"../escape", "Upper", "", "ends-with-dash-"}) {
    CAPTURE(name);
    flags.objects.name = name;
    const Export e = Run(flags);
    CHECK(e.code == ExitCode::kUsage);
    CHECK_THAT(e.err, Catch::Contains("--name"));
    CHECK(e.out.empty());
  }
  CHECK_FALSE(fs::exists(dir.File("static")));
  PolicyExportFlags long_name;
  long_name.objects.name = std::string(300, 'a');
  CHECK(Run(long_name).code == ExitCode::kUsage);

  std::ofstream(dir.File("file")) << "not a directory\n";
  flags.objects.name = "shmguard";
  flags.static_dir = dir.File("file");
  const Export e = Run(flags);
  CHECK(e.code == ExitCode::kUsage);
  CHECK_THAT(e.err, Catch::Contains("cannot write") && Catch::Contains(dir.File("file")));
}

}  // namespace
}  // namespace shmguard::cli
