// A fixed-rate (open-loop) HTTPS load generator: sends POSTs at a constant total rate over N
// keep-alive TLS connections and measures each latency from the time the request was
// *scheduled*, so time spent queueing behind a slow response counts (no coordinated omission).
// wrk2 is not packaged in Debian 12; this is the small client bench/run.sh uses instead.
//
// Usage: open_loop PORT PATH BODY_FILE RATE SECONDS CONNECTIONS
// Prints: RESULT rate=... sent=... p50_us=... p99_us=... p999_us=... max_us=... errors=...
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/ssl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tls_client.h"

using Clock = std::chrono::steady_clock;

using bench::Connect;
using bench::ReadResponse;

int main(int argc, char** argv) {
  if (argc != 7) {
    std::cerr << "usage: open_loop PORT PATH BODY_FILE RATE SECONDS CONNECTIONS\n";
    return 2;
  }
  int port = std::atoi(argv[1]);
  std::string path = argv[2];
  std::ifstream in(argv[3], std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  std::string body = ss.str();
  double rate = std::atof(argv[4]);
  double seconds = std::atof(argv[5]);
  int conns = std::atoi(argv[6]);
  std::string request = "POST " + path +
                        " HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
                        "Content-Length: " +
                        std::to_string(body.size()) + "\r\n\r\n" + body;
  SSL_CTX* ctx = SSL_CTX_new(TLS_client_method());
  SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, nullptr);

  std::mutex mu;
  std::vector<int64_t> latencies;
  std::atomic<int> errors{0};
  auto start = Clock::now() + std::chrono::milliseconds(200);
  const auto interval = std::chrono::duration<double>(conns / rate);  // per connection
  const int per_conn = static_cast<int>(rate * seconds / conns);
  std::vector<std::thread> threads;
  for (int c = 0; c < conns; ++c) {
    threads.emplace_back([&, c] {
      SSL* ssl = Connect(ctx, port);
      if (!ssl) {
        errors += per_conn;
        return;
      }
      std::vector<int64_t> mine;
      mine.reserve(static_cast<size_t>(per_conn));
      std::string buf;
      // Stagger the connections evenly inside one interval.
      auto offset = std::chrono::duration_cast<Clock::duration>(interval * (static_cast<double>(c) / conns));
      for (int i = 0; i < per_conn; ++i) {
        auto scheduled = start + offset + std::chrono::duration_cast<Clock::duration>(interval * i);
        std::this_thread::sleep_until(scheduled);
        if (SSL_write(ssl, request.data(), static_cast<int>(request.size())) <= 0 || !ReadResponse(ssl, buf)) {
          ++errors;
          continue;
        }
        mine.push_back(std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - scheduled).count());
      }
      std::lock_guard<std::mutex> lock(mu);
      latencies.insert(latencies.end(), mine.begin(), mine.end());
    });
  }
  for (auto& t : threads) t.join();
  std::sort(latencies.begin(), latencies.end());
  auto pct = [&](double p) {
    return latencies.empty() ? 0 : latencies[std::min(latencies.size() - 1, static_cast<size_t>(p * latencies.size()))];
  };
  std::printf("RESULT rate=%.0f sent=%zu p50_us=%lld p99_us=%lld p999_us=%lld max_us=%lld errors=%d\n", rate,
              latencies.size(), static_cast<long long>(pct(0.5)), static_cast<long long>(pct(0.99)),
              static_cast<long long>(pct(0.999)), static_cast<long long>(latencies.empty() ? 0 : latencies.back()),
              errors.load());
  return 0;
}
