// FailureOf: a failed write's status, the API's own words, and whether its namespace was going;
// WriteResults: a part's writes counted by result.
#include "agent/api_failure.h"

#include "core/values/json_node.h"
#include "http/prometheus_text.h"

namespace shmguard::agent {

ApiFailure FailureOf(std::string what, const Result<kube::KubeResponse>& res) {
  ApiFailure f;
  f.what = std::move(what);
  if (!res) {
    f.why = res.error().ToString();
    return f;
  }
  f.status = res->status;
  f.why = res->Message();
  for (JsonNode cause : JsonNode(res->body).Find("details").Find("causes").Items()) {
    f.namespace_terminating = f.namespace_terminating || cause.StringMember("reason") == "NamespaceTerminating";
  }
  return f;
}

void WriteResults::NotTaken(const ApiFailure& f) {
  (f.namespace_terminating ? terminating_ : failed_)++;
  if (sink_) sink_(f);
}

void WriteResults::Collect(std::ostream& out, const char* name, const char* help) const {
  http::WriteCounterBy(out, name, help, "result",
                       {{"ok", ok_}, {"failed", failed_}, {"namespace_terminating", terminating_}});
}

}  // namespace shmguard::agent
