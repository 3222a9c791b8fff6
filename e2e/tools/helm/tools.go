//go:build tools

// Package tools pins helm, built from helm.sh/helm/v3 at the version go.mod requires.
package tools

import _ "helm.sh/helm/v3/cmd/helm"
