// LoadPolicyFor and LoadObservationsFor.
#include "cli/commands/policy_file.h"

#include "io/config/config.h"
#include "io/config/observations.h"

namespace shmguard::cli {

std::optional<Policy> LoadPolicyFor(const std::string& path, const char* command, std::ostream& err) {
  if (path.empty()) return Policy{};
  auto policy = io::LoadPolicy(path);
  if (!policy) {
    err << "shmguard " << command << ": config " << policy.error().ToString() << "\n";
    return std::nullopt;
  }
  return std::move(*policy);
}

bool LoadObservationsFor(const std::string& path, const char* command, ObservationIndex& index, std::ostream& err) {
  if (path.empty()) return true;
  auto loaded = io::LoadObservations(path);
  if (!loaded) {
    err << "shmguard " << command << ": --observations " << loaded.error().ToString() << "\n";
    return false;
  }
  index = std::move(*loaded);
  return true;
}

}  // namespace shmguard::cli
