// The agent's Events: the table of reasons and types, and their words.
#include "agent/agent_events.h"

#include <cstdio>
#include <iterator>

#include "core/node/leaked_segments.h"

namespace shmguard::agent {
namespace {

// One row an Event, in AgentEvent's order.
constexpr AgentEventInfo kAgentEvents[] = {
    {AgentEvent::kShmNearFull, "ShmNearFull", "Warning"},
    {AgentEvent::kShmGrown, "ShmGrown", "Normal"},
    {AgentEvent::kShmGrowthRefused, "ShmGrowthRefused", "Warning"},
    {AgentEvent::kShmLeaked, "ShmLeaked", "Warning"},
    {AgentEvent::kShmLeakReclaimed, "ShmLeakReclaimed", "Normal"},
    {AgentEvent::kShmLeakNotReclaimed, "ShmLeakNotReclaimed", "Warning"},
    {AgentEvent::kShmUnpatched, "ShmUnpatched", "Warning"},
    {AgentEvent::kShmHidesDeviceMount, "ShmHidesDeviceMount", "Warning"},
    {AgentEvent::kShmMemoryLimitBelowShm, "ShmMemoryLimitBelowShm", "Warning"},
};
constexpr bool InEventOrder() {
  for (size_t i = 0; i < std::size(kAgentEvents); ++i) {
    if (static_cast<size_t>(kAgentEvents[i].event) != i) return false;
  }
  return std::size(kAgentEvents) == static_cast<size_t>(AgentEvent::kShmMemoryLimitBelowShm) + 1;
}
static_assert(InEventOrder(), "kAgentEvents has one row for each AgentEvent, in its order");

// Where a peak goes when a volume is not grown.
constexpr const char* kPeakRecorded = " is recorded for the workload's next pods.";

}  // namespace

const AgentEventInfo& InfoOf(AgentEvent e) { return kAgentEvents[static_cast<size_t>(e)]; }

std::string Mib(uint64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f MiB", static_cast<double>(bytes) / (1 << 20));
  return buf;
}

std::string NearFullWords(const std::string& volume, uint64_t used, uint64_t size, uint64_t peak) {
  const int percent = static_cast<int>(100.0 * static_cast<double>(used) / static_cast<double>(size));
  return "/dev/shm (volume " + volume + ") is " + std::to_string(percent) + "% full: " + Mib(used) + " of " +
         Mib(size) + " used, peak " + Mib(peak) +
         ". A DataLoader worker that needs more dies with a Bus error: raise the size (shmguard.io/batch-bytes, "
         "num-workers, prefetch-factor).";
}

std::string GrownWords(const std::string& volume, const std::string& sizes, int64_t ms) {
  return "/dev/shm (volume " + volume + ") grown in place from " + sizes + " in " + std::to_string(ms) +
         " ms (resize subresource).";
}

std::string NotGrownWords(const std::string& volume, const std::string& sizes, const std::string& why, uint64_t peak) {
  return "/dev/shm (volume " + volume + ") is not grown in place" + (sizes.empty() ? "" : " from " + sizes) + ": " +
         why + ". Its peak " + Mib(peak) + kPeakRecorded;
}

std::string GrowthTimedOutWords(const std::string& volume, const std::string& sizes, int64_t ms) {
  return "/dev/shm (volume " + volume + ") was not grown from " + sizes + " within " + std::to_string(ms / 1000) +
         " s. The peak" + kPeakRecorded;
}

std::string KubeletRefusedWords(const std::string& volume, const std::string& sizes, int64_t ms,
                                const std::string& message) {
  return "the kubelet refused to grow /dev/shm (volume " + volume + ") from " + sizes + " (read " + std::to_string(ms) +
         " ms after the resize): " + message + ". The sizeLimit is put back; the peak" + kPeakRecorded;
}

std::string LeakedWords(int64_t files, int64_t bytes, int64_t restarts) {
  return std::to_string(files) + " file(s), " + Mib(static_cast<uint64_t>(bytes)) +
         ", in /dev/shm are held by no process of the pod after " + std::to_string(restarts) +
         " container restart(s): segments a process left when it ended. They count against the memory limit and "
         "stay until the pod is deleted (emptyDir keeps its files across container restarts). Let shmguard delete "
         "them while no container runs: annotate the pod " +
         std::string(kReclaimLeakedAnnotation) + ": \"true\" or set reclaimLeakedSegments in its namespace's rule.";
}

std::string LeakReclaimedWords(const std::string& volume, size_t files, int64_t bytes, const std::string& error) {
  return "Deleted " + std::to_string(files) + " file(s), " + Mib(static_cast<uint64_t>(bytes)) +
         ", from /dev/shm (volume " + volume + ") that no process of the pod held while none of its containers ran (" +
         std::string(kReclaimLeakedAnnotation) + " or the policy's reclaimLeakedSegments)" +
         (error.empty() ? "." : "; not all: " + error + ".");
}

std::string LeakNotReclaimedWords(const std::string& volume, const std::string& error) {
  return "Could not delete the leaked files in /dev/shm (volume " + volume + "): " + error +
         ". The agent needs the chart's agent.reclaimLeakedSegments (a writable kubelet pod directory) to delete "
         "them.";
}

std::string LeakNeedsExactWords(const std::string& volume) {
  return "Did not delete the leaked files in /dev/shm (volume " + volume +
         "): deleting them is safe only when the pod's processes are read (the agent's --leaked-segments=exact, "
         "the chart's agent.leakedSegments: exact), and this agent reads the pod's status only.";
}

std::string UnpatchedWords(const std::string& current, int64_t required_bytes, bool policy_made) {
  const std::string how = policy_made
                              ? "an admission policy sized it (shmguard's webhook did not answer when it was created)"
                              : "shmguard's webhook did not patch it when it was created (it was down, slow, or not "
                                "installed yet)";
  return "/dev/shm is " + current + ", below the " + Mib(static_cast<uint64_t>(required_bytes)) +
         " shmguard would give this pod: " + how +
         ". A DataLoader or server that needs more dies with a Bus error: recreate the pod to be sized.";
}

std::string HidesDeviceMountWords(const std::string& container, const std::string& resource,
                                  const std::string& host_path) {
  return "A volume mounted at /dev/shm of container " + container + " hides what the device plugin for " + resource +
         " mounted there (" + host_path +
         " on the node: NVIDIA's plugin in MPS mode mounts the MPS daemon's tmpfs), so CUDA MPS clients in it cannot "
         "reach the daemon. Add " +
         resource + " to the shmguard policy's mpsResources: its pods then get no dshm.";
}

}  // namespace shmguard::agent
