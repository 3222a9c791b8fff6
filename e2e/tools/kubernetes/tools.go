//go:build tools

// Package tools pins the commands this module builds from k8s.io/kubernetes (see pin.sh for how
// its staging modules are resolved): the control plane's kube-apiserver, kube-controller-manager
// and kubectl, and the node's kubelet, kube-scheduler and kube-proxy.
package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-proxy"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "k8s.io/kubernetes/cmd/kubectl"
	_ "k8s.io/kubernetes/cmd/kubelet"
)
