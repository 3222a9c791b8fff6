// What the hostile-client tests share: a GPU pod to review, the server under test, enough file
// descriptors for hundreds of sockets, and a review's request as the API server writes it.
#pragma once

#include <sys/resource.h>

#include <string>

#include "server/server.h"
#include "server/test_server.h"

namespace shmguard::server::hostile_test {

inline constexpr const char* kPod = R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","annotations":{
  "shmguard.io/num-workers":"8","shmguard.io/batch-bytes":"160Mi"}},"spec":{"containers":[{"name":"t",
  "resources":{"limits":{"nvidia.com/gpu":4,"memory":"64Gi"}}}]}})";

struct Server : test::TestServer {
  explicit Server(int request_timeout_seconds = 10)
      : test::TestServer("", [=](ServerOptions& o) { o.request_timeout_seconds = request_timeout_seconds; }) {}
};

// Enough file descriptors for hundreds of client and server sockets in one process.
inline void RaiseFdLimit() {
  rlimit r{};
  getrlimit(RLIMIT_NOFILE, &r);
  r.rlim_cur = r.rlim_max;
  setrlimit(RLIMIT_NOFILE, &r);
}

inline std::string Request(const std::string& body, const std::string& version = "HTTP/1.1",
                           const std::string& extra = "") {
  return "POST /mutate " + version + "\r\nHost: localhost\r\nContent-Type: application/json\r\n" + extra +
         "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
}

}  // namespace shmguard::server::hostile_test
