// Package differential runs kube-scheduler v1.37.1 (bin/kube-scheduler,
// built by make control-plane) and batch-scheduler on the same cluster
// state and the same pods, against a real kube-apiserver and etcd (see
// test/controlplane), and compares their verdicts pod by pod: whether the
// pod was placed, and for a pod that was not, the reason (its
// PodScheduled condition's message, normalised).
//
// Its tests are all in _test files. A scenario is data (scenarios_test.go,
// pending_scenarios_test.go): nodes, pods already running on them, other
// objects (storage classes, volumes, claims) and the pods to schedule. Each
// scheduler runs alone, freshly started, in a namespace of its own; see
// runScenario for the steps.
package differential
