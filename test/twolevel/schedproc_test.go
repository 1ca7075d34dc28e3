/*
Copyright The batch-scheduler Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package twolevel

import (
	"context"
	"strconv"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/batch-scheduler/batch-scheduler/pkg/demand"
	"github.com/batch-scheduler/batch-scheduler/test/harness"
)

// schedulerProc is batch-scheduler running as a child process
// (harness.SchedulerProcess), for the tests that kill it (SIGKILL) and
// start it again.
type schedulerProc struct {
	process
	sp   *harness.SchedulerProcess
	name string
	url  string
}

// launchSchedulerProc starts batch-scheduler named name as a process on
// the nodes of pool, with its endpoints on port, without waiting for it
// to be ready. It is stopped when the test ends.
func launchSchedulerProc(t *testing.T, name, pool string, port int, args ...string) *schedulerProc {
	t.Helper()
	sp, err := harness.StartSchedulerProcess(t.Context(), "batch-scheduler-"+name, schedulerBin, t.TempDir(), cp.KubeconfigPath, "127.0.0.1:"+strconv.Itoa(port),
		append([]string{"--scheduler-name", name, "--node-selector", poolLabel + "=" + pool, "-v=2"}, args...)...)
	if err != nil {
		t.Fatal(err)
	}
	return &schedulerProc{process: manage(t, sp.Process), sp: sp, name: name, url: sp.URL}
}

// restart starts the scheduler again with the same flags after it was
// killed, and waits until it is ready.
func (s *schedulerProc) restart(t *testing.T) {
	t.Helper()
	if err := s.Restart(t.Context()); err != nil {
		t.Fatal(err)
	}
	s.waitReady(t)
}

// demandURL is where the allocator reads the scheduler's demand.
func (s *schedulerProc) demandURL() string { return s.sp.DemandURL() }

// waitReady polls /readyz until it answers 200.
func (s *schedulerProc) waitReady(t *testing.T) {
	t.Helper()
	if err := s.sp.WaitReady(t.Context(), 90*time.Second); err != nil {
		s.logTail(t, 40)
		t.Fatalf("batch-scheduler %s never became ready: %v", s.name, err)
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
