// Package workloads runs batch work that software we did not write
// creates, on a cluster that runs it: the real Job controller of
// kube-controller-manager creates the pods, batch-scheduler (the real
// command, in this process) places them, KWOK's simulated kubelets run
// them to completion or failure (test/controlplane), and the controller
// sees them finish. A podwatch.Watcher follows every pod and fails a test
// whose gang ever starts below its quorum.
package workloads
