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

// Package e2e is the smoke test of the acme-scheduler binaries against a
// real etcd and kube-apiserver (batch-scheduler's test/controlplane).
// TestMain builds cmd/acme-scheduler and cmd/acme-scheduler-blank with
// `go build`, as a vendor would ship them, and the tests run them as
// subprocesses.
//
// The control plane binaries are found as test/controlplane finds them:
// $KUBEBUILDER_ASSETS, else bin/ at the root of the batch-scheduler
// checkout above this directory (make control-plane there builds them).
package e2e
