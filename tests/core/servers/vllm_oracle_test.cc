// vLLM's row against the measured oracle (tests/testdata/oracle/vllm-oracle.json): for each launch
// shape, the bytes of the files vLLM 0.33.0's own objects made in a private /dev/shm
// (scripts/oracle/run.sh). The plan must be those files as tmpfs holds them (whole pages), and the
// size shmguard gives the pod the documented formula applied to them, so a term wrong in either
// direction fails. A KV offload or encoder-cache region is whole chunks or blocks of a size the
// model sets: the plan takes the bytes the flag names, at most one chunk above the region.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "servers_test_util.h"

namespace shmguard {
namespace {

using nlohmann::json;

constexpr int64_t kPage = 4096;
// The chunk and block the oracle gives its KV offload and encoder-cache regions (measure.py).
constexpr int64_t kOracleChunkBytes = 2 << 20;

json Oracle() { return json::parse(test::ReadTestdata("oracle/vllm-oracle.json")); }

TEST_CASE("PlanServer equals what vLLM 0.33.0's own objects put in /dev/shm, shape by shape", "[vllm_oracle]") {
  const json oracle = Oracle();
  REQUIRE(oracle.at("vllm") == "0.33.0");
  REQUIRE(oracle.at("shapes").size() >= 45);
  for (const json& shape : oracle.at("shapes")) {
    const std::string name = shape.at("name");
    SECTION(name) {
      json container = {{"command", json::array({"vllm", "serve", "m"})}};
      for (const json& word : shape.at("args")) container["command"].push_back(word);
      for (const auto& [k, v] : shape.at("env").items()) container["env"].push_back({{"name", k}, {"value", v}});
      auto read = ReadServerLaunch(JsonNode(container), "/spec/containers/0");
      REQUIRE(read);
      REQUIRE(read->has_value());
      const int64_t gpus = shape.at("gpus");
      auto plan = PlanServer(**read, gpus, std::nullopt);
      REQUIRE(plan);
      int64_t pages = 0;
      for (const json& size : shape.at("sizes")) pages += (size.get<int64_t>() + kPage - 1) / kPage * kPage;
      CAPTURE(ServerTermsText(*plan), pages, shape.at("objects").dump());
      const json& objects = shape.at("objects");
      const bool chunked = std::find(objects.begin(), objects.end(), "kv") != objects.end() ||
                           std::find(objects.begin(), objects.end(), "ec") != objects.end();
      if (chunked) {
        CHECK(plan->bytes >= pages);
        CHECK(plan->bytes < pages + kOracleChunkBytes * 2);
      } else {
        CHECK(plan->bytes == pages);
        CHECK(test::RequiredForServer(plan->procs, plan->bytes) == test::RequiredForServer(plan->procs, pages));
      }
    }
  }
}

}  // namespace
}  // namespace shmguard
