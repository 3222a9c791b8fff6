// Informer: the store, the diff of a relist against it, the thread.
#include "kube/informer.h"

namespace shmguard::kube {
namespace {

// The object as stored: without metadata.managedFields.
std::shared_ptr<const nlohmann::json> Stored(nlohmann::json&& object) {
  if (object.is_object()) {
    auto meta = object.find("metadata");
    if (meta != object.end() && meta->is_object()) meta->erase("managedFields");
  }
  return std::make_shared<const nlohmann::json>(std::move(object));
}

std::string Version(const nlohmann::json& o) {
  auto meta = o.find("metadata");
  if (meta == o.end() || !meta->is_object()) return {};
  auto v = meta->find("resourceVersion");
  return v != meta->end() && v->is_string() ? v->get<std::string>() : std::string();
}

}  // namespace

std::string ObjectKey(const nlohmann::json& object) {
  if (!object.is_object()) return {};
  auto meta = object.find("metadata");
  if (meta == object.end() || !meta->is_object()) return {};
  auto name = meta->find("name");
  if (name == meta->end() || !name->is_string() || name->get_ref<const std::string&>().empty()) return {};
  auto ns = meta->find("namespace");
  const bool namespaced = ns != meta->end() && ns->is_string() && !ns->get_ref<const std::string&>().empty();
  return namespaced ? ns->get<std::string>() + "/" + name->get<std::string>() : name->get<std::string>();
}

Informer::Informer(std::shared_ptr<KubeClient> client, ReflectorOptions options, InformerHandlers handlers)
    : handlers_(std::move(handlers)),
      reflector_(std::move(client), std::move(options),
                 ReflectorHandlers{
                     [this](std::vector<nlohmann::json>&& items) { Replace(std::move(items)); },
                     [this](const std::string& type, nlohmann::json&& object) { Apply(type, std::move(object)); }}) {}

Informer::~Informer() { Stop(); }

void Informer::Start() {
  if (thread_.joinable() || cancel_.cancelled()) return;
  thread_ = std::thread([this] { reflector_.Run(cancel_); });
}

void Informer::Stop() {
  cancel_.Cancel();
  if (thread_.joinable()) thread_.join();
}

std::vector<std::shared_ptr<const nlohmann::json>> Informer::List() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::shared_ptr<const nlohmann::json>> out;
  out.reserve(store_.size());
  for (const auto& [key, object] : store_) out.push_back(object);
  return out;
}

size_t Informer::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return store_.size();
}

void Informer::Replace(std::vector<nlohmann::json>&& items) {
  Store next;
  for (auto& item : items) {
    std::string key = ObjectKey(item);
    if (!key.empty()) next[key] = Stored(std::move(item));
  }
  Store previous;
  {
    std::lock_guard<std::mutex> lock(mu_);
    previous.swap(store_);
    store_ = next;
  }
  if (handlers_.on_relisted) {
    Objects before, after;
    before.reserve(previous.size());
    after.reserve(next.size());
    for (const auto& [key, object] : previous) before.push_back(object);
    for (const auto& [key, object] : next) after.push_back(object);
    handlers_.on_relisted(before, after);
    synced_ = true;
    if (handlers_.on_synced) handlers_.on_synced();
    return;
  }
  // What changed, as the watch would have told it.
  for (const auto& [key, object] : next) {
    auto was = previous.find(key);
    if (was == previous.end()) {
      if (handlers_.on_add) handlers_.on_add(*object);
    } else if (Version(*was->second) != Version(*object) || Version(*object).empty()) {
      if (handlers_.on_update) handlers_.on_update(*was->second, *object);
    }
  }
  for (const auto& [key, object] : previous) {
    if (!next.count(key) && handlers_.on_delete) handlers_.on_delete(*object);
  }
  synced_ = true;
  if (handlers_.on_synced) handlers_.on_synced();
}

void Informer::Apply(const std::string& type, nlohmann::json&& object) {
  const std::string key = ObjectKey(object);
  if (key.empty()) return;
  auto stored = Stored(std::move(object));
  std::shared_ptr<const nlohmann::json> old;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = store_.find(key);
    if (it != store_.end()) old = it->second;
    if (type == "DELETED") {
      if (it != store_.end()) store_.erase(it);
    } else if (type == "ADDED" || type == "MODIFIED") {
      store_[key] = stored;
    } else {
      return;
    }
  }
  if (type == "DELETED") {
    if (handlers_.on_delete) handlers_.on_delete(old ? *old : *stored);
  } else if (old) {
    if (handlers_.on_update) handlers_.on_update(*old, *stored);
  } else if (handlers_.on_add) {
    handlers_.on_add(*stored);
  }
}

}  // namespace shmguard::kube
