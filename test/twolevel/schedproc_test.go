package twolevel

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/batch-scheduler/batch-scheduler/pkg/demand"
)

// schedulerProc is batch-scheduler running as a child process, for the
// tests that kill it (SIGKILL) and start it again.
type schedulerProc struct {
	*process
	name string
	url  string
	args []string
}

// launchSchedulerProc starts batch-scheduler named name as a process on
// the nodes of pool, with its endpoints on port, without waiting for it
// to be ready. It is stopped when the test ends.
func launchSchedulerProc(t *testing.T, name, pool string, port int, args ...string) *schedulerProc {
	t.Helper()
	s := &schedulerProc{name: name, url: "http://127.0.0.1:" + strconv.Itoa(port)}
	s.args = append([]string{"--kubeconfig", cp.KubeconfigPath, "--leader-elect=false",
		"--secure-port=0", "--insecure-bind-address=127.0.0.1", "--insecure-port", strconv.Itoa(port),
		"--scheduler-name", name, "--node-selector", poolLabel + "=" + pool, "-v=2"}, args...)
	s.process = startProcess(t, "batch-scheduler-"+name, schedulerBin, s.args...)
	return s
}

// restart starts the scheduler again with the same flags after it was
// killed, and waits until it is ready.
func (s *schedulerProc) restart(t *testing.T) {
	t.Helper()
	s.process = startProcess(t, "batch-scheduler-"+s.name, schedulerBin, s.args...)
	s.waitReady(t)
}

// demandURL is where the allocator reads the scheduler's demand.
func (s *schedulerProc) demandURL() string { return s.url + demand.Path }

// waitReady polls /readyz until it answers 200.
func (s *schedulerProc) waitReady(t *testing.T) {
	t.Helper()
	var last string
	err := wait.PollUntilContextTimeout(t.Context(), 50*time.Millisecond, 90*time.Second, true, func(ctx context.Context) (bool, error) {
		select {
		case <-s.exited:
			return false, fmt.Errorf("batch-scheduler %s exited: %v", s.name, s.err)
		default:
		}
		code, body, err := call(ctx, http.MethodGet, s.url+"/readyz", "")
		last = fmt.Sprintf("%d %s %v", code, body, err)
		return code == http.StatusOK, nil
	})
	if err != nil {
		s.logTail(t, 40)
		t.Fatalf("batch-scheduler %s never became ready: %v; last /readyz: %s", s.name, err, last)
	}
}

// startTwoLevelProcs is startTwoLevelWith with the schedulers as child
// processes.
func startTwoLevelProcs(t *testing.T, o allocatorOptions, then func(*allocatorProc), specs ...schedulerSpec) (*allocatorProc, []*schedulerProc) {
	t.Helper()
	return startFrameworks(t, o, then, func(sp schedulerSpec, args ...string) *schedulerProc {
		return launchSchedulerProc(t, sp.name, poolName(t), sp.port, args...)
	}, specs...)
}

// waitDemand waits until the scheduler name serves its demand report at
// url (it does before it syncs).
func waitDemand(t *testing.T, name, url string) {
	t.Helper()
	var lastErr error
	err := wait.PollUntilContextTimeout(t.Context(), 20*time.Millisecond, 90*time.Second, true, func(ctx context.Context) (bool, error) {
		_, lastErr = demand.Fetch(ctx, httpClient, url)
		return lastErr == nil, nil
	})
	if err != nil {
		t.Fatalf("batch-scheduler %s never served %s: %v (%v)", name, url, err, lastErr)
	}
}
