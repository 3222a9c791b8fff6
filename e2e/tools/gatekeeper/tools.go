//go:build tools

// Package tools pins Gatekeeper's controller manager, built from
// github.com/open-policy-agent/gatekeeper/v3 at the version go.mod requires
// (scripts/build-tools.sh --peers): a peer for bench/peers.sh.
package tools

import _ "github.com/open-policy-agent/gatekeeper/v3"
