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

// Command demo runs batch-scheduler — the real command, in this process —
// against a real etcd and kube-apiserver, with kube-controller-manager and
// KWOK's simulated kubelets, beside the example programs examples/vm-manager
// and examples/allocator run as separate processes, and shows where it
// places pods, why the others wait, and how pods run, finish and leave
// their room to others. It is built on the tests' harness (test/harness):
// the same launchers, clients, pod watcher (test/podwatch) and consistency
// check.
//
// It runs one of three stories (--scenario, `make demo SCENARIO=...`):
// hybrid (the default; hybrid.go: pods, gangs, preemption and Jobs beside a
// VM manager), two-level (twolevel.go: batch-scheduler and the VM manager
// as frameworks under the allocator) and queues (queues.go: two teams'
// gang Jobs share the cluster through tenant queues, then a big gang
// reserves room and short Jobs backfill around it). After each step it
// waits (polling, bounded) until the API, the programs' endpoints and
// /debug/cache show exactly the outcome it printed, and the scheduler's
// own checker (/debug/cache/verify) finds no difference; then it prints
// what it saw. A different outcome fails the demo, so it doubles as a
// smoke test (test/demo runs it in make test).
//
// Run it from the repository root with `make demo` (TMPDIR=_output/tmp:
// the control plane keeps its data there). The logs go to _output/demo.
// Ctrl-C (or SIGTERM, SIGHUP) stops everything and exits with 130; any
// failure is printed, everything is stopped, and the exit code is 1.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/batch-scheduler/batch-scheduler/pkg/generated/clientset/versioned"
	"github.com/batch-scheduler/batch-scheduler/test/controlplane"
	"github.com/batch-scheduler/batch-scheduler/test/harness"
)

const (
	// outDir holds the logs, the configuration and the built programs,
	// relative to the working directory (the repository root under make).
	outDir  = "_output/demo"
	logPath = outDir + "/batch-scheduler.log"
	binDir  = outDir + "/bin"
	// waitTimeout bounds every wait of the demo but those of steps that
	// say otherwise.
	waitTimeout = 30 * time.Second
	// schedulerVerbosity is the scheduler's -v: 2 logs every placement
	// and every unschedulable job.
	schedulerVerbosity = "2"
)

var scenarios = map[string]func(context.Context, *env) (int, error){
	"hybrid": runHybrid, "two-level": runTwoLevel, "queues": runQueues,
}

func main() {
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	scenario := fs.String("scenario", "hybrid", "the story to run: hybrid (pods beside a VM manager), two-level (batch-scheduler and the VM manager as frameworks under the allocator) or queues (two teams' gang Jobs share the cluster through tenant queues)")
	if err := fs.Parse(os.Args[1:]); err != nil {
		os.Exit(2)
	}
	if fs.NArg() > 0 || scenarios[*scenario] == nil {
		fmt.Fprintf(os.Stderr, "demo: --scenario %q and arguments %q: use one --scenario of hybrid, two-level or queues\n", *scenario, fs.Args())
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), stopSignals...)
	defer stop()
	// A closed stdout (`make demo | head`) must not kill the demo before
	// it has stopped the control plane: writes then just fail.
	signal.Ignore(syscall.SIGPIPE)
	err := run(ctx, *scenario)
	switch {
	case ctx.Err() != nil:
		fmt.Fprintln(os.Stderr, "demo: interrupted; the scheduler, the example programs and the control plane are stopped")
		os.Exit(130)
	case err != nil:
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
}

// env is what the stories change and watch. stops are called in reverse
// order when the story ends.
type env struct {
	cp      *controlplane.ControlPlane
	logFile io.Writer
	sched   *harness.Scheduler
	vms     *harness.VMManager
	alloc   *harness.Allocator
	stops   []func() error
	// strict: every pod of batch-scheduler must be covered by an
	// outcome, and the VMs' usage counted by the cache (hybrid).
	strict bool
	// queues reads the Queues, and watch judges every pod transition
	// (queues story).
	queues versioned.Interface
	watch  *harness.GangWatch
	// print shows a step's snapshot; prev is the previous step's.
	print func(s, prev *snapshot)
}

// run is the whole demo. Whatever happens, it stops what it started before
// returning; the error it returns includes any failure to stop.
func run(ctx context.Context, scenario string) (err error) {
	started := time.Now()
	fmt.Printf("batch-scheduler demo, scenario %s: the real programs against a real etcd + kube-apiserver\n", scenario)
	if dir := os.Getenv("TMPDIR"); dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("creating TMPDIR: %w", err)
		}
	}
	logFile, closeLog, err := harness.RedirectLogs(logPath, schedulerVerbosity)
	if err != nil {
		return err
	}
	defer closeLog()
	if err := progress("building examples/vm-manager and examples/allocator into "+binDir, func() error {
		return harness.Build(ctx, ".", binDir, "./examples/vm-manager", "./examples/allocator")
	}); err != nil {
		return err
	}
	e := &env{logFile: logFile}
	if err := progress("starting etcd, kube-apiserver, kube-controller-manager and KWOK from bin/", func() (err error) {
		e.cp, err = controlplane.Start()
		return err
	}); err != nil {
		return err
	}
	// A second signal, or a minute, stops the control plane at once.
	defer harness.ForceStopOnSignal("demo", time.Minute, e.cp.Stop, stopSignals...)()
	defer func() { err = errors.Join(err, progress("stopping the control plane", e.cp.Stop)) }()
	defer func() {
		for _, stop := range slices.Backward(e.stops) {
			err = errors.Join(err, stop())
		}
	}()
	steps, err := scenarios[scenario](ctx, e)
	if err != nil {
		return err
	}
	fmt.Printf("\nEvery outcome was as expected (%d steps, %.1fs since the demo started).\n\n", steps, time.Since(started).Seconds())
	return nil
}

// startScheduler starts batch-scheduler in this process with the
// configuration at configPath and args, its endpoints on the secure port
// (read as the control plane's admin), and waits for /readyz.
func startScheduler(ctx context.Context, e *env, args ...string) error {
	o := harness.SchedulerOptions{Kubeconfig: e.cp.KubeconfigPath, Secure: e.cp, LogOutput: e.logFile,
		Args: append([]string{"--config-path", configPath, "-v", schedulerVerbosity}, args...)}
	return progress(fmt.Sprintf("starting batch-scheduler %s and waiting for /readyz (log: %s)", strings.Join(append([]string{"--leader-elect=false --config-path", configPath}, args...), " "), logPath), func() (err error) {
		if e.sched, err = harness.StartScheduler(ctx, o); err != nil {
			return err
		}
		e.stops = append(e.stops, func() error { return progress("stopping batch-scheduler", e.sched.Stop) })
		return e.sched.WaitReady(ctx, waitTimeout)
	})
}

// startProgram starts one of the example programs with start, prints what
// it is, and has it stopped when the story ends.
func startProgram[P interface{ Stop() error }](e *env, what, name string, start func() (P, error)) (P, error) {
	var p P
	err := progress("starting "+what+" as a process", func() (err error) {
		p, err = start()
		return err
	})
	if err == nil {
		e.stops = append(e.stops, func() error { return progress("stopping the "+name, p.Stop) })
	}
	return p, err
}

// stopSignals end the demo.
var stopSignals = []os.Signal{os.Interrupt, syscall.SIGTERM, syscall.SIGHUP}

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
