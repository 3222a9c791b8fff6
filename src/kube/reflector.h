// Reflector: one collection of the API kept in step, as client-go's tools/cache.Reflector keeps
// it — a list (paged with limit and continue; the first served from the API server's watch
// cache with resourceVersion=0, a relist after "too old" a consistent read), then a watch from
// the list's resourceVersion with bookmarks, each watch ending after a timeout drawn at random
// between 5 and 10 minutes so that a node's clients do not reconnect together. Every failure
// backs off with jitter up to a cap — a list or watch the API server refuses (5xx, 429, which
// honours Retry-After), an answer that is not a list, an ERROR event of any code, a line that is
// not an event, a watch ended within a second with nothing in it, a connection that breaks or
// stays silent, an answer past a bound (ReflectorOptions), an exception thrown on its thread —
// so that nothing loops against the API server and nothing the API server sends ends the
// process: a 410 Gone relists at once, the rest wait and relist.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "kube/kube_client.h"

namespace shmguard::kube {

struct ReflectorOptions {
  std::string path;         // the collection, with any selectors: /api/v1/pods?fieldSelector=spec.nodeName%3Dn
  int64_t page_size = 500;  // items per list page (limit)
  // Each watch's timeoutSeconds: drawn from [min, max]. Default: client-go's 5 to 10 minutes.
  std::chrono::seconds min_watch{300}, max_watch{600};
  // A watch that sends nothing, not even a bookmark (the API server sends one about every
  // minute), for this long is dropped and watched again. Default: 2 minutes.
  std::chrono::seconds silence{120};
  // The backoff after a failure. Default: client-go's reflector, 800 ms doubling up to 30 s.
  std::chrono::milliseconds backoff_initial{800}, backoff_max{30000};
  // Bounds on what the API server may make this process hold (SECURITY.md): each page's answer
  // and each watch line in bytes, a whole list in bytes, items and pages, and the JSON values of
  // a whole list or of one watch event as parsed. Past one, the list or watch fails and is tried
  // again after the backoff. Defaults: 16 MiB a page or line; 64 MiB, 50,000 items, 1,000 pages
  // and 1,000,000 values (about 64 MB parsed) a list.
  size_t max_answer_bytes = size_t{16} << 20;
  size_t max_list_bytes = size_t{64} << 20;
  size_t max_list_items = 50'000;
  size_t max_list_pages = 1'000;
  size_t max_values = 1'000'000;
};

// What a reflector hands on: each list's items with its resourceVersion (replacing what was
// known), and each watch event (ADDED, MODIFIED, DELETED) with its object. Called on the
// reflector's thread.
struct ReflectorHandlers {
  std::function<void(std::vector<nlohmann::json>&& items)> on_list;
  std::function<void(const std::string& type, nlohmann::json&& object)> on_event;
};

// Counts of what a reflector did, for metrics and tests. `failures` counts every list or watch
// that failed; `oversized` those of them that passed a bound of ReflectorOptions; `exceptions`
// what a handler or a parse threw (a bad_alloc too), which is a failure, never the process's end.
struct ReflectorStats {
  std::atomic<uint64_t> lists{0}, pages{0}, watches{0}, failures{0}, oversized{0}, exceptions{0};
};

class Reflector {
 public:
  Reflector(std::shared_ptr<KubeClient> client, ReflectorOptions options, ReflectorHandlers handlers);

  // Lists and watches until `cancel` is cancelled, which also closes the connection being read.
  void Run(StreamCancel& cancel);
  const ReflectorStats& stats() const { return stats_; }

 private:
  // One whole list, page after page; false when it failed (the caller backs off). `consistent`:
  // from etcd (resourceVersion unset) rather than the watch cache.
  bool List(bool consistent, StreamCancel& cancel, std::chrono::milliseconds& wait);
  // One list (when not `listed`) and one watch, with the waits after a failure; true when
  // `cancel` stopped a wait.
  bool Step(StreamCancel& cancel, bool& listed, bool& consistent);
  enum class WatchEnd { kTimedOut, kGone, kFailed };
  WatchEnd Watch(StreamCancel& cancel, std::chrono::milliseconds& wait);

  std::shared_ptr<KubeClient> client_;
  ReflectorOptions options_;
  ReflectorHandlers handlers_;
  ReflectorStats stats_;
  std::string version_;  // the resourceVersion to watch from
  Backoff backoff_;
};

}  // namespace shmguard::kube
