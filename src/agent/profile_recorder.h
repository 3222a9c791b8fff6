// ProfileRecorder: what a pod used, written to its workload's ShmProfile (shm_profile.h), which
// the webhook sizes the workload's next pods from — the peak when it grows, and a run when the
// pod ends. The workload is the pod's top owner: a Job's own controller (a CronJob, a JobSet)
// is read from the API, once per Job. A write is read, raised and written back with its
// resourceVersion, and read again on a conflict (another node's agent wrote in between).
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "agent/pod_table.h"
#include "kube/kube_client.h"

namespace shmguard::agent {

class ProfileRecorder {
 public:
  // `client` may be null (tests): nothing is written.
  ProfileRecorder(std::shared_ptr<kube::KubeClient> client, PodTable& table)
      : client_(std::move(client)), table_(table) {}

  // Writes the pod's peak (and a run, when `run`); false when it could not be.
  bool Record(const AgentPod& pod, bool run);

  // Deletes the ShmProfiles of every namespace last observed more than `retention_days` before
  // `now_seconds` (each with its resourceVersion as a precondition, so a profile another agent
  // wrote in between stays), reading them a page at a time; returns how many it deleted, or
  // nullopt when the list could not be read.
  std::optional<uint64_t> Sweep(int64_t now_seconds, int64_t retention_days);

  uint64_t writes() const { return writes_; }
  uint64_t deleted() const { return deleted_; }
  uint64_t failures() const { return failures_; }
  uint64_t runs() const { return runs_; }

 private:
  // The workload a pod's use is kept under (see above); its first candidate when unknown yet.
  std::string ResolveWorkload(const AgentPod& pod);

  std::shared_ptr<kube::KubeClient> client_;
  PodTable& table_;
  std::mutex mu_;
  std::map<std::string, std::string> job_owner_;  // "namespace/job" -> the workload it belongs to
  std::atomic<uint64_t> writes_{0}, failures_{0}, runs_{0}, deleted_{0};
};

}  // namespace shmguard::agent
