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

package main

// The step engine of the three stories: a step prints what it expects,
// makes its change, waits until everything the demo watches shows that
// outcome and the consistency checks pass, and prints what it saw.

import (
	"context"
	"fmt"
	"slices"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/batch-scheduler/batch-scheduler/pkg/apis/batchscheduler/v1alpha1"
	"github.com/batch-scheduler/batch-scheduler/pkg/cache"
	"github.com/batch-scheduler/batch-scheduler/pkg/demand"
	"github.com/batch-scheduler/batch-scheduler/test/controlplane"
	"github.com/batch-scheduler/batch-scheduler/test/harness"
)

// step is one stage of a story: a change to the cluster (none for the
// first), or just time passing, and the outcome it should lead to.
type step struct {
	title string
	// apply makes the change, if any; then the pods of creates and the
	// Jobs of jobs are created.
	apply   func(context.Context, *env) error
	creates []*v1.Pod
	jobs    []gangJob
	// expect is the whole expected outcome of the pods after the step;
	// shown names the outcomes printed before the change (nil: all).
	expect []outcome
	shown  []string
	// lines, if set, is what is printed instead: a function, as it may
	// name what an earlier step found out.
	lines func() []outcome
	// check returns what is not yet as expected beyond the pods (a
	// harness.Final error when it cannot become so), nil once all is.
	check func(*snapshot) error
	// within bounds the wait (waitTimeout when zero); since says what
	// the time to the outcome is counted from, when it is not the change
	// or the start of the step.
	within time.Duration
	since  string
	// done, if set, says what the step found out (a time it measured,
	// say), printed after its outcome.
	done func() string
}

// snapshot is what the demo observes at one moment: the API, the
// scheduler, and the programs that run.
type snapshot struct {
	pods   map[string]harness.Pod
	jobs   map[string]harness.Job
	dump   *cache.Dump
	alloc  *harness.Allocation
	vms    []harness.VM
	demand *demand.Report
	queues map[string]v1alpha1.Queue
}

// observe reads what e watches.
func observe(ctx context.Context, e *env) (*snapshot, error) {
	s := &snapshot{}
	var err error
	if s.pods, err = harness.ObservePods(ctx, e.cp.Client); err != nil {
		return nil, err
	}
	if s.jobs, err = harness.ObserveJobs(ctx, e.cp.Client); err != nil {
		return nil, err
	}
	if s.dump, err = e.sched.Dump(ctx); err != nil {
		return nil, err
	}
	if e.alloc != nil {
		if s.alloc, err = e.alloc.Allocation(ctx); err != nil {
			return nil, err
		}
		if s.demand, err = e.sched.Demand(ctx); err != nil {
			return nil, fmt.Errorf("reading the scheduler's demand report: %w", err)
		}
	}
	if e.vms != nil {
		if s.vms, err = e.vms.List(ctx); err != nil {
			return nil, err
		}
	}
	if e.queues != nil {
		if s.queues, err = harness.ObserveQueues(ctx, e.queues); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// check starts a check of what s shows.
func (s *snapshot) check() *harness.Check {
	return &harness.Check{Pods: s.pods, Jobs: s.jobs, Queues: s.queues}
}

// runSteps runs the steps of a story in order and returns how many ran.
func runSteps(ctx context.Context, e *env, steps []step) (int, error) {
	var prev *snapshot
	for i, st := range steps {
		s, err := runStep(ctx, e, i+1, st, prev)
		if err != nil {
			return 0, err
		}
		prev = s
	}
	return len(steps), nil
}

// runStep prints what st should lead to, applies its change, waits until
// the outcome shows and the checks pass, and prints the snapshot. If the
// outcome differs, it prints what it saw and fails.
func runStep(ctx context.Context, e *env, n int, st step, prev *snapshot) (*snapshot, error) {
	fmt.Printf("\n== %d. %s\n", n, st.title)
	expected := st.expect
	if st.lines != nil {
		expected = st.lines()
	} else if st.shown != nil {
		expected = slices.DeleteFunc(slices.Clone(st.expect), func(o outcome) bool { return !slices.Contains(st.shown, o.Name) })
	}
	if len(expected) > 0 {
		fmt.Println()
		printExpected(expected)
	}
	start := time.Now()
	changed := st.apply != nil || len(st.creates) > 0 || len(st.jobs) > 0
	if st.apply != nil {
		if err := st.apply(ctx, e); err != nil {
			return nil, fmt.Errorf("step %d: %w", n, err)
		}
	}
	for _, p := range st.creates {
		if _, err := createPod(ctx, e, p); err != nil {
			return nil, fmt.Errorf("step %d: %w", n, err)
		}
	}
	if len(st.jobs) > 0 {
		fmt.Println()
	}
	for _, j := range st.jobs {
		if err := createJob(ctx, e, j); err != nil {
			return nil, fmt.Errorf("step %d: %w", n, err)
		}
	}
	within := st.within
	if within == 0 {
		within = waitTimeout
	}
	var snap *snapshot
	err := harness.Poll(ctx, within, "the expected outcome, and the checks to pass", e.sched.Alive, func() (bool, error) {
		var err error
		if snap, err = observe(ctx, e); err != nil {
			return false, err
		}
		if err := verdict(ctx, e, st, snap); err != nil {
			return false, err
		}
		return true, nil
	})
	took := time.Since(start)
	if snap != nil && ctx.Err() == nil {
		fmt.Println()
		if err != nil {
			fmt.Println("actual:")
		}
		e.print(snap, prev)
	}
	if err != nil {
		return nil, fmt.Errorf("step %d: the outcome differs from the expected one: %w", n, err)
	}
	since := st.since
	switch {
	case since != "":
	case changed:
		since = "the change"
	default:
		since = "the step began"
	}
	fmt.Printf("\n-> as expected, %.1fs after %s\n", took.Seconds(), since)
	if st.done != nil {
		fmt.Println("-> " + st.done())
	}
	return snap, nil
}

// verdict is nil when snap shows the outcome of st and every check
// passes: the pod watch saw no broken guarantee, the pods and Jobs are as
// expected, /debug/cache agrees with the API (and counts the VMs' usage,
// in a strict story), no node is over-committed, st.check passes, and the
// scheduler's own checker (/debug/cache/verify) finds no difference.
func verdict(ctx context.Context, e *env, st step, snap *snapshot) error {
	if e.watch != nil {
		if err := e.watch.Err(); err != nil {
			return harness.Final(err)
		}
	}
	c := snap.check()
	c.Outcomes(st.expect)
	if e.strict {
		for _, u := range harness.Uncovered(st.expect, snap.pods, ourScheduler) {
			c.Wait("%s", u)
		}
	}
	if err := c.Err(); err != nil {
		return err
	}
	var external map[string]harness.External
	if e.strict && e.vms != nil {
		external = vmUsage(snap.vms)
	}
	if err := harness.Consistent(snap.dump, snap.pods, external); err != nil {
		return err
	}
	if st.check != nil {
		if err := st.check(snap); err != nil {
			return err
		}
	}
	return e.sched.Verify(ctx)
}

// createPod creates p through the API.
func createPod(ctx context.Context, e *env, p *v1.Pod) (*v1.Pod, error) {
	return controlplane.CreatePod(ctx, e.cp.Client, p)
}
