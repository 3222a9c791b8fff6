// SGLang's row against the measured oracle (tests/testdata/oracle/sglang-oracle.json): for each
// launch shape, read by SGLang 0.5.23's own parser, the groups its own initialize_model_parallel
// builds with a broadcaster, and the bytes of the files its own MessageQueue made for those whose
// writer runs in the pod, in a private /dev/shm (scripts/oracle/measure_sglang.py). The plan must
// be those files as tmpfs holds them (whole pages), and the size shmguard gives the pod the
// documented formula applied to them, so a term wrong in either direction fails.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "core/values/container_config.h"
#include "servers_test_util.h"

namespace shmguard {
namespace {

using nlohmann::json;

constexpr int64_t kPage = 4096;

TEST_CASE("PlanServer equals what SGLang 0.5.23's own broadcasters put in /dev/shm, shape by shape",
          "[sglang_oracle]") {
  const json oracle = json::parse(test::ReadTestdata("oracle/sglang-oracle.json"));
  REQUIRE(oracle.at("sglang") == "0.5.23");
  REQUIRE(oracle.at("shapes").size() >= 30);
  for (const json& shape : oracle.at("shapes")) {
    const std::string name = shape.at("name");
    SECTION(name) {
      json container = {{"command", json::array({"python3", "-m", "sglang.launch_server", "--model-path", "m"})}};
      for (const json& word : shape.at("args")) container["command"].push_back(word);
      for (const auto& [k, v] : shape.at("env").items()) container["env"].push_back({{"name", k}, {"value", v}});
      // A --config file, as a ConfigMap mounted at the path the launch names would give it.
      ContainerConfig config;
      if (shape.contains("config")) {
        auto file = std::make_shared<ConfigFile>();
        file->source = "the oracle's config.yaml";
        file->text = shape.at("config");
        file->yaml = test::Yaml(file->text);
        config.files["/etc/sglang/config.yaml"] = std::move(file);
      }
      auto read = ReadServerLaunch(JsonNode(container), "/spec/containers/0", &config);
      REQUIRE(read);
      REQUIRE(read->has_value());
      auto plan = PlanServer(**read, shape.at("gpus").get<int64_t>(), std::nullopt);
      REQUIRE(plan);
      int64_t pages = 0;
      for (const json& size : shape.at("sizes")) pages += (size.get<int64_t>() + kPage - 1) / kPage * kPage;
      CAPTURE(ServerTermsText(*plan), pages, shape.at("groups").dump());
      CHECK(plan->bytes == pages);
      CHECK(test::RequiredForServer(plan->procs, plan->bytes) == test::RequiredForServer(plan->procs, pages));
    }
  }
}

}  // namespace
}  // namespace shmguard
