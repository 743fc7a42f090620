//go:build tools

// Package tools pins the etcd server main package so `go mod tidy` keeps it.
// It is never compiled (build tag "tools").
package tools

import _ "go.etcd.io/etcd/server/v3"
