package kueue

import (
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/batch-scheduler/batch-scheduler/test/harness"
)

// scheduler is one of the two schedulers a Job is run under.
type scheduler struct {
	// name names it in messages, namespaces and nodes.
	name string
	// schedulerName is the spec.schedulerName it serves.
	schedulerName string
	// start runs it until the test ends; stop stops it sooner.
	start func(t *testing.T) (stop func())
}

var (
	kubeScheduler  = scheduler{name: "kube-scheduler", schedulerName: v1.DefaultSchedulerName, start: startKubeScheduler}
	batchScheduler = scheduler{name: "batch-scheduler", schedulerName: "batch-scheduler", start: startBatchScheduler}
)

// startKubeScheduler runs bin/kube-scheduler (v1.37.1) as a child process,
// with its default client limits; its log is shown if the test fails.
func startKubeScheduler(t *testing.T) (stop func()) {
	t.Helper()
	return cp.StartKubeScheduler(t, 50)
}

// startBatchScheduler runs the batch-scheduler command in this process,
// with its default profile.
func startBatchScheduler(t *testing.T) (stop func()) {
	t.Helper()
	return harness.InProcess(t, cp.KubeconfigPath)
}
