//go:build tools

// Package tools pins the node's container runtime, built from containerd's Go module: the
// daemon, the runc shim that starts each pod's containers, and ctr, which imports the images.
// containerd's RELEASES.md recommends 2.3.0+ or 2.4.0+ for Kubernetes 1.37.
package tools

import (
	_ "github.com/containerd/containerd/v2/cmd/containerd"
	_ "github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2"
	_ "github.com/containerd/containerd/v2/cmd/ctr"
)
