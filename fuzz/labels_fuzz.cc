// libFuzzer target: attacker-chosen strings on their way into metric labels. The webhook's kind
// label is one of the table's kinds, "" or "other", whatever the caller sends, so its /metrics
// stays the same size; the agent's labels are escaped so that `shmguard top` reads back exactly
// the strings written, however they are made.
#include <cstdlib>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "agent/agent_metrics.h"
#include "agent/device_mounts.h"
#include "core/workloads/pod_templates.h"
#include "server/metrics.h"

namespace {

// The input cut at NUL bytes into at most `n` strings (missing ones empty).
std::vector<std::string> Fields(std::string_view data, size_t n) {
  std::vector<std::string> out(n);
  size_t i = 0;
  for (char c : data) {
    if (c == '\0' && i + 1 < n) {
      ++i;
    } else {
      out[i] += c;
    }
  }
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto f = Fields(std::string_view(reinterpret_cast<const char*>(data), size), 7);

  // The webhook: a kind of any bytes is counted under a label from a fixed set, and every kind
  // label /metrics shows is one of that set. (The text may well contain the input itself: the
  // fuzzer learns to copy pieces of the HELP lines.)
  const auto known = [](std::string_view label) {
    bool found = label.empty() || label == "other";
    for (const auto& k : shmguard::KnownKinds()) found = found || label == k.kind;
    return found;
  };
  if (!known(shmguard::server::KindLabel(f[0]))) std::abort();
  static shmguard::server::Metrics metrics;
  metrics.ObserveRequest("mutate", f[0], "allowed", 0.001);
  const std::string rendered = metrics.Render("fuzz");
  constexpr std::string_view kKind = ",kind=\"";
  for (size_t at = rendered.find(kKind); at != std::string::npos; at = rendered.find(kKind, at + 1)) {
    const size_t begin = at + kKind.size();
    const size_t end = rendered.find('"', begin);
    if (end == std::string::npos || !known(std::string_view(rendered).substr(begin, end - begin))) std::abort();
  }

  // The agent: what it writes, top reads back unchanged.
  shmguard::agent::VolumeUse use;
  use.namespace_ = f[0], use.pod = f[1], use.volume = f[2], use.workload = f[3];
  use.used = 1, use.size = 4, use.peak = 2;
  shmguard::agent::DeviceShmUse device{f[0], f[4], "uid", f[5], f[6], "/run/mps", true};
  std::ostringstream out;
  shmguard::agent::WriteVolumeMetrics(out, {use});
  shmguard::agent::WriteDeviceMounts(out, {device});
  const std::string text = out.str();
  const auto rows = shmguard::agent::ParseShmMetrics(text);
  bool volume = false, mount = false;
  for (const auto& r : rows) {
    if (r.device.empty() && r.namespace_ == f[0] && r.pod == f[1] && r.volume == f[2] && r.workload == f[3] &&
        r.used == 1 && r.size == 4 && r.peak == 2) {
      volume = true;
    }
    if (!r.device.empty() && r.namespace_ == f[0] && r.pod == f[4] && r.container == f[5] && r.device == f[6] &&
        r.hidden) {
      mount = true;
    }
  }
  // An empty resource reads back as a volume row; everything else must come back.
  if (!volume || (!mount && !f[6].empty())) std::abort();
  return 0;
}
