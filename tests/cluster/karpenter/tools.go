//go:build tools

// Package karpenter pins Karpenter's own controller with its KWOK cloud provider.
package karpenter

import _ "sigs.k8s.io/karpenter/kwok"
