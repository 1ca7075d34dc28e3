// Command demo runs batch-scheduler — the real command, in this process —
// against a real etcd and kube-apiserver, and shows what its cache sees.
//
// It starts the control plane of test/controlplane (binaries in bin/, built
// by `make control-plane`), seeds a small cluster through the API, starts
// the scheduler with app.NewSchedulerCommand and waits for /readyz, then
// prints the cache as /debug/cache reports it. It then changes the cluster
// a few times and, after each change, waits until /debug/cache shows the
// change and prints it again. The demo looks at the scheduler only through
// its HTTP endpoints, as an operator would.
//
// Run it from the repository root with `make demo`, which sets TMPDIR to
// _output/tmp: the control plane keeps its data and certificates there and
// removes them when it stops. (`go run` itself needs TMPDIR to exist; the
// demo creates it too, for a built binary.) The scheduler's log goes to
// _output/demo/batch-scheduler.log so that it does not mix with the tables.
//
// Ctrl-C (or SIGTERM, SIGHUP) stops the scheduler and the control plane
// and exits with 130; any failure is printed, everything is stopped, and
// the exit code is 1. A closed stdout does not stop the demo early.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/batch-scheduler/batch-scheduler/pkg/cache"
	"github.com/batch-scheduler/batch-scheduler/test/controlplane"
)

// logPath is where the in-process scheduler's klog output goes, relative
// to the working directory (the repository root under make).
const logPath = "_output/demo/batch-scheduler.log"

func main() {
	os.Exit(runMain())
}

// runMain runs the demo and returns the process exit code.
func runMain() int {
	// Ctrl-C, kill and a closed terminal all end the demo the same way:
	// cleanly. cp.StopOnSignal backs this up for SIGINT and SIGTERM.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	// A closed stdout (`make demo | head`) must not kill the demo before it
	// has stopped the control plane: writes then just fail.
	signal.Ignore(syscall.SIGPIPE)
	err := run(ctx)
	switch {
	case ctx.Err() != nil:
		fmt.Fprintln(os.Stderr, "demo: interrupted; the scheduler and the control plane are stopped")
		return 130
	case err != nil:
		fmt.Fprintln(os.Stderr, "demo:", err)
		return 1
	}
	return 0
}

// run is the whole demo. Whatever happens, it stops what it started before
// returning; the error it returns includes any failure to stop.
func run(ctx context.Context) (err error) {
	fmt.Println("batch-scheduler demo: the real command against a real etcd + kube-apiserver")
	if err := ensureTempDir(); err != nil {
		return err
	}
	closeLog, err := redirectLogs(logPath)
	if err != nil {
		return err
	}
	defer closeLog()

	var cp *controlplane.ControlPlane
	if err := progress("starting etcd and kube-apiserver from bin/", func() (err error) {
		cp, err = controlplane.Start()
		return err
	}); err != nil {
		return err
	}
	// Ctrl-C stops the control plane even if the demo is stuck somewhere.
	defer cp.StopOnSignal()()
	defer func() {
		err = errors.Join(err, progress("stopping etcd and kube-apiserver", cp.Stop))
	}()

	nodes, pods := seedNodes(), seedPods()
	if err := progress(fmt.Sprintf("seeding %d nodes and %d pods through the API", len(nodes), len(pods)), func() error {
		return seed(ctx, cp.Client, nodes, pods)
	}); err != nil {
		return err
	}
	for _, n := range nodes {
		fmt.Println("    node", describeNode(n))
	}

	addr, err := freeLoopbackAddress()
	if err != nil {
		return err
	}
	var s *scheduler
	defer func() {
		if s != nil {
			err = errors.Join(err, progress("stopping batch-scheduler", s.stop))
		}
	}()
	if err := progress(fmt.Sprintf("starting batch-scheduler --listen-address %s and waiting for /readyz (log: %s)", addr, logPath), func() error {
		s = startScheduler(ctx, cp.KubeconfigPath, addr)
		return s.waitReady(ctx)
	}); err != nil {
		return err
	}

	if err := showInitial(ctx, s, pods); err != nil {
		return err
	}
	for i, c := range liveChanges() {
		if err := showChange(ctx, s, cp.Client, i+2, c); err != nil {
			return err
		}
	}

	fmt.Println()
	fmt.Println("Not in this demo yet: the scheduling loop. The pending jobs above stay in the")
	fmt.Println("active queue; placing them on nodes, and the reasons a job does not fit, come")
	fmt.Println("with a later issue.")
	fmt.Println()
	return nil
}

// showInitial waits until the cache holds exactly the seeded pods that are
// batch-scheduler's business, and prints it.
func showInitial(ctx context.Context, s *scheduler, pods []*v1.Pod) error {
	d, err := s.waitForDump(ctx, "every seeded pod of ours", func(d *cache.CacheDump) bool {
		return sameKeys(taskKeys(d), expectedKeys(pods))
	})
	if err != nil {
		return err
	}
	printStep("1. The seeded cluster as the cache sees it. Pods bound by default-scheduler count on their\n"+
		"   nodes; web/cache-1 is bound to node edge, which does not exist yet, so it waits on a placeholder;\n"+
		"   pending pods for batch-scheduler are grouped into jobs and queued; web/frontend-3 is pending for\n"+
		"   default-scheduler, so it is not ours and not in the cache.", d)
	return nil
}

// showChange applies c through the API, waits until the cache shows it and
// prints the cache under the step number n.
func showChange(ctx context.Context, s *scheduler, client kubernetes.Interface, n int, c change) error {
	if err := c.apply(ctx, client); err != nil {
		return fmt.Errorf("step %d: %w", n, err)
	}
	d, err := s.waitForDump(ctx, c.shows, c.done)
	if err != nil {
		return fmt.Errorf("step %d: %w", n, err)
	}
	printStep(fmt.Sprintf("%d. %s", n, c.title), d)
	return nil
}

// progress prints a progress line for what fn does, then how it went.
func progress(what string, fn func() error) error {
	fmt.Printf("- %s ... ", what)
	start := time.Now()
	if err := fn(); err != nil {
		fmt.Println("failed")
		return err
	}
	fmt.Printf("done (%.1fs)\n", time.Since(start).Seconds())
	return nil
}

// ensureTempDir creates $TMPDIR if it is set but missing, so that a built
// demo binary can run with TMPDIR=_output/tmp before anything created it.
func ensureTempDir() error {
	dir := os.Getenv("TMPDIR")
	if dir == "" {
		return nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("creating TMPDIR: %w", err)
	}
	return nil
}
