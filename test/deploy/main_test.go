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
	controlplane.RunTests("deploy", &cp, m.Run)
}
