//go:build tools

// Package tools pins kube-apiserver v1.36.3, the latest patch of Kubernetes 1.36 the Go module proxy
// serves, for scripts/version-matrix.sh (e2e/tools/kubernetes/pin.sh pinned it).
package tools

import _ "k8s.io/kubernetes/cmd/kube-apiserver"
