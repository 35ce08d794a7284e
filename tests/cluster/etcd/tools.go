//go:build tools

// Package etcd pins etcd's server; the module's root package is its main package.
package etcd

import _ "go.etcd.io/etcd/server/v3"
