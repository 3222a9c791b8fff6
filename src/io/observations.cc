// LoadObservations: every document, and every item of a List, read as a ShmProfile.
#include "io/observations.h"

#include "io/manifests.h"

namespace shmguard::io {

Result<ObservationIndex> LoadObservations(const std::string& path) {
  auto text = ReadFileText(path);
  if (!text) return text.error();
  ObservationIndex index;
  for (const Document& doc : ParseManifests(*text, path)) {
    const std::string where = path + ":" + std::to_string(doc.line);
    if (doc.error) return *doc.error;
    if (!doc.object) continue;
    const nlohmann::json& o = *doc.object;
    auto add = [&](const nlohmann::json& profile, const std::string& pointer) -> std::optional<Error> {
      // Only a List's items may leave their kind out.
      if (pointer.empty() && (!profile.is_object() || !profile.contains("kind"))) {
        return MakeError(Code::kInvalidInput, "/kind: is not a ShmProfile (nor a List of them)", where);
      }
      auto read = ReadShmProfile(profile);
      if (!read)
        return MakeError(Code::kInvalidInput, pointer + read.error().where + ": " + read.error().message, where);
      if (read->namespace_name.empty()) {
        return MakeError(Code::kInvalidInput, pointer + "/metadata/namespace: is required", where);
      }
      index.Put(std::move(*read));
      return std::nullopt;
    };
    const bool list = o.is_object() && o.contains("items") && o["items"].is_array();
    if (!list) {
      if (auto e = add(o, "")) return *e;
      continue;
    }
    for (size_t i = 0; i < o["items"].size(); ++i) {
      if (auto e = add(o["items"][i], "/items/" + std::to_string(i))) return *e;
    }
  }
  return index;
}

}  // namespace shmguard::io
