// DeviceMounts::Refresh: the checkpoint read when it changes, its mounts joined with the pods.
#include "agent/device_mounts.h"

#include "http/prometheus_text.h"
#include "io/files/file_text.h"
#include "io/files/input_limits.h"

namespace shmguard::agent {

std::string DeviceMounts::Refresh(const std::vector<std::shared_ptr<const nlohmann::json>>& pods) {
  if (path_.empty()) return "";
  std::string problem;
  io::FileStamp now = io::StatFile(path_);
  if (!(now == stamp_)) {
    stamp_ = now;
    mounts_.clear();
    if (now.exists) {
      auto text = io::ReadFileText(path_, io::kMaxDeviceCheckpointBytes, io::Readable::kRegularFiles);
      if (!text) {
        problem = text.error().ToString();
      } else {
        const nlohmann::json checkpoint = nlohmann::json::parse(*text, nullptr, false);
        auto mounts = checkpoint.is_discarded()
                          ? Result<std::vector<DeviceShmMount>>(MakeError(Code::kInvalidInput, "is not JSON"))
                          : ReadDeviceShmMounts(JsonNode(checkpoint));
        if (mounts) {
          mounts_ = std::move(*mounts);
        } else {
          problem = path_ + ": " + mounts.error().ToString();
        }
      }
    }
  }
  std::vector<DeviceShmUse> uses;
  if (!mounts_.empty()) {
    for (const auto& object : pods) {
      const JsonNode pod(*object);
      const JsonNode meta = pod.Find("metadata");
      const std::string_view uid = meta.StringMember("uid");
      for (const DeviceShmMount& m : mounts_) {
        if (m.pod_uid != uid) continue;
        uses.push_back({std::string(meta.StringMember("namespace")), std::string(meta.StringMember("name")), m.pod_uid,
                        m.container, m.resource, m.host_path, VolumeAtDevShm(pod, m.container)});
      }
    }
  }
  if (!problem.empty()) errors_++;
  std::lock_guard<std::mutex> lock(mu_);
  uses_ = std::move(uses);
  return problem;
}

std::vector<DeviceShmUse> DeviceMounts::uses() const {
  std::lock_guard<std::mutex> lock(mu_);
  return uses_;
}

void WriteDeviceMounts(std::ostream& out, const std::vector<DeviceShmUse>& uses) {
  http::PrometheusHeader(out, "shmguard_pod_shm_device_mount", "gauge",
                         "1 for each container whose /dev/shm a device plugin mounted (NVIDIA's in MPS mode: the MPS "
                         "daemon's tmpfs), by the resource and the node's path; hidden=\"true\" when a volume of the "
                         "pod is mounted over it.");
  for (const auto& d : uses) {
    out << "shmguard_pod_shm_device_mount{namespace=\"" << http::PrometheusLabel(d.namespace_) << "\",pod=\""
        << http::PrometheusLabel(d.pod) << "\",container=\"" << http::PrometheusLabel(d.container) << "\",resource=\""
        << http::PrometheusLabel(d.resource) << "\",host_path=\"" << http::PrometheusLabel(d.host_path)
        << "\",hidden=\"" << (d.hidden ? "true" : "false") << "\"} 1\n";
  }
}

void DeviceMounts::Collect(std::ostream& out) const {
  WriteDeviceMounts(out, uses());
  WriteSample(out, "shmguard_agent_device_checkpoint_errors_total", "counter",
              "Versions of the kubelet's device manager checkpoint the agent could not read.", errors_);
}

}  // namespace shmguard::agent
