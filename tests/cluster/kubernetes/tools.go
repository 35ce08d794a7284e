//go:build tools

// Package kubernetes pins the Kubernetes control-plane commands gpupool's real-cluster tests run.
// k8s.io/kubernetes replaces its staging modules with ./staging, so `go install …@v` is refused;
// this module requires it and replaces each staging module with its published release instead.
package kubernetes

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "k8s.io/kubernetes/cmd/kubectl"
)
