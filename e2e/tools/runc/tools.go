//go:build tools

// Package tools pins runc, the OCI runtime containerd's shim calls. It is built with cgo and the
// seccomp tag (libseccomp), so a pod's RuntimeDefault seccomp profile is enforced, not refused.
package tools

import (
	_ "github.com/opencontainers/runc"
)
