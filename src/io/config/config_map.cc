// ReadConfigMap: a ConfigMap's data for the core, YAML files parsed.
#include "io/config/config_map.h"

#include "io/formats/yaml_json.h"

namespace shmguard::io {

std::optional<ReadConfigMapResult> ReadConfigMap(JsonNode object, std::string_view kind) {
  if (kind.empty()) {
    if (object.StringMember("apiVersion") != "v1") return std::nullopt;
    kind = object.StringMember("kind");
  }
  if (kind != "ConfigMap") return std::nullopt;
  JsonNode meta = object.Find("metadata");
  ReadConfigMapResult out{std::string(meta.StringMember("namespace")), std::string(meta.StringMember("name")), {}};
  for (auto [key, value] : object.Find("data").Members()) {
    if (!value.IsString()) continue;
    const std::string_view text = value.String();
    const bool yaml = key.ends_with(".yaml") || key.ends_with(".yml");
    if (text.size() > (yaml ? kMaxConfigYamlBytes : kMaxConfigValueBytes)) continue;
    auto file = std::make_shared<ConfigFile>();
    file->source = "ConfigMap " + out.name + ", key " + std::string(key);
    file->text = std::string(text);
    if (yaml) {
      auto parsed = ParseYaml(text);
      if (parsed) {
        file->yaml = parsed->Root().Copy();
      } else {
        file->yaml_error = parsed.error().message;
      }
    }
    out.data.insert_or_assign(std::string(key), std::move(file));
  }
  return out;
}

}  // namespace shmguard::io
