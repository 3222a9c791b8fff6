// How many webhook connections fit in the process's memory limit, so that connections held open
// end in refusals the server chooses (HttpsServerOptions::evict_idle), never in an OOM kill:
// `--max-connections` times the largest idle connection, plus the largest requests in flight,
// plus the process's own, within the limit of its cgroup.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

namespace shmguard::server {

// What one idle connection may hold: an idle TLS connection's OpenSSL state (its buffers
// released, SSL_MODE_RELEASE_BUFFERS), the loop's record of it and the kernel's socket, rounded
// up (bench/README.md, "Connections": 20 KiB measured, the rest the kernel's socket); a
// connection that has sent nothing holds no TLS state (0.25 KiB measured).
inline constexpr int64_t kIdleConnectionBytes = int64_t{32} << 10;
// The process without connections: its code, the policy, the informers' indexes at their usual
// size.
inline constexpr int64_t kBaseBytes = int64_t{32} << 20;
// Without a memory limit: the most connections served at once.
inline constexpr size_t kMaxConnectionsUnlimited = 10000;

// The connections that fit in `memory_limit` bytes with `threads` event loops, each answering at
// most one request of `max_body_bytes` at a time (its body and its parsed form: 2×): at least 64,
// at most kMaxConnectionsUnlimited. No limit: kMaxConnectionsUnlimited.
size_t ConnectionsFor(std::optional<int64_t> memory_limit, int threads, size_t max_body_bytes);

// The memory limit of this process's cgroup (v2 memory.max, v1 memory.limit_in_bytes); nullopt
// when it has none or it cannot be read.
std::optional<int64_t> CgroupMemoryLimit();

}  // namespace shmguard::server
