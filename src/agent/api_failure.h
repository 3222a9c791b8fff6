// ApiFailure: a request of the agent's (an Event, a ShmProfile written or deleted, the list the
// retention sweep reads) that the API refused or never answered, for its log. Each one is
// logged, as client-go's event broadcaster logs every Event the server rejects
// (k8s.io/client-go v0.37.2 tools/record/event.go:355-366: at error level, but at V(5) when the
// namespace is terminating). WriteResults counts a part's writes.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <ostream>
#include <string>

#include "core/values/result.h"
#include "kube/kube_client.h"

namespace shmguard::agent {

struct ApiFailure {
  std::string what;  // the object: "Event ShmNearFull ml/train-0", "ShmProfile ml/job.train"
  int status = 0;    // the API's answer; 0 when none came
  std::string why;   // the API's Status message, or why no answer came
  // The API refused it because its namespace is being deleted: a Status cause NamespaceTerminating
  // (its JSON key is "reason"), which the namespace lifecycle admission plugin adds to its 403
  // (k8s.io/apiserver v0.37.2 pkg/admission/plugin/namespace/lifecycle/admission.go:179-186).
  // Expected when a namespace goes, so logged at debug level.
  bool namespace_terminating = false;
};

// Where the agent's parts report their failed writes; empty: nowhere.
using ApiFailureSink = std::function<void(const ApiFailure&)>;

// `res`, a failed answer to a write of `what`.
ApiFailure FailureOf(std::string what, const Result<kube::KubeResponse>& res);

// A part's writes by result: ok; refused because the namespace is being deleted (expected as a
// namespace goes, so counted apart); or failed, which is what an operator should look at. Every
// write not ok also goes to the sink, for the log.
class WriteResults {
 public:
  explicit WriteResults(ApiFailureSink sink) : sink_(std::move(sink)) {}
  void Ok() { ok_++; }
  void NotTaken(const ApiFailure& f);

  uint64_t ok() const { return ok_; }
  uint64_t failed() const { return failed_; }
  uint64_t namespace_terminating() const { return terminating_; }
  // The counter `name` by result: ok, failed, namespace_terminating.
  void Collect(std::ostream& out, const char* name, const char* help) const;

 private:
  ApiFailureSink sink_;
  std::atomic<uint64_t> ok_{0}, failed_{0}, terminating_{0};
};

}  // namespace shmguard::agent
