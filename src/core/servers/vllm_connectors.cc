// What vLLM 0.33.0 makes of a launch's flags together, once all are read: the connectors its
// --kv-transfer-config and --ec-transfer-config name (their JSON, the dotted form already merged
// by PrepareVllmWords), and a --config file shmguard cannot read. Lines cited are the vllm-0.33.0
// wheel (docs/sources.md §10).
#include <nlohmann/json.hpp>

#include "core/servers/internal/launch_text.h"
#include "core/servers/internal/server_rows.h"
#include "core/servers/internal/vllm_words.h"

namespace shmguard::servers {
namespace {

using nlohmann::json;

// int(value) of a JSON value as vLLM takes it (cpu/spec.py:101-105, cpu/common.py:89-93): a
// number truncated, a string as Python's int() reads it; nullopt for what is falsy (vLLM then
// raises) or unreadable.
std::optional<int64_t> IntOf(const json& v) {
  if (v.is_number_integer()) return v.get<int64_t>() > 0 ? std::optional(v.get<int64_t>()) : std::nullopt;
  if (v.is_number_float()) {
    const double d = v.get<double>();
    if (!(d >= 1 && d < 9.2e18)) return std::nullopt;
    return static_cast<int64_t>(d);
  }
  if (v.is_string()) {
    auto n = ParsePythonInt(v.get<std::string>());
    if (n && *n > 0) return n;
  }
  return std::nullopt;
}

// The object a flag's JSON names, or why it is not one.
std::optional<json> ObjectOf(const std::string& text) {
  json v = json::parse(text, nullptr, false);
  if (v.is_discarded() || !v.is_object()) return std::nullopt;
  return v;
}

std::string ConnectorOf(const json& c, const char* field) {
  auto it = c.find(field);
  return it != c.end() && it->is_string() ? it->get<std::string>() : "";
}

const json& Extra(const json& c, const char* field) {
  static const json kEmpty = json::object();
  auto it = c.find(field);
  return it != c.end() && it->is_object() ? *it : kEmpty;
}

// The CPU offload region OffloadingConnector makes: its cpu_bytes_to_use, for its spec
// CPUOffloadingSpec (the default) or TieringOffloadingSpec, a CPUOffloadingSpec with tiers
// below it (v1/kv_offload/factory.py:31, 62-69; cpu/spec.py:99-130: whole chunks of at most
// that many bytes, one region per engine, shared_offload_region.py:117-128). A MultiConnector
// holds its connectors in kv_connector_extra_config.connectors
// (distributed/kv_transfer/kv_connector/v1/multi_connector.py:147-151). Returns the bytes, 0 for
// none, -1 for an OffloadingConnector without them (vLLM refuses it).
int64_t OffloadBytes(const json& c, int depth = 0) {
  const std::string connector = ConnectorOf(c, "kv_connector");
  const json& extra = Extra(c, "kv_connector_extra_config");
  if (connector == "OffloadingConnector") {
    auto it = extra.find("cpu_bytes_to_use");
    if (it == extra.end()) return -1;
    auto n = IntOf(*it);
    return n ? *n : -1;
  }
  if (connector == "MultiConnector" && depth < 4) {
    auto list = extra.find("connectors");
    if (list == extra.end() || !list->is_array()) return 0;
    int64_t sum = 0;
    for (const json& child : *list) {
      if (!child.is_object()) continue;
      const int64_t bytes = OffloadBytes(child, depth + 1);
      if (bytes < 0) return -1;
      if (__builtin_add_overflow(sum, bytes, &sum)) return -1;
    }
    return sum;
  }
  return 0;
}

}  // namespace

std::string SettleVllm(ServerLaunch& l) {
  if (!l.kv_transfer_config.empty()) {
    auto c = ObjectOf(l.kv_transfer_config);
    if (!c) return "--kv-transfer-config=" + l.kv_transfer_config + " is not a JSON object, which vLLM refuses";
    const int64_t bytes = OffloadBytes(*c);
    if (bytes < 0) {
      return "--kv-transfer-config names OffloadingConnector without a positive cpu_bytes_to_use in its "
             "kv_connector_extra_config, which vLLM refuses (v1/kv_offload/cpu/spec.py:101-105)";
    }
    l.kv_connector_offload_bytes = bytes;
  }
  if (!l.ec_transfer_config.empty()) {
    auto c = ObjectOf(l.ec_transfer_config);
    if (!c) return "--ec-transfer-config=" + l.ec_transfer_config + " is not a JSON object, which vLLM refuses";
    // ECCPUConnector's region: ec_cpu_bytes in whole blocks of one embedding
    // (distributed/ec_transfer/ec_connector/cpu/common.py:71-99, ec_shared_region.py:85-131).
    if (ConnectorOf(*c, "ec_connector") == "ECCPUConnector") {
      const json& extra = Extra(*c, "ec_connector_extra_config");
      auto it = extra.find("ec_cpu_bytes");
      auto n = it == extra.end() ? std::nullopt : IntOf(*it);
      if (!n) {
        return "--ec-transfer-config names ECCPUConnector without a positive ec_cpu_bytes in its "
               "ec_connector_extra_config, which vLLM refuses (ec_connector/cpu/common.py:88-91)";
      }
      l.ec_cache_bytes = *n;
    }
  }
  // --config FILE puts its flags before the command line's (utils/argparse_utils.py:366-367,
  // 499-560): a count the command line does not give may be in the file.
  if (!l.config_file.empty() && !GivenOnCommandLine(l, {"--tensor-parallel-size", "-tp"})) {
    l.tensor_parallel = 0;
  }
  return "";
}

}  // namespace shmguard::servers
