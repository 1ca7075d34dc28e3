package perfsuite

import (
	"os"
	"testing"

	"k8s.io/klog/v2"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
)

func TestMain(m *testing.M) {
	// envtest logs through controller-runtime's logger.
	ctrllog.SetLogger(klog.NewKlogr())
	os.Exit(m.Run())
}
