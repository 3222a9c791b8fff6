// Informer: a relist compared with the store tells what changed; watch events change the store;
// Stop closes the watch and joins its thread.
#include "kube/informer.h"

#include <catch2/catch.hpp>
#include <thread>

#include "kube/fake_api.h"
#include "test_util.h"

namespace shmguard::kube {
namespace {

using std::chrono::milliseconds;

nlohmann::json Pod(const std::string& name, const std::string& version, const std::string& ns = "ml") {
  nlohmann::json pod = {{"metadata", {{"name", name}, {"resourceVersion", version}}}};
  if (!ns.empty()) pod["metadata"]["namespace"] = ns;
  pod["metadata"]["managedFields"] = nlohmann::json::array({{{"manager", "kubectl"}}});
  return pod;
}

// An informer with no API server behind it (never started), recording what it tells.
struct Told {
  Told()
      : informer(nullptr, {},
                 InformerHandlers{[this](const nlohmann::json& o) { said.push_back("add " + ObjectKey(o)); },
                                  [this](const nlohmann::json& was, const nlohmann::json& o) {
                                    said.push_back("update " + ObjectKey(o) + " " +
                                                   was["metadata"].value("resourceVersion", "") + "->" +
                                                   o["metadata"].value("resourceVersion", ""));
                                  },
                                  [this](const nlohmann::json& o) { said.push_back("delete " + ObjectKey(o)); },
                                  [this] { said.push_back("synced"); }, nullptr}) {}
  std::vector<std::string> Take() { return std::exchange(said, {}); }
  std::vector<std::string> said;
  Informer informer;
};

std::vector<nlohmann::json> Items(std::initializer_list<nlohmann::json> items) { return items; }

TEST_CASE("Informer tells a relist's changes as the watch would have, and events as they come", "[informer]") {
  Told t;
  CHECK_FALSE(t.informer.HasSynced());
  t.informer.Replace(Items({Pod("a", "1"), Pod("b", "1"), Pod("node-1", "1", "")}));
  CHECK(t.informer.HasSynced());
  CHECK(t.Take() == std::vector<std::string>{"add ml/a", "add ml/b", "add node-1", "synced"});
  CHECK(t.informer.List().front()->at("metadata").count("managedFields") == 0);

  // b was deleted and c added while the watch was down; a changed; node-1 did not.
  t.informer.Replace(Items({Pod("a", "2"), Pod("c", "1"), Pod("node-1", "1", "")}));
  CHECK(t.Take() == std::vector<std::string>{"update ml/a 1->2", "add ml/c", "delete ml/b", "synced"});

  struct Event {
    const char* type;
    nlohmann::json object;
    std::vector<std::string> told;
    size_t size;
  };
  const Event events[] = {
      {"ADDED", Pod("d", "3"), {"add ml/d"}, 4},
      {"MODIFIED", Pod("d", "4"), {"update ml/d 3->4"}, 4},
      {"MODIFIED", Pod("e", "5"), {"add ml/e"}, 5},  // a change to an object not yet known
      {"DELETED", Pod("d", "6"), {"delete ml/d"}, 4},
      {"DELETED", Pod("never", "7"), {"delete ml/never"}, 4},                 // told; nothing to remove
      {"ADDED", nlohmann::json{{"metadata", {{"namespace", "ml"}}}}, {}, 4},  // no name: not stored
      {"BOOKMARK", Pod("f", "8"), {}, 4},
  };
  for (const auto& e : events) {
    CAPTURE(e.type, e.object.dump());
    t.informer.Apply(e.type, nlohmann::json(e.object));
    CHECK(t.Take() == e.told);
    CHECK(t.informer.size() == e.size);
  }
}

TEST_CASE("Informer syncs from an API server, and Stop closes the open watch and joins", "[informer][net]") {
  test::FakeApi api([](const test::FakeRequest& r, size_t) {
    test::FakeAnswer a;
    if (r.watch) {
      a.silence = milliseconds(30000);  // open, silent
    } else {
      a.body = R"({"metadata":{"resourceVersion":"4"},"items":[{"metadata":{"name":"a","namespace":"ml"}}]})";
    }
    return a;
  });
  auto client = std::make_shared<KubeClient>(api.Config(), 1000, 100);
  ReflectorOptions options;
  options.path = "/api/v1/pods";
  std::atomic<int> synced{0};
  auto informer = std::make_unique<Informer>(client, options, InformerHandlers{{}, {}, {}, [&] { synced++; }, {}});
  informer->Start();
  REQUIRE(test::Eventually([&] { return informer->HasSynced(); }));
  REQUIRE(api.WaitFor(2));  // the watch is open
  CHECK(informer->size() == 1);
  auto start = std::chrono::steady_clock::now();
  informer->Stop();
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(2));
  informer.reset();  // nothing it started may still run (ASan and TSan builds would say)
  std::this_thread::sleep_for(milliseconds(200));
  CHECK(api.Seen().size() == 2);
  CHECK(synced == 1);
}

}  // namespace
}  // namespace shmguard::kube
