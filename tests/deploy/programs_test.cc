// A program per deployable, held to what it links: the symbols of shmguard-webhook,
// shmguard-agent and shmguard (nm) against the rooms each must not carry. The agent, which runs
// on every node with the privileges docs/agent.md lists, carries no webhook (no admission, no
// certificate it serves, no TLS policy), no manifest reader, no audit output and no report.
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "test_util.h"

namespace shmguard::test {
namespace {

struct Program {
  const char* name;
  const char* path;
  std::vector<std::string> carries;  // symbols it must define (the check can see them)
  std::vector<std::string> never;    // symbols it must not define
};

TEST_CASE("each program carries its deployable and not the others'", "[deploy]") {
  const std::string webhook = "shmguard::server::";
  const std::string agent = "shmguard::agent::ShmAgent::";
  const std::vector<std::string> cli = {"shmguard::cli::RunAuditCommand", "shmguard::cli::ReportHtml",
                                        "shmguard::cli::MakeSarifPrinter", "shmguard::cli::RunPlanCommand"};
  const std::string manifests = "shmguard::io::ParseManifests";
  const Program programs[] = {
      {"shmguard-webhook",
       SHMGUARD_WEBHOOK_BINARY,
       {webhook, "shmguard::cli::RunWebhook"},
       {agent, "shmguard::cli::RunAgent", cli[0], cli[1], cli[2], cli[3]}},
      {"shmguard-agent",
       SHMGUARD_AGENT_BINARY,
       {agent, "shmguard::cli::RunAgent"},
       {webhook, "shmguard::cli::RunWebhook", manifests, cli[0], cli[1], cli[2], cli[3]}},
      {"shmguard",
       SHMGUARD_BINARY,
       {cli[0], cli[1], cli[2], cli[3], manifests},
       {webhook, agent, "shmguard::cli::RunWebhook", "shmguard::cli::RunAgent"}},
  };
  for (const Program& p : programs) {
    CAPTURE(p.name);
    const std::string symbols = CommandOutput(std::string("nm -C --defined-only '") + p.path + "'");
    REQUIRE(symbols.size() > 1000);  // not stripped: the check can see
    for (const auto& s : p.carries) {
      CAPTURE(s);
      CHECK(symbols.find(s) != std::string::npos);
    }
    for (const auto& s : p.never) {
      CAPTURE(s);
      CHECK(symbols.find(s) == std::string::npos);
    }
  }
}

// The agent never serves TLS: it imports none of OpenSSL's calls that load a certificate or a
// private key to serve with (its API client verifies the API server's chain, which needs neither).
TEST_CASE("shmguard-agent loads no certificate or key to serve", "[deploy]") {
  const std::string imports = CommandOutput(std::string("nm -D --undefined-only '") + SHMGUARD_AGENT_BINARY + "'");
  REQUIRE(imports.find("SSL_") != std::string::npos);  // it does use OpenSSL, as the API's client
  for (const char* call : {"SSL_CTX_use_certificate", "SSL_CTX_use_PrivateKey", "SSL_CTX_use_certificate_chain_file",
                           "SSL_CTX_check_private_key"}) {
    CAPTURE(call);
    CHECK(imports.find(call) == std::string::npos);
  }
}

}  // namespace
}  // namespace shmguard::test
