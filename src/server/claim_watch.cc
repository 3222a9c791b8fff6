// ClaimWatch: the claims' and templates' informers and the index the admission path reads.
#include "server/claim_watch.h"

namespace shmguard::server {
namespace {

kube::InformerHandlers Rebuilding(ClaimWatch* watch, void (ClaimWatch::*rebuild)()) {
  return kube::InformerHandlers{
      .on_add = [watch, rebuild](const nlohmann::json&) { (watch->*rebuild)(); },
      .on_update = [watch, rebuild](const nlohmann::json&, const nlohmann::json&) { (watch->*rebuild)(); },
      .on_delete = [watch, rebuild](const nlohmann::json&) { (watch->*rebuild)(); },
      .on_synced = [watch, rebuild] { (watch->*rebuild)(); }};
}

}  // namespace

ClaimWatch::ClaimWatch(std::shared_ptr<kube::KubeClient> client)
    : client_(std::move(client)),
      claims_(client_, kube::ReflectorOptions{.path = kResourceClaimsPath}, Rebuilding(this, &ClaimWatch::Rebuild)),
      templates_(client_, kube::ReflectorOptions{.path = kResourceClaimTemplatesPath},
                 Rebuilding(this, &ClaimWatch::Rebuild)) {}

ClaimWatch::~ClaimWatch() { Stop(); }

void ClaimWatch::Start() {
  if (!client_) return;
  started_ = std::chrono::steady_clock::now();
  claims_.Start();
  templates_.Start();
}

void ClaimWatch::Stop() {
  claims_.Stop();
  templates_.Stop();
}

std::string ClaimWatch::NotReadyReason() const {
  if (synced() || std::chrono::steady_clock::now() - started_ >= kSyncGrace) return {};
  return "the ResourceClaims and ResourceClaimTemplates are not listed yet";
}

std::shared_ptr<const ClaimIndex> ClaimWatch::Snapshot() const {
  std::lock_guard<std::mutex> lock(mu_);
  return index_;
}

void ClaimWatch::Rebuild() {
  // Copy on write, as ProfileWatch: a request in flight keeps the snapshot it took.
  std::lock_guard<std::mutex> rebuilding(rebuild_mu_);
  auto next = std::make_shared<ClaimIndex>();
  // The store's objects came from lists too, whose items carry no kind: each informer says it.
  for (const auto& object : claims_.List()) next->Add(JsonNode(*object), "ResourceClaim");
  for (const auto& object : templates_.List()) next->Add(JsonNode(*object), "ResourceClaimTemplate");
  std::lock_guard<std::mutex> lock(mu_);
  index_ = std::move(next);
}

}  // namespace shmguard::server
