//go:build tools

// Package tools pins the commands this module builds: kube-apiserver, kube-controller-manager
// and kubectl from k8s.io/kubernetes (see pin.sh for how its staging modules are resolved).
package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kubectl"
)
