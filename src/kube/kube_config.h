// KubeConfig: where the API server is and who we are to it — in a pod as client-go's
// rest.InClusterConfig reads it (the service account's token and CA), from a kubeconfig as
// kubectl reads it (a CLI run by a person), or from flags. No exec credential plugins.
#pragma once

#include <string>

#include "core/values/result.h"

namespace shmguard::kube {

struct KubeConfig {
  std::string server;      // https://HOST:PORT
  std::string ca_file;     // PEM bundle that signs the API server's certificate
  std::string token_file;  // the bearer token, re-read whenever its modification time changes
  // From a kubeconfig instead of files: the CA bundle, a fixed bearer token, and a client
  // certificate and its key, as PEM text. Empty: unused.
  std::string ca_pem, token, client_cert_pem, client_key_pem;
  bool insecure = false;  // insecure-skip-tls-verify: the server's certificate is not checked

  // From the pod's environment, as rest.InClusterConfig: KUBERNETES_SERVICE_HOST and _PORT, and
  // /var/run/secrets/kubernetes.io/serviceaccount/{token,ca.crt}. Fails with kIo when they are
  // not there (not in a pod).
  static Result<KubeConfig> InCluster();
  // From the kubeconfig file at `path` (kubectl's), for `context` ("" = its current-context):
  // the cluster's server and CA (certificate-authority[-data], insecure-skip-tls-verify) and the
  // user's token, tokenFile or client certificate (client-certificate[-data], client-key[-data]);
  // files are relative to the kubeconfig's directory. Fails with kIo when the file or a file it
  // names cannot be read, kInvalidInput naming the field when the context, cluster or user is
  // missing or the user has an exec or auth-provider plugin (not supported).
  static Result<KubeConfig> FromKubeconfig(const std::string& path, const std::string& context = "");
  // The namespace of that context ("" when it names none).
  std::string context_namespace;
};

// `flags` as a command's --api-server, --api-ca-file and --api-token-file give them: the pod's
// in-cluster configuration when `server` is empty; else all three must be set (kInvalidInput
// naming the missing flag).
Result<KubeConfig> ResolveApi(const KubeConfig& flags);

}  // namespace shmguard::kube
