// ResolveConfigMaps: what ConfigMaps put in a pod's containers (envFrom's variables, the files
// configMap volumes mount), and a server's launch read with them: a vLLM or SGLang --config
// file's flags under the command line's, VLLM_* from envFrom under env's.
#include "core/facts/config_maps.h"

#include <catch2/catch.hpp>

#include "core/facts/pod_facts.h"
#include "test_util.h"

namespace shmguard {
namespace {

using nlohmann::json;

std::shared_ptr<const ConfigFile> File(const std::string& source, const std::string& text,
                                       std::optional<json> yaml = std::nullopt) {
  auto f = std::make_shared<ConfigFile>();
  f->source = source;
  f->text = text;
  f->yaml = std::move(yaml);
  return f;
}

ConfigMapIndex Index() {
  ConfigMapIndex index;
  index.Put("ml", "vllm-config",
            {{"config.yaml", File("ConfigMap vllm-config, key config.yaml", "tensor_parallel_size: 2\n",
                                  json{{"tensor_parallel_size", 2}, {"enforce-eager", true}})},
             {"bad.yaml", File("ConfigMap vllm-config, key bad.yaml", "- a\n", json::array({"a"}))}});
  index.Put("ml", "sglang-config",
            {{"config.yaml", File("ConfigMap sglang-config, key config.yaml", "tp-size: 4\nenable-pdmux: true\n",
                                  json{{"tp-size", 4}, {"enable-pdmux", true}})},
             {"under.yaml", File("ConfigMap sglang-config, key under.yaml", "tp_size: 4\n", json{{"tp_size", 4}})}});
  index.Put("ml", "vllm-env",
            {{"VLLM_MQ_MAX_CHUNK_BYTES_MB", File("ConfigMap vllm-env", "256")},
             {"MQ_MAX_CHUNK_BYTES_MB", File("ConfigMap vllm-env", "64")}});
  return index;
}

// The pod, its first container's command and the rest of that container (YAML flow members).
std::string Pod(const std::string& command, const std::string& more, const std::string& volumes) {
  return "apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: ml}\nspec:\n  volumes: " + volumes +
         "\n  containers:\n  - {name: vllm, command: " + command +
         ", resources: {limits: {nvidia.com/gpu: 8, memory: 256Gi}}" + (more.empty() ? "" : ", " + more) + "}\n";
}

struct Read {
  json object;
  PodReading reading;
  std::string unknown;
};

Read ReadWith(const std::string& yaml, const ConfigMapIndex& index) {
  Read r;
  r.object = test::Yaml(yaml);
  Workload w = test::OnlyTemplate(r.object);
  ResolveConfigMaps(w.templates[0], "ml", index);
  for (const auto& [name, c] : w.templates[0].container_config) r.unknown += c.unknown;
  r.reading = ReadPod(w.templates[0], Policy{});
  return r;
}

TEST_CASE("A vLLM --config file a ConfigMap mounts is read under the command line", "[config_maps]") {
  const std::string cfg = "[{name: cfg, configMap: {name: vllm-config}}]";
  const struct {
    const char* name;
    std::string pod;
    int64_t tensor_parallel;  // 0: left to the pod's GPUs
    bool config_read;
  } cases[] = {
      {"the file's flag",
       Pod("[vllm, serve, m, --config, /etc/vllm/config.yaml]", "volumeMounts: [{name: cfg, mountPath: /etc/vllm}]",
           cfg),
       2, true},
      {"the command line after it wins",
       Pod("[vllm, serve, m, --config, /etc/vllm/config.yaml, -tp, '4']",
           "volumeMounts: [{name: cfg, mountPath: /etc/vllm/}]", cfg),
       4, true},
      {"the command line before it wins too",
       Pod("[vllm, serve, m, -tp, '4', --config, /etc/vllm/config.yaml]",
           "volumeMounts: [{name: cfg, mountPath: /etc/vllm}]", cfg),
       4, true},
      {"an item at its path, through subPath",
       Pod("[vllm, serve, m, --config, /c.yaml]",
           "volumeMounts: [{name: cfg, mountPath: /c.yaml, subPath: serve/c.yaml}]",
           "[{name: cfg, configMap: {name: vllm-config, items: [{key: config.yaml, path: serve/c.yaml}]}}]"),
       2, true},
      {"a projected volume, a path relative to workingDir",
       Pod("[vllm, serve, m, --config, ./cfg/config.yaml]",
           "workingDir: /srv, volumeMounts: [{name: cfg, mountPath: /srv/cfg}]",
           "[{name: cfg, projected: {sources: [{configMap: {name: vllm-config}}]}}]"),
       2, true},
      {"a file the ConfigMap does not hold",
       Pod("[vllm, serve, m, --config, /etc/vllm/other.yaml]", "volumeMounts: [{name: cfg, mountPath: /etc/vllm}]",
           cfg),
       0, false},
      {"a mount elsewhere",
       Pod("[vllm, serve, m, --config, /etc/vllm/config.yaml]", "volumeMounts: [{name: cfg, mountPath: /opt}]", cfg), 0,
       false},
  };
  const ConfigMapIndex index = Index();
  for (const auto& c : cases) {
    SECTION(c.name) {
      const Read r = ReadWith(c.pod, index);
      REQUIRE_FALSE(r.reading.facts_error);
      REQUIRE(r.reading.facts.server);
      const ServerLaunch& l = *r.reading.facts.server;
      CHECK(l.config_file.empty() == c.config_read);
      if (c.tensor_parallel) CHECK(l.tensor_parallel == c.tensor_parallel);
      bool named = false;
      for (const auto& word : l.read)
        named = named || word.find("(ConfigMap vllm-config, key config.yaml)") != std::string::npos;
      CHECK(named == c.config_read);
      // Read or not, the plan is never below the file's two ranks.
      CHECK(r.reading.facts.procs >= 2);
    }
  }
}

TEST_CASE("An SGLang --config file a ConfigMap mounts is read before the command line", "[config_maps]") {
  const std::string cfg = "[{name: cfg, configMap: {name: sglang-config}}]";
  const std::string mount = "volumeMounts: [{name: cfg, mountPath: /etc/sglang}]";
  auto sglang = [](const std::string& words) {
    return "[python3, -m, sglang.launch_server, --model-path, m, " + words + "]";
  };
  const struct {
    const char* name;
    std::string words;
    int64_t tensor_parallel;  // 0: left to the pod's GPUs
    bool config_read, pdmux;
  } cases[] = {
      // server_args_config_parser.py:106: the file's flags first, then the command line.
      {"the file's flags", "--config, /etc/sglang/config.yaml", 4, true, true},
      {"the command line after it wins", "--config, /etc/sglang/config.yaml, --tp-size, '2'", 2, true, true},
      {"the command line before it wins too", "--tp, '2', --config, /etc/sglang/config.yaml", 2, true, true},
      // server_args.py:683: only the word "--config" is merged; with '=' the file is never read.
      {"--config=FILE is never read", "'--config=/etc/sglang/config.yaml'", 1, true, false},
      {"a file the ConfigMap does not hold", "--config, /etc/sglang/other.yaml", 0, false, false},
  };
  const ConfigMapIndex index = Index();
  for (const auto& c : cases) {
    SECTION(c.name) {
      const Read r = ReadWith(Pod(sglang(c.words), mount, cfg), index);
      REQUIRE_FALSE(r.reading.facts_error);
      REQUIRE(r.reading.facts.server);
      const ServerLaunch& l = *r.reading.facts.server;
      CHECK(l.server == Server::kSglang);
      CHECK(l.config_file.empty() == c.config_read);
      CHECK(l.tensor_parallel == c.tensor_parallel);
      CHECK(l.pdmux == c.pdmux);
    }
  }
  SECTION("a key SGLang passes as no flag of its parser, and a file not YAML, are errors naming them") {
    for (const auto& [words, says] :
         {std::pair<std::string, std::string>{"--config, /etc/sglang/under.yaml", "has the key tp_size"},
          {"--config, /etc/sglang/config.json", "is not a .yaml or .yml file"},
          {"--config, /etc/sglang/config.yaml, --config, /etc/sglang/config.yaml", "given twice"}}) {
      const Read r = ReadWith(Pod(sglang(words), mount, cfg), index);
      REQUIRE(r.reading.facts_error);
      CAPTURE(r.reading.facts_error->message);
      CHECK(r.reading.facts_error->message.find(says) != std::string::npos);
    }
  }
}

TEST_CASE("A --config file vLLM cannot read is an error naming it, and a ConfigMap not known is named",
          "[config_maps]") {
  const ConfigMapIndex index = Index();
  const Read bad = ReadWith(
      Pod("[vllm, serve, m, --config, /etc/vllm/bad.yaml]", "volumeMounts: [{name: cfg, mountPath: /etc/vllm}]",
          "[{name: cfg, configMap: {name: vllm-config}}]"),
      index);
  REQUIRE(bad.reading.facts_error);
  CHECK(bad.reading.facts_error->message.find("is not a YAML mapping") != std::string::npos);
  CHECK(bad.reading.facts_error->message.find("ConfigMap vllm-config, key bad.yaml") != std::string::npos);

  const Read unknown =
      ReadWith(Pod("[vllm, serve, m, --config, /etc/vllm/config.yaml]",
                   "volumeMounts: [{name: cfg, mountPath: /etc/vllm}]", "[{name: cfg, configMap: {name: elsewhere}}]"),
               index);
  CHECK(unknown.unknown == "ConfigMap elsewhere");
  REQUIRE(unknown.reading.facts.server);
  CHECK(unknown.reading.facts.server->config_file == "/etc/vllm/config.yaml");
}

TEST_CASE("envFrom's variables are read under the container's env", "[config_maps]") {
  const struct {
    const char* name;
    std::string more;
    int64_t chunk_mib;
  } cases[] = {
      {"envFrom", "envFrom: [{configMapRef: {name: vllm-env}}]", 256},
      {"env wins over envFrom",
       "envFrom: [{configMapRef: {name: vllm-env}}], env: [{name: VLLM_MQ_MAX_CHUNK_BYTES_MB, value: '32'}]", 32},
      {"a prefix", "envFrom: [{configMapRef: {name: vllm-env}, prefix: VLLM_}]", 64},
      {"a later source wins",
       "envFrom: [{configMapRef: {name: vllm-env}}, {configMapRef: {name: vllm-env}, prefix: VLLM_}]", 64},
      {"an unknown ConfigMap", "envFrom: [{configMapRef: {name: elsewhere}}]", 16},
  };
  const ConfigMapIndex index = Index();
  for (const auto& c : cases) {
    SECTION(c.name) {
      const Read r = ReadWith(Pod("[vllm, serve, m, -tp, '8']", c.more, "[]"), index);
      REQUIRE(r.reading.facts.server);
      CHECK(r.reading.facts.server->mq_chunk_bytes == c.chunk_mib << 20);
    }
  }
}

}  // namespace
}  // namespace shmguard
