/*
Copyright The batch-scheduler Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

// Package kueue runs Kueue v0.17 (bin/kueue, built from
// hack/tools/kueue) beside the test control plane and checks what happens
// to a Job Kueue admitted when the cluster has room for only part of it:
// kube-scheduler (bin/kueue's usual partner) starts the part that fits,
// batch-scheduler starts nothing until the whole Job fits, then all of it.
//
// TestMain starts the control plane (with kube-controller-manager's Job
// controller and KWOK's simulated kubelets) and installs Kueue as its
// release manifests do: kustomize builds config/default of the Kueue module
// in the Go module cache (found with `go mod download -json` in
// hack/tools/kueue), and everything but the Deployment, its ConfigMap and
// the visibility API is created. Kueue then runs as a process, as its
// ServiceAccount, with its own certificate management and webhooks. What
// differs from a Deployment in a cluster, and why, is in docs/testing.md.
package kueue
