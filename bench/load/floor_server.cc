// The floor under shmguard's rate: shmguard's own HTTPS transport (the event loop, TLS, HTTP
// parsing, the padded body buffer) answering every request
//   constant  with the ceiling's fixed AdmissionReview, at once;
//   parse     the same, after parsing the body (simdjson, viewed in place as the server does);
//   decide    with HandleAdmission's answer: parse, decision and response — the webhook's work
//             but for its routes, log line and metrics;
// bench/floor.sh runs it beside nginx and `shmguard-webhook`, which says where the time goes.
//   shmguard_floor_server CERT KEY PORT constant|parse|decide FIXED_RESPONSE_FILE
// (floor.sh takes the fixed response from bench/load/nginx.conf.in, so both answer the same bytes).
#include <openssl/ssl.h>
#include <pthread.h>
#include <signal.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>
#include <string_view>
#include <utility>

#include "core/policy/policy.h"
#include "http/https_server.h"
#include "io/formats/fast_json.h"
#include "server/admission_handler.h"

namespace {

enum class Mode { kConstant, kParse, kDecide };

int Usage(const char* argv0) {
  std::fprintf(stderr, "usage: %s CERT KEY PORT constant|parse|decide FIXED_RESPONSE_FILE\n", argv0);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 6) return Usage(argv[0]);
  const std::string_view name = argv[4];
  Mode mode;
  if (name == "constant") {
    mode = Mode::kConstant;
  } else if (name == "parse") {
    mode = Mode::kParse;
  } else if (name == "decide") {
    mode = Mode::kDecide;
  } else {
    return Usage(argv[0]);
  }
  std::ifstream in(argv[5], std::ios::binary);
  std::string fixed_response((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (!in || fixed_response.empty()) {
    std::fprintf(stderr, "cannot read the fixed response from %s\n", argv[5]);
    return 2;
  }

  SSL_CTX* ctx = SSL_CTX_new(TLS_server_method());
  SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);  // as WebhookServer sets it up
  SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION | SSL_OP_CIPHER_SERVER_PREFERENCE | SSL_OP_NO_COMPRESSION);
  if (SSL_CTX_use_certificate_chain_file(ctx, argv[1]) != 1 ||
      SSL_CTX_use_PrivateKey_file(ctx, argv[2], SSL_FILETYPE_PEM) != 1) {
    std::fprintf(stderr, "cannot load the certificate %s or the key %s\n", argv[1], argv[2]);
    return 2;
  }

  namespace server = shmguard::server;
  shmguard::http::HttpsServerOptions options;
  options.bind_address = "127.0.0.1";
  options.port = std::atoi(argv[3]);
  const shmguard::Policy policy;
  shmguard::http::HttpsServer https(
      options, ctx, [&](const shmguard::http::HttpRequest& req, shmguard::http::HttpResponse& res) {
        switch (mode) {
          case Mode::kDecide: {
            auto x = server::HandleAdmission({req.body, req.body_padded}, server::AdmissionRoute{}, {policy});
            res.status = x.status;
            res.body = std::move(x.body);
            return;
          }
          case Mode::kParse:
            if (!shmguard::io::ParseJsonView(req.body, req.body_padded)) {
              res.status = 400;
              res.body = R"({"error":"not an AdmissionReview"})";
              return;
            }
            break;
          case Mode::kConstant: break;
        }
        res.body = fixed_response;
      });
  if (auto port = https.Listen(); !port) {
    std::fprintf(stderr, "%s\n", port.error().ToString().c_str());
    return 2;
  }
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);  // before the loops start, so they inherit it
  https.Start();
  int signal = 0;
  sigwait(&signals, &signal);
  https.Stop();
  SSL_CTX_free(ctx);
  return 0;
}
