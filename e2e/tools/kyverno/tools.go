//go:build tools

// Package tools pins Kyverno's admission controller, built from github.com/kyverno/kyverno at
// the version go.mod requires (scripts/build-tools.sh --peers): a peer for bench/peers.sh.
package tools

import _ "github.com/kyverno/kyverno/cmd/kyverno"
