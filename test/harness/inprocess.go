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

package harness

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/batch-scheduler/batch-scheduler/cmd/batch-scheduler/app"
)

// InProcess runs the command in the test's own process against kubeconfig
// with leader election and the serving port off, and the extra args: for
// tests that need neither a separate binary nor an endpoint. The returned
// stop cancels it and waits (at most SchedulerStopTimeout) for it to exit;
// the test fails if it does not exit, or exits with an error. stop also
// runs when the test ends, and may be called more than once.
//
// The command's process-wide logging must be set before any test starts
// it (app.ApplyLogging in TestMain).
func InProcess(t testing.TB, kubeconfig string, args ...string) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cmd := app.NewSchedulerCommand()
	cmd.SetArgs(append([]string{"--kubeconfig", kubeconfig, "--leader-elect=false", "--secure-port=0"}, args...))
	cmd.SetContext(ctx)
	// stderr is written by the command's goroutine and read once it exited.
	var stderr strings.Builder
	cmd.SetErr(&stderr)
	done := make(chan int, 1)
	go func() { done <- app.Execute(cmd) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			select {
			case code := <-done:
				if code != 0 {
					t.Errorf("batch-scheduler exited with %d: %s", code, stderr.String())
				}
			case <-time.After(SchedulerStopTimeout):
				t.Errorf("batch-scheduler did not stop within %s of being cancelled", SchedulerStopTimeout)
			}
		})
	}
	t.Cleanup(stop)
	return stop
}
