// Package e2e runs the VM manager in-process (app.Run) against a real
// etcd and kube-apiserver (test/controlplane): in hybrid mode, in
// two-level mode under an allocator stand-in, and in ledger mode against
// the NodeLedger CRD of deploy/crds, the test standing in for
// batch-scheduler. Like the packages under the repository's test/
// directory, it needs the control plane binaries (make control-plane, or
// KUBEBUILDER_ASSETS).
package e2e
