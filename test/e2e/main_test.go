// Package e2e runs batch-scheduler against a real kube-apiserver and etcd
// (see test/controlplane). One control plane serves the whole package; each
// test starts its own scheduler in-process through app.NewSchedulerCommand,
// uses its own namespace and node names, and observes the scheduler only
// through its HTTP endpoints, as an operator would.
package e2e

import (
	"fmt"
	"os"
	"testing"

	"github.com/batch-scheduler/batch-scheduler/cmd/batch-scheduler/app"
	"github.com/batch-scheduler/batch-scheduler/test/controlplane"
)

var cp *controlplane.ControlPlane

func TestMain(m *testing.M) {
	// The schedulers the tests run in-process set the process's logging
	// up; do it before any test goroutine logs.
	if err := app.ApplyLogging(); err != nil {
		fmt.Fprintln(os.Stderr, "applying the logging configuration:", err)
		os.Exit(1)
	}
	controlplane.RunTests("e2e", &cp, m.Run)
}
