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
