// The chart's values and the Dockerfile, read as files: every .Values reference the templates
// make exists in values.yaml and its schema; the image builds on Debian 12 as the README does and
// runs slim and non-root with every library the binary links.
#include <algorithm>
#include <catch2/catch.hpp>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <utility>
#include <vector>

#include "io/files/manifests.h"
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

// SECURITY.md's limits table against the programs' defaults (`shmguard-webhook --help`, `shmguard audit --help`) and
// the chart's values: each row that names a flag states that flag's default, and the chart passes
// the same value, so that the three cannot disagree (the chart once capped connections at 512
// while the table and the binary said 10,000).
TEST_CASE("SECURITY.md's limits are the webhook's and audit's defaults and the chart's values", "[deploy]") {
  std::map<std::string, double> defaults;  // flag -> default, from the help
  for (const std::string& command : {std::string(SHMGUARD_WEBHOOK_BINARY), std::string(SHMGUARD_BINARY) + " audit"}) {
    const std::string help = CommandOutput(command + " --help");
    static const std::regex kOption(R"((--[a-z-]+) [A-Z]+(?:[^=\n]*)=([0-9.]+))");
    for (std::sregex_iterator it(help.begin(), help.end(), kOption), end; it != end; ++it) {
      defaults[(*it)[1]] = std::stod((*it)[2]);
    }
  }
  REQUIRE(defaults.count("--max-body-bytes"));
  const std::string security = ReadTestdata("../../SECURITY.md");
  // "| What | 8 MiB (`--max-body-bytes`) |", "half of them (`--peer-connection-share 0.5`)",
  // "... (`--max-connections`, 0; ...)": the value stated before the flag, or after it.
  static const std::regex kRow(R"(\n\| [^|\n]+ \| ([^|\n]*?)\(`(--[a-z-]+)(?: ([0-9.]+))?`(?:, ([0-9.]+))?)");
  static const std::map<std::string, double> kUnits = {{"KiB", 1024.0}, {"MiB", 1048576.0}, {"s", 1.0}};
  int checked = 0;
  for (std::sregex_iterator it(security.begin(), security.end(), kRow), end; it != end; ++it) {
    const std::string flag = (*it)[2];
    if (!defaults.count(flag)) continue;  // a flag of another command (--config, --observations)
    double stated = -1;
    if ((*it)[3].matched) {
      stated = std::stod((*it)[3]);
    } else if ((*it)[4].matched) {
      stated = std::stod((*it)[4]);
    } else {
      std::smatch q;
      const std::string before = (*it)[1];
      REQUIRE(std::regex_search(before, q, std::regex(R"(^([0-9][0-9,.]*) (KiB|MiB|s)\b)")));
      std::string digits = q[1];
      digits.erase(std::remove(digits.begin(), digits.end(), ','), digits.end());
      stated = std::stod(digits) * kUnits.at(q[2]);
      if (flag.ends_with("-ms")) stated *= 1000;  // "1 s of ... (--review-cpu-budget-ms)"
    }
    CAPTURE(flag, stated, defaults[flag]);
    CHECK(stated == defaults[flag]);
    ++checked;
  }
  CHECK(checked >= 6);
  // The chart passes the same.
  const json values = Yaml(ReadTestdata("../../charts/shmguard/values.yaml"));
  const std::map<std::string, std::string> chart = {{"--max-body-bytes", "maxBodyBytes"},
                                                    {"--max-connections", "maxConnections"},
                                                    {"--peer-connection-share", "peerConnectionShare"},
                                                    {"--keep-alive-seconds", "keepAliveSeconds"}};
  for (const auto& [flag, key] : chart) {
    CAPTURE(flag, key);
    REQUIRE(values["server"].contains(key));
    CHECK(values["server"][key].get<double>() == defaults.at(flag));
  }
}

TEST_CASE("Dockerfile: Debian 12 build, slim non-root runtime with every library the programs link", "[deploy]") {
  std::string docker = ReadTestdata("../../Dockerfile");
  CHECK(docker.find("FROM debian:12 AS build") != std::string::npos);
  CHECK(docker.find("FROM debian:12-slim") != std::string::npos);
  CHECK(docker.find("./scripts/install-deps.sh") != std::string::npos);  // the README's own steps
  CHECK(docker.find("./scripts/build.sh") != std::string::npos);
  // An image per deployable, each with its own program only: the stages of a target and the
  // stages they build on (FROM) copy that program and no other.
  std::map<std::string, std::string> stages;  // name -> its text
  std::map<std::string, std::string> base;    // name -> the stage it is FROM
  static const std::regex kStage(R"(\nFROM ([^ \n]+)(?: AS ([a-z-]+))?\n)");
  std::vector<std::pair<size_t, std::smatch>> heads;
  for (std::sregex_iterator it(docker.begin(), docker.end(), kStage), end; it != end; ++it) {
    heads.push_back({static_cast<size_t>(it->position()), *it});
  }
  for (size_t i = 0; i < heads.size(); ++i) {
    size_t from = heads[i].first, to = i + 1 < heads.size() ? heads[i + 1].first : docker.size();
    std::string name = heads[i].second[2].matched ? heads[i].second[2].str() : "(default)";
    stages[name] = docker.substr(from, to - from);
    base[name] = heads[i].second[1];
  }
  for (const std::string& program : {std::string("webhook"), std::string("agent")}) {
    for (const std::string& target : {program, program + "-prebuilt"}) {
      CAPTURE(target);
      REQUIRE(stages.count(target));
      std::string text, at = target;
      for (; stages.count(at); at = base[at]) text += stages[at];
      CHECK(text.find("ENTRYPOINT [\"shmguard-" + program + "\"]") != std::string::npos);
      static const std::regex kCopy(R"(\nCOPY (?:--from=build )?[^ \n]*/?(shmguard[a-z-]*) )");
      int copies = 0;
      for (std::sregex_iterator it(text.begin(), text.end(), kCopy), end; it != end; ++it, ++copies) {
        CHECK((*it)[1] == "shmguard-" + program);
      }
      CHECK(copies == 1);
    }
  }
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
  std::string libs = CommandOutput(std::string("ldd ") + SHMGUARD_WEBHOOK_BINARY + " " + SHMGUARD_AGENT_BINARY +
                                   " | awk '/=>/{print $3}' | sort -u");
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
