// ConfigMapIndex, ResolveConfigMaps: what ConfigMaps put in a pod's containers at start.
#include "core/facts/config_maps.h"

#include <vector>

namespace shmguard {
namespace {

std::string NamespaceOr(std::string_view ns) { return ns.empty() ? "default" : std::string(ns); }

// "/etc/vllm/" + "config.yaml" -> "/etc/vllm/config.yaml", without doubled slashes.
std::string JoinPath(std::string_view dir, std::string_view file) {
  std::string out(dir);
  while (out.size() > 1 && out.back() == '/') out.pop_back();
  while (file.starts_with('/')) file.remove_prefix(1);
  return file.empty() ? out : out + (out == "/" ? "" : "/") + std::string(file);
}

// The files one configMap source lays out (relative path -> file): each key of `data` by its
// name, or only the `items` listed, at their paths (pkg/volume/configmap: MakePayload). Adds the
// ConfigMap's name to `unknown` when `index` does not hold it.
void SourceFiles(JsonNode source, std::string_view ns, const ConfigMapIndex& index,
                 std::map<std::string, std::shared_ptr<const ConfigFile>>& out, std::string& unknown) {
  const std::string_view name = source.StringMember("name");
  if (name.empty()) return;
  const ConfigMapData* data = index.Find(ns, name);
  if (!data) {
    unknown += (unknown.empty() ? "ConfigMap " : ", ConfigMap ") + std::string(name);
    return;
  }
  JsonNode items = source.Find("items");
  if (!items.IsArray()) {
    for (const auto& [key, file] : *data) out[key] = file;
    return;
  }
  for (JsonNode item : items.Items()) {
    auto it = data->find(item.StringMember("key"));
    if (it != data->end() && !item.StringMember("path").empty())
      out[std::string(item.StringMember("path"))] = it->second;
  }
}

}  // namespace

void ConfigMapIndex::Put(std::string_view namespace_name, std::string_view name, ConfigMapData data) {
  maps_.insert_or_assign(std::make_pair(NamespaceOr(namespace_name), std::string(name)),
                         std::make_shared<const ConfigMapData>(std::move(data)));
}

void ConfigMapIndex::Erase(std::string_view namespace_name, std::string_view name) {
  maps_.erase(std::make_pair(NamespaceOr(namespace_name), std::string(name)));
}

const ConfigMapData* ConfigMapIndex::Find(std::string_view namespace_name, std::string_view name) const {
  auto it = maps_.find(std::make_pair(NamespaceOr(namespace_name), std::string(name)));
  return it == maps_.end() ? nullptr : it->second.get();
}

void ResolveConfigMaps(PodTemplate& t, std::string_view namespace_name, const ConfigMapIndex& index) {
  const std::string ns = NamespaceOr(namespace_name);
  // Each volume's files by their path inside it, and the ConfigMaps it names that are not known.
  std::map<std::string, std::pair<std::map<std::string, std::shared_ptr<const ConfigFile>>, std::string>, std::less<>>
      volumes;
  for (JsonNode v : t.spec.Find("volumes").Items()) {
    const std::string_view name = v.StringMember("name");
    auto& [files, unknown] = volumes[std::string(name)];
    if (JsonNode cm = v.Find("configMap"); cm.IsObject()) SourceFiles(cm, ns, index, files, unknown);
    for (JsonNode source : v.Find("projected").Find("sources").Items()) {
      if (JsonNode cm = source.Find("configMap"); cm.IsObject()) SourceFiles(cm, ns, index, files, unknown);
    }
    if (files.empty() && unknown.empty()) volumes.erase(std::string(name));
  }
  for (const auto& slot : t.containers) {
    if (!slot.list) continue;
    for (JsonNode container : FollowPointer(t.spec, std::string(slot.path)).Items()) {
      ContainerConfig c;
      c.working_dir = std::string(container.StringMember("workingDir"));
      for (JsonNode from : container.Find("envFrom").Items()) {
        JsonNode ref = from.Find("configMapRef");
        const std::string_view name = ref.StringMember("name");
        if (name.empty()) continue;
        if (const ConfigMapData* data = index.Find(ns, name)) {
          const std::string prefix(from.StringMember("prefix"));
          for (const auto& [key, file] : *data) c.env.emplace_back(prefix + key, file->text);
        } else {
          c.unknown += (c.unknown.empty() ? "ConfigMap " : ", ConfigMap ") + std::string(name);
        }
      }
      for (JsonNode mount : container.Find("volumeMounts").Items()) {
        auto v = volumes.find(mount.StringMember("name"));
        if (v == volumes.end()) continue;
        const auto& [files, unknown] = v->second;
        if (!unknown.empty()) c.unknown += (c.unknown.empty() ? "" : ", ") + unknown;
        const std::string_view at = mount.StringMember("mountPath"), sub = mount.StringMember("subPath");
        for (const auto& [path, file] : files) {
          if (sub.empty()) {
            c.files[JoinPath(at, path)] = file;
          } else if (path == sub) {
            c.files[JoinPath(at, "")] = file;  // the one file, at the mount path itself
          } else if (path.starts_with(std::string(sub) + "/")) {
            c.files[JoinPath(at, std::string_view(path).substr(sub.size() + 1))] = file;
          }
        }
      }
      if (c.env.empty() && c.files.empty() && c.unknown.empty()) continue;
      t.container_config.emplace_back(std::string(container.StringMember("name")), std::move(c));
    }
  }
}

}  // namespace shmguard
