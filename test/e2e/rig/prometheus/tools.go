//go:build tools

// Package tools pins the Prometheus server and promtool so `go mod tidy` keeps them.
// It is never compiled (build tag "tools").
package tools

import (
	_ "github.com/prometheus/prometheus/cmd/prometheus"
	_ "github.com/prometheus/prometheus/cmd/promtool"
)
