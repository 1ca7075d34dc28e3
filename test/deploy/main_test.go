package deploy

import (
	"fmt"
	"os"
	"testing"

	"github.com/batch-scheduler/batch-scheduler/cmd/batch-scheduler/app"
	"github.com/batch-scheduler/batch-scheduler/test/controlplane"
)

// cp is the control plane shared by the package's tests. The API server
// authorizes with RBAC (envtest's default) and runs the PodSecurity
// admission plugin (on by default in kube-apiserver).
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
		fmt.Fprintln(os.Stderr, "deploy:", err)
		os.Exit(1)
	}
	cancel := cp.StopOnSignal()
	code := m.Run()
	cancel()
	if err := cp.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, "deploy: stopping the control plane:", err)
		if code == 0 {
			code = 1
		}
	}
	os.Exit(code)
}
