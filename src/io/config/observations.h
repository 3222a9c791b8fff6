// LoadObservations: ShmProfiles from a file (`kubectl get shmprofiles -A -o yaml`, a List, or
// one profile per document), for `shmguard audit --observations FILE`.
#pragma once

#include <string>
#include <string_view>

#include "core/plan/shm_profile.h"
#include "core/values/result.h"

namespace shmguard::io {

// Fails with kIo when the file cannot be read, kInvalidInput with where = "file:line" (and the
// field's pointer in the message) for a document or profile that cannot be read, or a profile
// without metadata.namespace.
Result<ObservationIndex> LoadObservations(const std::string& path);
// The same, of text already read; `path` names it in errors.
Result<ObservationIndex> ParseObservations(std::string_view text, const std::string& path);

}  // namespace shmguard::io
