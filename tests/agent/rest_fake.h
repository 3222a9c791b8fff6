// RestFake: an API server for the agent's tests (TLS on loopback, its own CA), keeping objects by
// path with resourceVersions, recording every request, Event and resize.
#pragma once

#include <httplib.h>

#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "kube/kube_client.h"
#include "tls_fixture.h"

namespace shmguard::test {

using nlohmann::json;

// Objects by path. GET answers one or 404; POST to a collection creates (409 when it exists);
// PUT replaces when the resourceVersion matches (409 otherwise); PATCH of an Event is taken.
// A pod's resize subresource answers per `resize`.
class RestFake {
 public:
  enum class Resize { kApply, kDropVolumes, kReject };
  Resize resize = Resize::kApply;

  // `one_at_a_time`: one request at a time, each on a connection of its own (requests queue
  // behind one the test holds), for a test that starts the agent's informer beside its writes.
  explicit RestFake(bool one_at_a_time = false) {
    test::MakeCa(dir_.path());
    test::IssueCert(dir_.path(), "localhost", dir_.File("tls.crt"), dir_.File("tls.key"));
    std::ofstream(dir_.File("token")) << "t\n";
    server_ = std::make_unique<httplib::SSLServer>(dir_.File("tls.crt").c_str(), dir_.File("tls.key").c_str());
    auto handle = [this](const httplib::Request& req, httplib::Response& res) { Answer(req, res); };
    server_->Get(".*", handle);
    server_->Post(".*", handle);
    server_->Put(".*", handle);
    server_->Patch(".*", handle);
    server_->Delete(".*", handle);
    server_->set_tcp_nodelay(true);
    if (one_at_a_time) {
      server_->new_task_queue = [] { return new httplib::ThreadPool(1); };
      server_->set_keep_alive_max_count(1);
    }
    port_ = server_->bind_to_any_port("127.0.0.1");
    serving_ = std::thread([this] { server_->listen_after_bind(); });
  }
  ~RestFake() {
    server_->stop();
    serving_.join();
  }
  std::shared_ptr<kube::KubeClient> Client() {
    kube::KubeConfig c;
    c.server = "https://localhost:" + std::to_string(port_);
    c.ca_file = dir_.File("ca.crt");
    c.token_file = dir_.File("token");
    return std::make_shared<kube::KubeClient>(c, 1000, 1000);
  }
  void Put(const std::string& path, json object) {
    std::lock_guard<std::mutex> lock(mu_);
    object["metadata"]["resourceVersion"] = std::to_string(++version_);
    objects_[path] = std::move(object);
  }
  std::optional<json> Get(const std::string& path) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = objects_.find(path);
    if (it == objects_.end()) return std::nullopt;
    return it->second;
  }
  std::vector<std::string> Seen() {
    std::lock_guard<std::mutex> lock(mu_);
    return seen_;
  }
  std::vector<json> Events() {
    std::lock_guard<std::mutex> lock(mu_);
    return events_;
  }
  std::vector<std::string> Resizes() {
    std::lock_guard<std::mutex> lock(mu_);
    return resizes_;
  }
  // Another writer changes the object between the agent's read and its write (or its delete),
  // once.
  std::function<void()> before_put, before_delete;
  // Runs before each Event is taken (a slow API server: the test blocks it here).
  std::function<void()> before_event;
  // Events are refused (403), as without RBAC for them.
  bool refuse_events = false;
  // Deletes are refused (403), as without RBAC for them; so is the cluster-wide list of
  // ShmProfiles.
  bool refuse_deletes = false;
  bool refuse_profile_list = false;
  // Every create is refused as in a namespace being deleted (403 with a NamespaceTerminating
  // cause, as the namespace lifecycle admission plugin answers).
  bool terminating = false;

 private:
  void Answer(const httplib::Request& req, httplib::Response& res) {
    std::function<void()> hook;
    {
      std::lock_guard<std::mutex> lock(mu_);
      seen_.push_back(req.method + " " + req.path);
      if (req.method == "PUT") hook = std::exchange(before_put, nullptr);
      if (req.method == "DELETE") hook = std::exchange(before_delete, nullptr);
      if (req.method == "POST" && req.path.find("/events") != std::string::npos) hook = before_event;
    }
    if (hook) hook();
    std::lock_guard<std::mutex> lock(mu_);
    json body = req.body.empty() ? json() : json::parse(req.body, nullptr, false);
    auto reply = [&](int status, const json& j) {
      res.status = status;
      res.set_content(j.dump(), "application/json");
    };
    if (terminating && req.method == "POST") {
      return reply(403, {{"kind", "Status"},
                         {"message", "unable to create new content in namespace ml because it is being terminated"},
                         {"details", {{"causes", {{{"reason", "NamespaceTerminating"}}}}}}});
    }
    if (req.path.size() > 7 && req.path.substr(req.path.size() - 7) == "/resize") {
      resizes_.push_back(req.body);
      if (resize == Resize::kReject) return reply(422, {{"kind", "Status"}, {"message", "volumes are immutable"}});
      json pod = objects_[req.path.substr(0, req.path.size() - 7)];
      if (resize == Resize::kApply) {
        for (auto& v : pod["spec"]["volumes"]) {
          if (v["name"] == body["spec"]["volumes"][0]["name"]) {
            v["emptyDir"]["sizeLimit"] = body["spec"]["volumes"][0]["emptyDir"]["sizeLimit"];
          }
        }
      }
      return reply(200, pod);
    }
    if (req.path.find("/events") != std::string::npos) {
      if (refuse_events) return reply(403, {{"kind", "Status"}, {"reason", "Forbidden"}});
      if (req.method == "POST") {
        body["metadata"]["name"] = "ev" + std::to_string(events_.size());
        events_.push_back(body);
        return reply(201, body);
      }
      return reply(200, body);
    }
    // The cluster-wide list of ShmProfiles, in pages of `limit`; the continue token is the last
    // key given, as etcd's, so a page resumes after it whatever was deleted meanwhile.
    if (req.method == "GET" && req.path == "/apis/shmguard.io/v1alpha1/shmprofiles") {
      if (refuse_profile_list) return reply(403, {{"kind", "Status"}, {"message", "shmprofiles is forbidden"}});
      const size_t limit = std::stoul(req.get_param_value("limit"));
      const std::string after = req.has_param("continue") ? req.get_param_value("continue") : "";
      json items = json::array();
      std::string last;
      bool more = false;
      for (const auto& [path, object] : objects_) {
        if (path.find("/shmprofiles/") == std::string::npos || path <= after) continue;
        if (items.size() == limit) {
          more = true;
          break;
        }
        items.push_back(object);
        last = path;
      }
      json list = {{"kind", "ShmProfileList"}, {"metadata", {{"resourceVersion", "1"}}}, {"items", items}};
      if (more) list["metadata"]["continue"] = last;
      return reply(200, list);
    }
    auto it = objects_.find(req.path);
    if (req.method == "DELETE") {
      if (refuse_deletes) return reply(403, {{"kind", "Status"}, {"message", "cannot delete shmprofiles"}});
      if (it == objects_.end()) return reply(404, {{"kind", "Status"}, {"message", "not found"}});
      if (body["preconditions"]["resourceVersion"] != it->second["metadata"]["resourceVersion"]) {
        return reply(409, {{"kind", "Status"}, {"message", "precondition failed"}});
      }
      objects_.erase(it);
      return reply(200, {{"kind", "Status"}, {"status", "Success"}});
    }
    if (req.method == "GET") {
      if (it == objects_.end()) return reply(404, {{"kind", "Status"}, {"message", "not found"}});
      return reply(200, it->second);
    }
    if (req.method == "POST") {
      std::string path = req.path + "/" + body["metadata"]["name"].get<std::string>();
      if (objects_.count(path)) return reply(409, {{"kind", "Status"}, {"message", "already exists"}});
      body["metadata"]["resourceVersion"] = std::to_string(++version_);
      objects_[path] = body;
      return reply(201, body);
    }
    if (req.method == "PUT") {
      if (it == objects_.end()) return reply(404, {{"kind", "Status"}, {"message", "not found"}});
      if (body["metadata"]["resourceVersion"] != it->second["metadata"]["resourceVersion"]) {
        return reply(409, {{"kind", "Status"}, {"message", "the object has been modified"}});
      }
      body["metadata"]["resourceVersion"] = std::to_string(++version_);
      it->second = body;
      return reply(200, body);
    }
    reply(405, json::object());
  }

  test::TempDir dir_;
  std::mutex mu_;
  std::map<std::string, json> objects_;
  std::vector<std::string> seen_, resizes_;
  std::vector<json> events_;
  int version_ = 0;
  std::unique_ptr<httplib::SSLServer> server_;
  int port_ = 0;
  std::thread serving_;
};

}  // namespace shmguard::test
