// ClaimWatch: the claims' and templates' indexed informers, publishing into the index the
// admission path reads.
#include "server/claim_watch.h"

namespace shmguard::server {
namespace {

// Each collection's list is bounded (SECURITY.md); its items carry no kind, so the informer says it.
kube::ReflectorOptions ListOptions(const char* path) {
  kube::ReflectorOptions o;
  o.path = path;
  o.max_list_items = 20'000;
  o.max_values = 600'000;
  return o;
}

kube::IndexedInformer<ClaimIndex>::Rows RowsOf(const char* kind) {
  return {.add = [kind](ClaimIndex& index, const nlohmann::json& o) { return index.Add(JsonNode(o), kind); },
          .remove = [kind](ClaimIndex& index, const nlohmann::json& o) { index.Remove(JsonNode(o), kind); }};
}

}  // namespace

ClaimWatch::ClaimWatch(std::shared_ptr<kube::KubeClient> client)
    : client_(std::move(client)),
      claims_(client_, ListOptions(kResourceClaimsPath), RowsOf("ResourceClaim"), index_),
      templates_(client_, ListOptions(kResourceClaimTemplatesPath), RowsOf("ResourceClaimTemplate"), index_) {}

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

}  // namespace shmguard::server
