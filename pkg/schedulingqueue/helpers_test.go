package schedulingqueue

import (
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
)

// epoch is the fake clock's start.
var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

type res = map[v1.ResourceName]string

func mustNoErr(t *testing.T, what string, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

func podNames(pods []*v1.Pod) []string {
	names := make([]string, len(pods))
	for i, p := range pods {
		names[i] = p.Name
	}
	return names
}

func TestLocationString(t *testing.T) {
	for l, want := range map[location]string{
		inActive: "active", inBackoff: "backoff", inUnschedulable: "unschedulable",
		inFlight: "inFlight", awaitingBinding: "awaitingBinding", location(42): "location(42)",
	} {
		if got := l.String(); got != want {
			t.Errorf("location(%d).String() = %q, want %q", int(l), got, want)
		}
	}
}
