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

#include "agent/api_failure.h"
#include "agent/collector.h"
#include "agent/pod_table.h"
#include "kube/kube_client.h"

namespace shmguard::agent {

class ProfileRecorder : public Collector {
 public:
  // `client` may be null (tests): nothing is written. A write the API refused or never answered
  // goes to `on_failure` too.
  ProfileRecorder(std::shared_ptr<kube::KubeClient> client, PodTable& table, ApiFailureSink on_failure = {})
      : client_(std::move(client)), table_(table), results_(on_failure), deletes_(on_failure), sink_(on_failure) {}

  // Writes the pod's peak (and a run, when `run`); false when it could not be (or lost five races
  // in a row to other writers).
  bool Record(const AgentPod& pod, bool run);

  // Deletes the ShmProfiles of every namespace last observed more than `retention_days` before
  // `now_seconds` (each with its resourceVersion as a precondition, so a profile another agent
  // wrote in between stays), reading them a page at a time; returns how many it deleted, or
  // nullopt when the list could not be read. A delete answered 404 (another agent's sweep took
  // it) or 409 (written in between) is as meant; any other refusal, and a list that could not be
  // read, goes to `on_failure` too.
  std::optional<uint64_t> Sweep(int64_t now_seconds, int64_t retention_days);

  const WriteResults& results() const { return results_; }
  // Its deletes by result (ok: deleted).
  const WriteResults& deletes() const { return deletes_; }
  uint64_t runs() const { return runs_; }
  // Its writes and its deletes by result, and the runs recorded.
  void Collect(std::ostream& out) const override;

 private:
  // The workload a pod's use is kept under (see above); its first candidate when unknown yet.
  std::string ResolveWorkload(const AgentPod& pod);

  std::shared_ptr<kube::KubeClient> client_;
  PodTable& table_;
  WriteResults results_, deletes_;
  ApiFailureSink sink_;
  std::mutex mu_;
  std::map<std::string, std::string> job_owner_;  // "namespace/job" -> the workload it belongs to
  std::atomic<uint64_t> runs_{0};
};

}  // namespace shmguard::agent
