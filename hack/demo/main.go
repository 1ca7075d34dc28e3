// Command demo runs batch-scheduler — the real command, in this process —
// against a real etcd and kube-apiserver, with kube-controller-manager and
// KWOK's simulated kubelets, beside the example programs
// examples/vm-manager and examples/allocator run as separate processes,
// and shows where it places pods, why the others wait, and how pods run,
// finish and leave their room to others.
//
// It builds the example programs into _output/demo/bin (with $GO, or go
// from $PATH), starts the control plane of test/controlplane (binaries in
// bin/, built by `make control-plane`: etcd, kube-apiserver,
// kube-controller-manager with its Job, garbage collection and disruption
// controllers, and KWOK) and runs one of three scenarios (--scenario,
// `make demo SCENARIO=...`). Every node is a node of the simulated
// kubelets (controlplane.CreateKwokNode): a bound pod starts running, a pod
// annotated with controlplane.RunForAnnotation succeeds that long after,
// and an evicted pod is stopped and removed, as a kubelet would.
//
//   - hybrid (the default): it seeds a small cluster through the API
//     (nodes of different sizes, labels and taints, pods bound by another
//     scheduler, priority classes, single pods and gang jobs for
//     batch-scheduler), starts the VM manager in hybrid mode, writes a
//     scheduler configuration whose custom informer reads the VM manager's
//     ExternalWorkloads (_output/demo/batch-scheduler.yaml) and starts the
//     scheduler with that file and leader election off. A low-priority pod
//     preempts another scheduler's pod at once: the victim is evicted,
//     stopped and removed, and the preemptor lands. Then the story changes
//     the cluster (a node joins; the VM manager refuses a VM on a full host
//     and starts one next to the pods, which is deleted again, through the
//     manager's admin API, POST and DELETE /vms) and runs batch/v1 Jobs
//     whose pods are one gang (batch-scheduler.io/job-gang: "true"): the
//     Job controller creates the pods of the first, batch-scheduler places
//     them whole, they run and succeed and the Job is Complete; a second
//     Job, created while the first runs, does not fit beside it and waits,
//     then takes the room the first left and completes too (jobs.go).
//     After each change, or while time passes, it waits (polling, bounded)
//     until the API shows exactly the outcome it printed — each pod bound
//     to the expected node in the expected phase, or PodScheduled=False/
//     Unschedulable with the expected message, each Job's active and
//     succeeded counts and Complete condition — and /debug/cache agrees,
//     on the pods, on what they request and on the VMs' usage, with no
//     node over-committed; then it prints every pod's node, phase and
//     reason, the Jobs, and the nodes' idle room before and after the
//     step (expect.go, hybrid.go).
//   - two-level: the allocator, the VM manager in two-level mode
//     (framework vms) and batch-scheduler with the two-level event handler
//     (framework batch, grants and VMs through custom informers, /demand
//     on --insecure-port) share three nodes; see twolevel.go for the
//     story. After each change it waits until the pods (bound and
//     running), the grants (GET /allocation), the VMs (GET /vms),
//     /debug/cache and /demand show the expected outcome and the
//     guarantees of two-level scheduling hold (no framework beyond its
//     grants, pods plus VMs within each node), then prints them all.
//   - queues: tenant queues (docs/queues.md). The Queue CRD is installed
//     before the scheduler starts; four nodes of 2 cpu; Queues team-a
//     (weight 1) and team-b (weight 1, guaranteed cpu 2). team-a's four
//     gang Jobs borrow the whole cluster; team-b's two gang Jobs arrive
//     and Reclaim evicts two of team-a's gangs, each whole, for them; the
//     evicted Jobs' new pods wait until team-b's work is done, then run,
//     and every Job completes (queues.go). After each step it waits until
//     the pods, the Jobs and the Queues' status (allocated, fair share,
//     pending, job counts) show the expected outcome and /debug/cache
//     agrees, and prints them; a pod watch checks throughout that no gang
//     runs below its quorum and no node holds more than it has
//     (queues_watch.go).
//
// A different outcome fails the demo, so it doubles as a smoke test of
// the scheduler and the example programs. The demo sees them only through
// the API and their HTTP endpoints, as an operator would.
//
// Run it from the repository root with `make demo`, with TMPDIR set to
// _output/tmp: the control plane keeps its data and certificates there and
// removes them when it stops. (`go run` itself needs TMPDIR to exist; the
// demo creates it too, for a built binary.) The logs go to _output/demo
// (batch-scheduler.log, vm-manager.log, allocator.log) so that they do not
// mix with the tables.
//
// Ctrl-C (or SIGTERM, SIGHUP) stops the scheduler, the example programs
// (SIGTERM; they run in their own process group, and on Linux the kernel
// kills them if the demo dies) and the control plane, and exits with 130;
// any failure, including an unexpected outcome, is printed, everything is
// stopped, and the exit code is 1. A closed stdout does not stop the demo
// early.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

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

// Scenarios the demo runs (--scenario; make demo SCENARIO=...).
const (
	scenarioHybrid   = "hybrid"
	scenarioTwoLevel = "two-level"
	scenarioQueues   = "queues"
)

// runMain runs the demo and returns the process exit code.
func runMain() int {
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	scenario := fs.String("scenario", scenarioHybrid, "the story to run: "+scenarioHybrid+" (pods beside a VM manager), "+scenarioTwoLevel+" (batch-scheduler and the VM manager as frameworks under the allocator) or "+scenarioQueues+" (two teams' gang Jobs share the cluster through tenant queues)")
	if err := fs.Parse(os.Args[1:]); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "demo: unexpected arguments %q\n", fs.Args())
		return 2
	}
	if *scenario != scenarioHybrid && *scenario != scenarioTwoLevel && *scenario != scenarioQueues {
		fmt.Fprintf(os.Stderr, "demo: --scenario %q is not a scenario: use %s, %s or %s\n", *scenario, scenarioHybrid, scenarioTwoLevel, scenarioQueues)
		return 2
	}
	// Ctrl-C, kill and a closed terminal all end the demo the same way:
	// cleanly. forceStopOnSignal backs this up.
	ctx, stop := signal.NotifyContext(context.Background(), stopSignals...)
	defer stop()
	// A closed stdout (`make demo | head`) must not kill the demo before it
	// has stopped the control plane: writes then just fail.
	signal.Ignore(syscall.SIGPIPE)
	err := run(ctx, *scenario)
	switch {
	case ctx.Err() != nil:
		fmt.Fprintln(os.Stderr, "demo: interrupted; the scheduler, the example programs and the control plane are stopped")
		return 130
	case err != nil:
		fmt.Fprintln(os.Stderr, "demo:", err)
		return 1
	}
	return 0
}

// run is the whole demo. Whatever happens, it stops what it started before
// returning; the error it returns includes any failure to stop.
func run(ctx context.Context, scenario string) (err error) {
	started := time.Now()
	fmt.Printf("batch-scheduler demo, scenario %s: the real programs against a real etcd + kube-apiserver\n", scenario)
	if err := ensureTempDir(); err != nil {
		return err
	}
	logFile, closeLog, err := redirectLogs(logPath)
	if err != nil {
		return err
	}
	defer closeLog()

	var bins string
	if err := progress("building examples/vm-manager and examples/allocator into "+binDir, func() (err error) {
		bins, err = buildExamples(ctx, "./examples/vm-manager", "./examples/allocator")
		return err
	}); err != nil {
		return err
	}

	var cp *controlplane.ControlPlane
	if err := progress("starting etcd, kube-apiserver, kube-controller-manager and KWOK from bin/", func() (err error) {
		cp, err = controlplane.Start()
		return err
	}); err != nil {
		return err
	}
	// A second Ctrl-C stops the control plane even if the cleanup is stuck.
	defer forceStopOnSignal(cp)()
	defer func() {
		err = errors.Join(err, progress("stopping the control plane", cp.Stop))
	}()

	var steps int
	if scenario == scenarioTwoLevel {
		steps, err = runTwoLevel(ctx, cp, logFile, bins)
	} else if scenario == scenarioQueues {
		steps, err = runQueues(ctx, cp, logFile)
	} else {
		steps, err = runHybrid(ctx, cp, logFile, bins)
	}
	if err != nil {
		return err
	}
	fmt.Printf("\nEvery outcome was as expected (%d steps, %.1fs since the demo started).\n\n", steps, time.Since(started).Seconds())
	return nil
}

// launchScheduler starts batch-scheduler in this process with the
// configuration at configPath and extraArgs, and waits for /readyz. The
// returned stop function stops it if it was started, and is never nil.
func launchScheduler(ctx context.Context, cp *controlplane.ControlPlane, logFile io.Writer, extraArgs ...string) (*scheduler, func() error, error) {
	var s *scheduler
	stop := func() error {
		if s == nil {
			return nil
		}
		return progress("stopping batch-scheduler", s.stop)
	}
	addr, err := freeLoopbackAddress()
	if err != nil {
		return nil, stop, err
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, stop, fmt.Errorf("splitting %s: %w", addr, err)
	}
	flags := strings.Join(append([]string{"--leader-elect=false --bind-address", host, "--secure-port", port, "--config-path", configPath}, extraArgs...), " ")
	err = progress(fmt.Sprintf("starting batch-scheduler %s and waiting for /readyz (log: %s)", flags, logPath), func() error {
		started, err := startScheduler(ctx, cp, addr, configPath, logFile, extraArgs...)
		if err != nil {
			return err
		}
		s = started
		return s.waitReady(ctx)
	})
	return s, stop, err
}

// env is what a step changes and the demo watches: the API, the
// scheduler's endpoints, the VM manager and (two-level) the allocator.
type env struct {
	client kubernetes.Interface
	sched  *scheduler
	vms    *vmManager
	alloc  *allocator
	// demandURL is the scheduler's /demand on its insecure port.
	demandURL string
	// lastDump is /debug/cache as the last step left it (hybrid).
	lastDump *cache.Dump
}

// stopSignals end the demo.
var stopSignals = []os.Signal{os.Interrupt, syscall.SIGTERM, syscall.SIGHUP}

// cleanupTimeout bounds the orderly cleanup after a signal: stopping the
// scheduler (at most waitTimeout) and the control plane.
const cleanupTimeout = waitTimeout + 15*time.Second

// forceStopOnSignal is the backup for an interrupted demo whose orderly
// cleanup is stuck: after a first signal (which cancels run's context and
// so starts that cleanup), a second signal, or cleanupTimeout, stops the
// control plane at once and exits with 130. (controlplane.StopOnSignal
// acts on the first signal, racing the orderly cleanup and cutting its
// output short.) The returned function removes the handler.
func forceStopOnSignal(cp *controlplane.ControlPlane) (cancel func()) {
	ch := make(chan os.Signal, 2)
	signal.Notify(ch, stopSignals...)
	done := make(chan struct{})
	go func() {
		select {
		case <-ch:
		case <-done:
			return
		}
		select {
		case sig := <-ch:
			fmt.Fprintf(os.Stderr, "\ndemo: %s again: stopping the control plane now\n", sig)
		case <-time.After(cleanupTimeout):
			fmt.Fprintf(os.Stderr, "\ndemo: the cleanup is taking longer than %s: stopping the control plane now\n", cleanupTimeout)
		case <-done:
			return
		}
		killChildren()
		_ = cp.Stop() // safe while the cleanup calls it too
		os.Exit(130)
	}()
	return func() {
		signal.Stop(ch)
		close(done)
	}
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
