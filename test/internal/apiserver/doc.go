// Package apiserver runs a real Kubernetes API server for the tests: kube-apiserver and etcd built with
// `go build` from the Go module proxy at the versions test/go.mod pins (its `tool` lines: k8s.io/kubernetes
// v1.34.3, go.etcd.io/etcd/server/v3 v3.6.6), cached between runs, started on loopback and stopped when the
// tests end. It never downloads a binary. Everything it serves is upstream code; no model lives here.
package apiserver
