package differential

import (
	"fmt"
	"os"
	"testing"

	"github.com/batch-scheduler/batch-scheduler/cmd/batch-scheduler/app"
	"github.com/batch-scheduler/batch-scheduler/test/controlplane"
)

var cp *controlplane.ControlPlane

func TestMain(m *testing.M) {
	// batch-scheduler runs in this process and sets its logging up; do it
	// once, before any test goroutine logs.
	if err := app.ApplyLogging(); err != nil {
		fmt.Fprintln(os.Stderr, "applying the logging configuration:", err)
		os.Exit(1)
	}
	controlplane.RunTests("differential", &cp, m.Run)
}
