//go:build tools

// Package helm pins Helm, whose `lint`, `template` and `install` the install guides name and the
// tests run for real against the chart.
package helm

import _ "helm.sh/helm/v4/cmd/helm"
