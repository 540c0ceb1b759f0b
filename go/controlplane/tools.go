//go:build tools

// Package controlplane names the programs .ci/build-k8s builds, so that `go mod tidy` keeps
// every module they need (the build tag keeps this file out of every build).
package controlplane

import (
	_ "go.etcd.io/etcd/server/v3"
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
)
