// The most bytes each input shmguard reads may hold, in one place: every reader of a file passes
// its limit to FileText::Read (io/file_text.h), which refuses more before reading it (a regular
// file, by its size) or once that much has arrived (a pipe, stdin), so neither /dev/zero nor a
// 300 MB file is read whole. SECURITY.md lists them.
#pragma once

#include <cstddef>

namespace shmguard::io {

// --config (the policy): a few KB in practice.
inline constexpr size_t kMaxPolicyBytes = size_t{1} << 20;
// --observations (ShmProfiles): one per workload, about 1 KB each.
inline constexpr size_t kMaxObservationsBytes = size_t{64} << 20;
// A kubeconfig, a service account token, a CA bundle or a client certificate.
inline constexpr size_t kMaxCredentialBytes = size_t{1} << 20;
// The kubelet's device manager checkpoint (the node agent): an entry of about 200 bytes per
// container that was given a device.
inline constexpr size_t kMaxDeviceCheckpointBytes = size_t{16} << 20;
// A manifest file or stdin of `shmguard audit` unless --max-file-bytes says otherwise.
inline constexpr size_t kDefaultMaxManifestBytes = size_t{256} << 20;

}  // namespace shmguard::io
