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
