// IndexedInformer: each object read once into the index, a list folded in at once, an event
// changing one entry; a snapshot never changes under its reader; two informers publish into one
// index.
#include "kube/indexed_informer.h"

#include <catch2/catch.hpp>
#include <map>

namespace shmguard::kube {
namespace {

using nlohmann::json;

// An index of names to versions, with a count of the objects read in and out.
struct Versions {
  std::map<std::string, std::string> by_name;
};

struct Counted {
  size_t added = 0, removed = 0;
  IndexedInformer<Versions>::Rows Rows() {
    return {.add =
                [this](Versions& v, const json& o) {
                  ++added;
                  if (!o["metadata"].contains("resourceVersion")) return false;
                  v.by_name[ObjectKey(o)] = o["metadata"]["resourceVersion"];
                  return true;
                },
            .remove =
                [this](Versions& v, const json& o) {
                  ++removed;
                  v.by_name.erase(ObjectKey(o));
                }};
  }
};

json Object(const std::string& name, const std::string& version) {
  return {{"metadata", {{"namespace", "ml"}, {"name", name}, {"resourceVersion", version}}}};
}

TEST_CASE("IndexedInformer reads each listed object once and each event's object once", "[indexed_informer]") {
  Counted counted;
  Published<Versions> index;
  IndexedInformer<Versions> informer(nullptr, ReflectorOptions{}, counted.Rows(), index);
  std::vector<json> items;
  for (int i = 0; i < 6000; ++i) items.push_back(Object("p" + std::to_string(i), "1"));
  informer.Replace(std::move(items));
  CHECK(counted.added == 6000);  // once each: a list is folded in at once, not rebuilt per object
  CHECK(index.Snapshot()->by_name.size() == 6000);
  CHECK(informer.HasSynced());

  const auto before = index.Snapshot();
  informer.Apply("MODIFIED", Object("p7", "2"));
  CHECK(counted.added == 6001);
  CHECK(counted.removed == 1);
  CHECK(index.Snapshot()->by_name.at("ml/p7") == "2");
  CHECK(before->by_name.at("ml/p7") == "1");  // the reader's snapshot is as it was

  informer.Apply("DELETED", Object("p8", "2"));
  CHECK(index.Snapshot()->by_name.count("ml/p8") == 0);
  // A relist takes out what the informer put in, and puts in what it lists now.
  informer.Replace({Object("q", "3"), json{{"metadata", {{"namespace", "ml"}, {"name", "bad"}}}}});
  CHECK(index.Snapshot()->by_name == std::map<std::string, std::string>{{"ml/q", "3"}});
  CHECK(informer.unreadable() == 1);
}

TEST_CASE("Two IndexedInformers publish into one index", "[indexed_informer]") {
  Counted a, b;
  Published<Versions> index;
  IndexedInformer<Versions> first(nullptr, ReflectorOptions{}, a.Rows(), index);
  IndexedInformer<Versions> second(nullptr, ReflectorOptions{}, b.Rows(), index);
  first.Replace({Object("x", "1")});
  second.Replace({Object("y", "1")});
  CHECK(index.Snapshot()->by_name.size() == 2);
  first.Replace({});  // the first's relist takes out only its own
  CHECK(index.Snapshot()->by_name == std::map<std::string, std::string>{{"ml/y", "1"}});
}

}  // namespace
}  // namespace shmguard::kube
