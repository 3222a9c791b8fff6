// The reflector tests' fixture: FakeApi's answers as the API server writes them (a pod, a page
// of a list, a silent watch) and a reflector running on its own thread, recording what it hands
// on.
#pragma once

#include <catch2/catch.hpp>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "kube/fake_api.h"
#include "kube/reflector.h"

namespace shmguard::kube::reflector_test {

using std::chrono::milliseconds;
using test::FakeAnswer;
using test::FakeApi;

inline std::string Pod(const std::string& name, const std::string& version) {
  return R"({"metadata":{"namespace":"ml","name":")" + name + R"(","resourceVersion":")" + version + R"("}})";
}

inline std::string List(const std::string& version, const std::vector<std::string>& items,
                        const std::string& next = "") {
  std::string out = R"({"kind":"PodList","metadata":{"resourceVersion":")" + version + "\"";
  if (!next.empty()) out += R"(,"continue":")" + next + "\"";
  out += R"(},"items":[)";
  for (size_t i = 0; i < items.size(); ++i) out += (i ? "," : "") + items[i];
  return out + "]}";
}

// A watch with no changes: the connection stays open, silent, until the test ends.
inline FakeAnswer Quiet() {
  FakeAnswer a;
  a.silence = milliseconds(30000);
  return a;
}

// A reflector on its own thread, recording what it hands on, stopped and joined at the end.
struct Running {
  explicit Running(const FakeApi& api, ReflectorOptions options = {})
      : client(std::make_shared<KubeClient>(api.Config(), 1000, 100)),
        reflector(client, Defaults(std::move(options)),
                  ReflectorHandlers{[this](std::vector<nlohmann::json>&& items) {
                                      std::lock_guard<std::mutex> lock(mu);
                                      lists.push_back(items.size());
                                    },
                                    [this](const std::string& type, nlohmann::json&& o) {
                                      std::lock_guard<std::mutex> lock(mu);
                                      const auto& meta = o["metadata"];
                                      events.push_back(type + " " + (meta.is_object() ? meta.value("name", "") : "?"));
                                    }}),
        thread([this] { reflector.Run(cancel); }) {}
  ~Running() { Stop(); }
  void Stop() {
    cancel.Cancel();
    if (thread.joinable()) thread.join();
  }
  static ReflectorOptions Defaults(ReflectorOptions o) {
    if (o.path.empty()) o.path = "/api/v1/pods";
    return o;
  }

  std::shared_ptr<KubeClient> client;
  std::mutex mu;
  std::vector<size_t> lists;
  std::vector<std::string> events;
  Reflector reflector;
  StreamCancel cancel;
  std::thread thread;
};

}  // namespace shmguard::kube::reflector_test
