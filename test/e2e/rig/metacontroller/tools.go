//go:build tools

// Package tools pins Metacontroller's main package so `go mod tidy` keeps it.
// It is never compiled (build tag "tools"). Keep it in step with the
// "e2e-rig: metacontroller-main" marker in go.mod.
package tools

import _ "metacontroller"
