// ReadDeviceShmMounts: base64, protobuf's wire format (only what a ContainerAllocateResponse's
// mounts need: varints and length-delimited fields), and the checkpoint's JSON.
#include "core/node/device_checkpoint.h"

#include <cstdint>
#include <optional>

#include "core/facts/shm_mount.h"

namespace shmguard {
namespace {

// Standard base64 with padding, as Go's encoding/json writes []byte; nullopt when it is not.
std::optional<std::string> DecodeBase64(std::string_view text) {
  auto value = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
  };
  if (text.size() % 4 != 0) return std::nullopt;
  std::string out;
  out.reserve(text.size() / 4 * 3);
  for (size_t i = 0; i < text.size(); i += 4) {
    int v[4];
    int pad = 0;
    for (int j = 0; j < 4; ++j) {
      const char c = text[i + j];
      if (c == '=' && i + 4 == text.size() && j >= 2) {
        v[j] = 0;
        ++pad;
        continue;
      }
      if (pad > 0 || (v[j] = value(c)) < 0) return std::nullopt;
    }
    const uint32_t n = (v[0] << 18) | (v[1] << 12) | (v[2] << 6) | v[3];
    out += static_cast<char>(n >> 16);
    if (pad < 2) out += static_cast<char>((n >> 8) & 0xFF);
    if (pad < 1) out += static_cast<char>(n & 0xFF);
  }
  return out;
}

// A reader of protobuf's wire format (protobuf.dev/programming-guides/encoding).
class Wire {
 public:
  explicit Wire(std::string_view data) : data_(data) {}
  bool done() const { return at_ >= data_.size(); }

  std::optional<uint64_t> Varint() {
    uint64_t v = 0;
    for (int shift = 0; shift < 64 && at_ < data_.size(); shift += 7) {
      const auto byte = static_cast<unsigned char>(data_[at_++]);
      v |= static_cast<uint64_t>(byte & 0x7F) << shift;
      if (!(byte & 0x80)) return v;
    }
    return std::nullopt;
  }
  // The next field's number and wire type, and for a length-delimited one its bytes; false at a
  // malformed field. Fields of other types are skipped.
  bool Next(uint64_t& field, std::string_view& bytes) {
    auto key = Varint();
    if (!key) return false;
    field = *key >> 3;
    bytes = {};
    switch (*key & 7) {
      case 0: return Varint().has_value();
      case 1: return Skip(8);
      case 5: return Skip(4);
      case 2: {
        auto n = Varint();
        if (!n || *n > data_.size() - at_) return false;
        bytes = data_.substr(at_, *n);
        at_ += *n;
        return true;
      }
      default: return false;  // groups (3, 4) are not in proto3
    }
  }

 private:
  bool Skip(size_t n) {
    if (n > data_.size() - at_) return false;
    at_ += n;
    return true;
  }
  std::string_view data_;
  size_t at_ = 0;
};

bool IsDevShm(std::string_view path) { return IsShmMountPath(path); }

}  // namespace

Result<std::vector<std::pair<std::string, std::string>>> AllocateResponseMounts(std::string_view protobuf) {
  std::vector<std::pair<std::string, std::string>> out;
  const Error bad = MakeError(Code::kInvalidInput, "is not a ContainerAllocateResponse in protobuf's wire format");
  Wire response(protobuf);
  while (!response.done()) {
    uint64_t field = 0;
    std::string_view bytes;
    if (!response.Next(field, bytes)) return bad;
    if (field != 2) continue;  // envs, devices, annotations, cdi_devices
    Wire mount(bytes);
    std::pair<std::string, std::string> m;
    while (!mount.done()) {
      uint64_t f = 0;
      std::string_view value;
      if (!mount.Next(f, value)) return bad;
      if (f == 1) m.first = std::string(value);
      if (f == 2) m.second = std::string(value);
    }
    out.push_back(std::move(m));
  }
  return out;
}

Result<std::vector<DeviceShmMount>> ReadDeviceShmMounts(JsonNode checkpoint) {
  std::vector<DeviceShmMount> out;
  JsonNode entries = checkpoint.Find("Data").Find("PodDeviceEntries");
  if (!checkpoint.IsObject() || !checkpoint.Find("Data").IsObject()) {
    return MakeError(Code::kInvalidInput, "is not the kubelet's device manager checkpoint (no Data)",
                     Location::Pointer("/Data"));
  }
  size_t i = 0;
  for (JsonNode e : entries.Items()) {
    const std::string at = "/Data/PodDeviceEntries/" + std::to_string(i++);
    JsonNode resp = e.Find("AllocResp");
    if (!resp) continue;
    auto bytes = resp.IsString() ? DecodeBase64(resp.String()) : std::nullopt;
    if (!bytes) return MakeError(Code::kInvalidInput, "is not base64", Location::Pointer(at + "/AllocResp"));
    auto mounts = AllocateResponseMounts(*bytes);
    if (!mounts) return MakeError(Code::kInvalidInput, mounts.error().message, Location::Pointer(at + "/AllocResp"));
    for (auto& [container_path, host_path] : *mounts) {
      if (!IsDevShm(container_path)) continue;
      out.push_back({std::string(e.StringMember("PodUID")), std::string(e.StringMember("ContainerName")),
                     std::string(e.StringMember("ResourceName")), std::move(host_path)});
    }
  }
  return out;
}

bool VolumeAtDevShm(JsonNode pod, std::string_view container) {
  JsonNode spec = pod.Find("spec");
  for (const char* list : {"containers", "initContainers"}) {
    for (JsonNode c : spec.Find(list).Items()) {
      if (c.StringMember("name") != container) continue;
      for (JsonNode m : c.Find("volumeMounts").Items()) {
        if (IsDevShm(m.StringMember("mountPath"))) return true;
      }
    }
  }
  return false;
}

}  // namespace shmguard
