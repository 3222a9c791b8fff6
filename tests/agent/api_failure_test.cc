// FailureOf: what the agent logs of a write the API did not take.
#include "agent/api_failure.h"

#include <catch2/catch.hpp>
#include <sstream>
#include <vector>

namespace shmguard::agent {
namespace {

using nlohmann::json;

kube::KubeResponse Answer(int status, json body) {
  kube::KubeResponse r;
  r.status = status;
  r.body = std::move(body);
  return r;
}

TEST_CASE("FailureOf names the object and gives the API's words or why none came", "[api_failure]") {
  struct Case {
    const char* name;
    Result<kube::KubeResponse> res;
    int status;
    const char* why;
    bool terminating;
  };
  const json terminating = {
      {"kind", "Status"},
      {"message",
       "pods \"x\" is forbidden: unable to create new content in namespace ml because it is being terminated"},
      {"reason", "Forbidden"},
      {"details",
       {{"causes", {{{"reason", "NamespaceTerminating"}, {"message", "namespace ml is being terminated"}}}}}},
      {"code", 403}};
  const Case cases[] = {
      {"no answer", MakeError(Code::kIo, "connection refused"), 0, "connection refused", false},
      {"a conflict", Answer(409, {{"kind", "Status"}, {"message", "the object has been modified"}}), 409,
       "the object has been modified", false},
      {"no RBAC", Answer(403, {{"kind", "Status"}, {"reason", "Forbidden"}}), 403, "HTTP 403", false},
      {"a terminating namespace", Answer(403, terminating), 403, "being terminated", true},
      {"a cause of another kind", Answer(422, {{"details", {{"causes", {{{"reason", "FieldValueInvalid"}}}}}}}), 422,
       "HTTP 422", false},
  };
  for (const auto& c : cases) {
    SECTION(c.name) {
      const ApiFailure f = FailureOf("ShmProfile ml/job.train", c.res);
      CHECK(f.what == "ShmProfile ml/job.train");
      CHECK(f.status == c.status);
      CHECK_THAT(f.why, Catch::Contains(c.why));
      CHECK(f.namespace_terminating == c.terminating);
    }
  }
}

TEST_CASE("WriteResults counts a refusal for a terminating namespace apart, and reports every one", "[api_failure]") {
  std::vector<std::string> reported;
  WriteResults results([&](const ApiFailure& f) { reported.push_back(f.what); });
  results.Ok();
  results.Ok();
  ApiFailure refused{"Event ShmNearFull ml/a", 403, "forbidden", false};
  ApiFailure going{"ShmProfile ml/job.a", 403, "being terminated", true};
  results.NotTaken(refused);
  results.NotTaken(going);
  results.NotTaken(going);
  CHECK(results.ok() == 2);
  CHECK(results.failed() == 1);
  CHECK(results.namespace_terminating() == 2);
  CHECK(reported == std::vector<std::string>{"Event ShmNearFull ml/a", "ShmProfile ml/job.a", "ShmProfile ml/job.a"});
  std::ostringstream out;
  results.Collect(out, "shmguard_agent_x_total", "X.");
  CHECK(out.str() ==
        "# HELP shmguard_agent_x_total X.\n# TYPE shmguard_agent_x_total counter\n"
        "shmguard_agent_x_total{result=\"ok\"} 2\nshmguard_agent_x_total{result=\"failed\"} 1\n"
        "shmguard_agent_x_total{result=\"namespace_terminating\"} 2\n");
  WriteResults silent({});  // no sink: only counted
  silent.NotTaken(refused);
  CHECK(silent.failed() == 1);
}

}  // namespace
}  // namespace shmguard::agent
