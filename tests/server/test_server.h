// An in-process WebhookServer on free loopback ports with a fresh certificate, for the [net]
// tests. Options may be adjusted before it starts; logs are off (tests assert on answers).
#pragma once

#include <catch2/catch.hpp>
#include <fstream>
#include <functional>
#include <memory>
#include <string>

#include "server/server.h"
#include "tls_fixture.h"

namespace shmguard::test {

struct TestServer {
  TempDir dir;
  std::unique_ptr<server::WebhookServer> server;
  std::string ca, cert, key, config;

  // `policy_yaml` non-empty: written to policy.yaml and passed as --config.
  explicit TestServer(const std::string& policy_yaml = "",
                      const std::function<void(server::ServerOptions&)>& adjust = {}) {
    ca = dir.File("ca.crt");
    cert = dir.File("tls.crt");
    key = dir.File("tls.key");
    IssueCert(dir.path(), "first", cert, key);
    server::ServerOptions o;
    o.bind_address = "127.0.0.1";
    o.port = 0;
    o.metrics_port = 0;
    o.cert_file = cert;
    o.key_file = key;
    o.reload_interval = std::chrono::milliseconds(50);
    if (!policy_yaml.empty()) {
      config = dir.File("policy.yaml");
      std::ofstream(config) << policy_yaml;
      o.config_file = config;
    }
    if (adjust) adjust(o);
    auto log = server::MakeLogger(server::LogFormat::kText);
    log->set_level(spdlog::level::off);
    auto s = server::WebhookServer::Create(o, log);
    INFO((s ? "" : s.error().ToString()));
    REQUIRE(s.has_value());
    server = std::move(*s);
    REQUIRE(server->Start().has_value());
  }
  int port() const { return server->port(); }
};

}  // namespace shmguard::test
