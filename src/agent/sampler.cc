// StatFsPath and Sample.
#include "agent/sampler.h"

#include <sys/statfs.h>

namespace shmguard::agent {
namespace {

constexpr long kTmpfsMagic = 0x01021994;  // linux/magic.h TMPFS_MAGIC

}  // namespace

std::optional<FsUse> StatFsPath(const std::string& path) {
  struct statfs st {};
  if (::statfs(path.c_str(), &st) != 0) return std::nullopt;
  FsUse u;
  u.size = static_cast<uint64_t>(st.f_blocks) * static_cast<uint64_t>(st.f_bsize);
  u.used = static_cast<uint64_t>(st.f_blocks - st.f_bfree) * static_cast<uint64_t>(st.f_bsize);
  u.tmpfs = st.f_type == kTmpfsMagic;
  return u;
}

SampleRound Sample(PodTable& table, const StatFs& statfs, const SamplerOptions& options, Clock::time_point now) {
  SampleRound round;
  table.With([&](std::map<std::string, AgentPod>& pods) {
    for (auto& [uid, pod] : pods) {
      bool pod_crossed = false;
      for (auto& [name, watch] : pod.volumes) {
        auto use = statfs(VolumeDir(options.kubelet_dir, uid, name));
        if (!use || !use->tmpfs) continue;  // not mounted yet, or already gone
        // What crashed processes left is no demand of the workload's: not in its peak, where the
        // processes were read; the status mode's stay in it (too large a size is safe, too small
        // is not).
        auto leak = pod.leaks.find(name);
        const uint64_t leaked =
            leak != pod.leaks.end() && leak->second.held_by_none ? static_cast<uint64_t>(leak->second.bytes) : 0;
        const bool crossed = watch.Observe(use->used, use->size, leaked);
        if (auto g = pod.growth.find(name); g != pod.growth.end() && !g->second.settled) {
          if (static_cast<int64_t>(use->size) >= g->second.to) {
            g->second.settled = true;
            round.resizes.push_back({pod.Summary(), name, g->second, true});
          } else if (now - g->second.requested > options.resize_timeout) {
            g->second.settled = true;
            round.resizes.push_back({pod.Summary(), name, g->second, false});
          }
        }
        if (crossed) {
          pod_crossed = true;
          round.crossed.push_back({pod, name, watch});
        }
      }
      const uint64_t peak = pod.Peak().first;
      if (peak > 0 && pod.recorded_at == Clock::time_point{}) pod.recorded_at = now;
      if (peak > pod.recorded_peak && (pod_crossed || now - pod.recorded_at >= options.record_interval)) {
        pod.recorded_peak = peak;
        pod.recorded_at = now;
        round.peaks.push_back(pod.Summary());
      }
    }
  });
  return round;
}

}  // namespace shmguard::agent
