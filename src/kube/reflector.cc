// Reflector::Run: list, watch, back off.
#include "kube/reflector.h"

#include <random>

namespace shmguard::kube {
namespace {

// How long a watch must have lasted for its failure to start the backoff over.
constexpr auto kHealthy = std::chrono::minutes(1);
// A watch the API server ends sooner than this with nothing in it is a failure, not a timeout
// (client-go's watchHandler: "very short watch"), so that a server closing every watch at once
// is not watched again in a loop.
constexpr auto kVeryShort = std::chrono::seconds(1);

std::string WithQuery(const std::string& path, const std::string& query) {
  return path + (path.find('?') == std::string::npos ? "?" : "&") + query;
}

std::string StringAt(const nlohmann::json& o, const char* a, const char* b) {
  if (!o.is_object()) return {};
  auto i = o.find(a);
  if (i == o.end() || !i->is_object()) return {};
  auto j = i->find(b);
  return j != i->end() && j->is_string() ? j->get<std::string>() : std::string();
}

// The wait a refusal asks for: the longer of the backoff and its Retry-After.
std::chrono::milliseconds WaitFor(Backoff& backoff, const std::string& retry_after) {
  std::chrono::milliseconds wait = backoff.Next();
  if (auto asked = ParseRetryAfter(retry_after)) wait = std::max<std::chrono::milliseconds>(wait, *asked);
  return wait;
}

// The JSON values `v` holds, itself included: what a parse made of an answer.
size_t CountValues(const nlohmann::json& v) {
  size_t n = 1;
  if (v.is_structured()) {
    for (const auto& child : v) n += CountValues(child);
  }
  return n;
}

}  // namespace

Reflector::Reflector(std::shared_ptr<KubeClient> client, ReflectorOptions options, ReflectorHandlers handlers)
    : client_(std::move(client)),
      options_(std::move(options)),
      handlers_(std::move(handlers)),
      backoff_(options_.backoff_initial, options_.backoff_max) {}

bool Reflector::List(bool consistent, StreamCancel& cancel, std::chrono::milliseconds& wait) {
  std::vector<nlohmann::json> items;
  std::string next, version;
  size_t bytes = 0, values = 0, pages = 0;
  auto oversized = [&] {
    stats_.oversized++;
    wait = WaitFor(backoff_, "");
    return false;
  };
  do {
    if (++pages > options_.max_list_pages) return oversized();
    std::string query = "limit=" + std::to_string(options_.page_size);
    if (!next.empty()) {
      query += "&continue=" + QueryValue(next);
    } else if (!consistent) {
      query += "&resourceVersion=0";  // the watch cache: no quorum read of every object
    }
    RequestOptions read;
    read.cancel = &cancel;
    read.max_body_bytes = std::min(options_.max_answer_bytes, options_.max_list_bytes - bytes);
    read.max_values = options_.max_values - values;
    auto page = client_->Request("GET", WithQuery(options_.path, query), "", "application/json", read);
    if (cancel.cancelled()) return false;
    stats_.pages++;
    if (!page) {
      if (page.error().code == Code::kInvalidInput) return oversized();  // past a bound
      wait = WaitFor(backoff_, "");
      return false;
    }
    if (!page->ok() || !page->body.is_object()) {
      wait = WaitFor(backoff_, page->retry_after);
      return false;
    }
    bytes += page->text.size();
    page->text = std::string();
    values += CountValues(page->body);
    nlohmann::json& body = page->body;
    auto found = body.find("items");
    version = StringAt(body, "metadata", "resourceVersion");
    if (found == body.end() || !found->is_array() || version.empty()) {  // not a list: try again later
      wait = WaitFor(backoff_, "");
      return false;
    }
    if (items.size() + found->size() > options_.max_list_items) return oversized();
    for (auto& item : *found) items.push_back(std::move(item));
    next = StringAt(body, "metadata", "continue");
  } while (!next.empty());
  stats_.lists++;
  version_ = version;
  handlers_.on_list(std::move(items));
  return true;
}

Reflector::WatchEnd Reflector::Watch(StreamCancel& cancel, std::chrono::milliseconds& wait) {
  static thread_local std::mt19937 rng{std::random_device{}()};
  std::uniform_int_distribution<long> pick(options_.min_watch.count(), options_.max_watch.count());
  const std::string query = "watch=1&allowWatchBookmarks=true&timeoutSeconds=" + std::to_string(pick(rng)) +
                            "&resourceVersion=" + QueryValue(version_);
  stats_.watches++;
  const auto started = std::chrono::steady_clock::now();
  bool gone = false, failed = false;
  size_t lines = 0;
  StreamEnd end = client_->Stream(
      WithQuery(options_.path, query),
      [&](std::string_view line) {
        ++lines;
        auto parsed = ParseBounded(line, options_.max_values);
        if (!parsed) {
          stats_.oversized++;
          failed = true;
          return false;
        }
        nlohmann::json& event = *parsed;
        auto type = event.is_object() ? event.find("type") : event.end();
        if (!event.is_object() || type == event.end() || !type->is_string()) {
          failed = true;  // not an event: the stream cannot be trusted (client-go's decoder ends it too)
          return false;
        }
        auto object = event.find("object");
        nlohmann::json obj = object != event.end() ? std::move(*object) : nlohmann::json();
        if (*type == "ERROR") {  // a Status: 410 is "too old", anything else a failure
          auto code = obj.is_object() ? obj.find("code") : obj.end();
          gone = obj.is_object() && code != obj.end() && code->is_number_integer() && code->get<int64_t>() == 410;
          failed = !gone;
          return false;
        }
        if (std::string v = StringAt(obj, "metadata", "resourceVersion"); !v.empty()) version_ = v;
        if (*type != "BOOKMARK") handlers_.on_event(type->get<std::string>(), std::move(obj));
        return true;
      },
      options_.silence, cancel, options_.max_answer_bytes);
  if (cancel.cancelled()) return WatchEnd::kTimedOut;
  if (end.error.find("a line longer than") == 0) stats_.oversized++;
  if (gone || end.status == 410) return WatchEnd::kGone;
  // A watch that ran a while before it failed worked: the backoff starts over (client-go resets
  // its reflector's backoff after 2 minutes of health; one events can come and go in is enough).
  if (std::chrono::steady_clock::now() - started >= kHealthy) backoff_.Reset();
  const bool very_short = lines == 0 && std::chrono::steady_clock::now() - started < kVeryShort;
  if (failed || end.status != 200 || !end.error.empty() || very_short) {
    wait = WaitFor(backoff_, end.retry_after);
    return WatchEnd::kFailed;
  }
  return WatchEnd::kTimedOut;  // the API server ended it at its timeout: watch again
}

void Reflector::Run(StreamCancel& cancel) {
  bool listed = false, consistent = false;
  while (!cancel.cancelled()) {
    try {
      if (Step(cancel, listed, consistent)) return;
    } catch (const std::exception&) {  // a handler's or a parse's, std::bad_alloc too
      stats_.exceptions++;
      stats_.failures++;
      listed = false;
      if (SleepUnlessStopped(cancel.flag(), backoff_.Next())) return;
    }
  }
}

bool Reflector::Step(StreamCancel& cancel, bool& listed, bool& consistent) {
  std::chrono::milliseconds wait{0};
  if (!listed) {
    listed = List(consistent, cancel, wait);
    if (!listed) {
      stats_.failures++;
      return SleepUnlessStopped(cancel.flag(), wait);
    }
    consistent = false;
  }
  switch (Watch(cancel, wait)) {
    case WatchEnd::kTimedOut: break;
    case WatchEnd::kGone:  // the version is too old for the watch cache: a consistent relist
      listed = false;
      consistent = true;
      break;
    case WatchEnd::kFailed:  // an ERROR event, a refusal, a broken or silent connection
      stats_.failures++;
      listed = false;  // as client-go does after a watch error: relist once the backoff passed
      return SleepUnlessStopped(cancel.flag(), wait);
  }
  return false;
}

}  // namespace shmguard::kube
