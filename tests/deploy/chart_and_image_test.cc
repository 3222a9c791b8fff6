// The chart's values and the Dockerfile, read as files: every .Values reference the templates
// make exists in values.yaml and its schema; the image builds on Debian 12 as the README does and
// runs slim and non-root with every library the binary links.
#include <catch2/catch.hpp>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>

#include "io/manifests.h"
#include "test_util.h"

namespace shmguard::test {
namespace {

using nlohmann::json;

namespace fs = std::filesystem;

std::string Source(const std::string& rel) { return std::string(SOURCE_DIR) + "/" + rel; }

// `.Values.a.b` paths used by the chart's templates.
std::set<std::string> ValuesReferences() {
  std::set<std::string> refs;
  std::regex re(R"(\.Values\.([A-Za-z0-9_]+(\.[A-Za-z0-9_]+)*))");
  for (const auto& entry : fs::directory_iterator(Source("charts/shmguard/templates"))) {
    auto text = io::ReadFileText(entry.path().string());
    REQUIRE(text.has_value());
    for (std::sregex_iterator it(text->begin(), text->end(), re), end; it != end; ++it) refs.insert((*it)[1]);
  }
  return refs;
}

TEST_CASE("every .Values reference of the chart exists in values.yaml and values.schema.json", "[deploy]") {
  json values = Yaml(ReadTestdata("../../charts/shmguard/values.yaml"));
  json schema = json::parse(ReadTestdata("../../charts/shmguard/values.schema.json"));
  auto refs = ValuesReferences();
  CHECK(refs.size() >= 25);
  for (const auto& ref : refs) {
    CAPTURE(ref);
    const json* v = &values;
    const json* s = &schema;
    size_t pos = 0;
    while (pos != std::string::npos) {
      size_t dot = ref.find('.', pos);
      std::string key = ref.substr(pos, dot == std::string::npos ? std::string::npos : dot - pos);
      REQUIRE(v->is_object());
      REQUIRE(v->contains(key));
      v = &(*v)[key];
      REQUIRE(s->contains("properties"));
      REQUIRE((*s)["properties"].contains(key));
      s = &(*s)["properties"][key];
      pos = dot == std::string::npos ? dot : dot + 1;
    }
  }
}

TEST_CASE("Dockerfile: Debian 12 build, slim non-root runtime with every library shmguard links", "[deploy]") {
  std::string docker = ReadTestdata("../../Dockerfile");
  CHECK(docker.find("FROM debian:12 AS build") != std::string::npos);
  CHECK(docker.find("FROM debian:12-slim") != std::string::npos);
  CHECK(docker.find("./scripts/install-deps.sh") != std::string::npos);  // the README's own steps
  CHECK(docker.find("./scripts/build.sh") != std::string::npos);
  CHECK(docker.find("ENTRYPOINT [\"shmguard\"]") != std::string::npos);
  std::smatch user;
  REQUIRE(std::regex_search(docker, user, std::regex(R"(\nUSER ([0-9]+):([0-9]+)\n)")));
  CHECK(std::stoi(user[1]) > 0);
  CHECK(fs::exists(Source(".dockerignore")));

  // The runtime stage's packages, and what they pull in.
  std::smatch install;
  REQUIRE(std::regex_search(docker, install, std::regex(R"(--no-install-recommends \\\n\s+([^\n]+)\n)")));
  std::set<std::string> provided = {"libc6", "libstdc++6", "libgcc-s1", "zlib1g"};  // in debian:12-slim
  std::istringstream pkgs(install[1].str());
  for (std::string pkg; pkgs >> pkg;) {
    if (pkg == "\\") continue;
    provided.insert(pkg);
    std::string deps = CommandOutput("dpkg-query -W -f='${Depends}' " + pkg + " 2>/dev/null");
    static const std::regex kPackage(R"(([a-z0-9.+-]+)( \([^)]*\))?)");
    for (std::sregex_iterator it(deps.begin(), deps.end(), kPackage), end; it != end; ++it) {
      provided.insert((*it)[1]);
    }
  }
  std::string libs = CommandOutput(std::string("ldd ") + SHMGUARD_BINARY + " | awk '/=>/{print $3}'");
  std::istringstream lines(libs);
  int checked = 0;
  for (std::string lib; std::getline(lines, lib);) {
    // A sanitizer build links the sanitizer's runtime, which no shipped image has.
    if (lib.find("/libasan.") != std::string::npos || lib.find("/libubsan.") != std::string::npos ||
        lib.find("/libtsan.") != std::string::npos) {
      continue;
    }
    std::string owner = CommandOutput("(dpkg -S " + lib + " || dpkg -S /usr" + lib + ") 2>/dev/null | head -1");
    owner = owner.substr(0, owner.find(':'));
    CAPTURE(lib, owner);
    CHECK(provided.count(owner) == 1);
    ++checked;
  }
  CHECK(checked >= 5);
}

}  // namespace
}  // namespace shmguard::test
