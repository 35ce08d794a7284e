//go:build tools

// Package kwok pins KWOK, which plays the kubelets of the nodes Karpenter and the tests create.
package kwok

import _ "sigs.k8s.io/kwok/cmd/kwok"
