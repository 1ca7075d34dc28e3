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

// Package e2e runs the VM manager in-process (app.Run) against a real
// etcd and kube-apiserver (test/controlplane): in hybrid mode, in
// two-level mode under an allocator stand-in, and in ledger mode against
// the NodeLedger CRD of deploy/crds, the test standing in for
// batch-scheduler. Like the packages under the repository's test/
// directory, it needs the control plane binaries (make control-plane, or
// KUBEBUILDER_ASSETS).
package e2e
