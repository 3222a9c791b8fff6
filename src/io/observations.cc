// LoadObservations: every document, and every item of a List, read as a ShmProfile.
#include "io/observations.h"

#include "io/manifests.h"

namespace shmguard::io {

Result<ObservationIndex> LoadObservations(const std::string& path) {
  auto text = ReadFileText(path);
  if (!text) return text.error();
  ObservationIndex index;
  for (const Document& doc : ParseManifests(*text, path)) {
    const Location where = Location::Line(doc.line, path);
    if (doc.error) return *doc.error;
    if (!doc.object) continue;
    const nlohmann::json& o = *doc.object;
    auto add = [&](const nlohmann::json& profile, const std::string& pointer) -> std::optional<Error> {
      // Only a List's items may leave their kind out.
      if (pointer.empty() && (!profile.is_object() || !profile.contains("kind"))) {
        Location at = where;
        at.pointer = "/kind";
        return MakeError(Code::kInvalidInput, "is not a ShmProfile (nor a List of them)", at);
      }
      auto read = ReadShmProfile(profile);
      Location at = where;
      if (!read) {
        at.pointer = pointer + read.error().where.pointer;
        return MakeError(Code::kInvalidInput, read.error().message, at);
      }
      if (read->namespace_name.empty()) {
        at.pointer = pointer + "/metadata/namespace";
        return MakeError(Code::kInvalidInput, "is required", at);
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
