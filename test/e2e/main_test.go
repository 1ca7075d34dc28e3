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
	var err error
	cp, err = controlplane.Start()
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		os.Exit(1)
	}
	cancel := cp.StopOnSignal()
	code := m.Run()
	cancel()
	if err := cp.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, "e2e: stopping the control plane:", err)
		if code == 0 {
			code = 1
		}
	}
	os.Exit(code)
}
