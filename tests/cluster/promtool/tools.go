//go:build tools

// Package promtool pins Prometheus's promtool, which checks and unit-tests the chart's alert rules
// and parses every dashboard expression.
package promtool

import _ "github.com/prometheus/prometheus/cmd/promtool"
