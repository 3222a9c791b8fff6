// LoadObservations: every document, and every item of a List, read as a ShmProfile.
#include "io/config/observations.h"

#include "io/files/manifests.h"

namespace shmguard::io {

Result<ObservationIndex> LoadObservations(const std::string& path) {
  auto text = ReadFileText(path, kMaxObservationsBytes);
  if (!text) return text.error();
  return ParseObservations(*text, path);
}

Result<ObservationIndex> ParseObservations(std::string_view text, const std::string& path) {
  ObservationIndex index;
  for (const Document& doc : ParseManifests(text, path)) {
    const Location where = Location::Line(doc.line, path);
    if (doc.error) return *doc.error;
    if (!doc.object) continue;
    const JsonNode o = doc.object->Root();
    auto add = [&](JsonNode profile, const std::string& pointer) -> std::optional<Error> {
      // Only a List's items may leave their kind out.
      if (pointer.empty() && (!profile.IsObject() || !profile.Find("kind"))) {
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
    if (!o.Find("items").IsArray()) {
      if (auto e = add(o, "")) return *e;
      continue;
    }
    int i = 0;
    for (JsonNode item : o.Find("items").Items()) {
      if (auto e = add(item, "/items/" + std::to_string(i++))) return *e;
    }
  }
  return index;
}

}  // namespace shmguard::io
