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
	"fmt"
	"os"
	"os/signal"
	"time"
)

// ForceStopOnSignal is the backup of a program (the demo) whose orderly
// cleanup after a signal of signals is stuck: after a first signal (which
// should start that cleanup), a second one, or grace, kills the child
// processes (KillAll), calls stop (which must be safe beside the cleanup
// calling it too) and exits with 130. name prefixes what it prints. The
// returned function removes the handler.
func ForceStopOnSignal(name string, grace time.Duration, stop func() error, signals ...os.Signal) (cancel func()) {
	ch := make(chan os.Signal, 2)
	signal.Notify(ch, signals...)
	done := make(chan struct{})
	go func() {
		select {
		case <-ch:
		case <-done:
			return
		}
		select {
		case sig := <-ch:
			fmt.Fprintf(os.Stderr, "\n%s: %s again: stopping the control plane now\n", name, sig)
		case <-time.After(grace):
			fmt.Fprintf(os.Stderr, "\n%s: the cleanup is taking longer than %s: stopping the control plane now\n", name, grace)
		case <-done:
			return
		}
		KillAll()
		_ = stop()
		os.Exit(130)
	}()
	return func() {
		signal.Stop(ch)
		close(done)
	}
}
