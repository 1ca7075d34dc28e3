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

package benchmark

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
)

// traceTracker follows the pods of the Jobs of one replay of the trace
// through one informer and keeps, per Job: when it was created (told by
// the replay), when each of its completion indexes was first bound, its
// live pods (bound, not finished, not being deleted), the indexes that
// succeeded, and its windows below quorum. It integrates the cluster's
// allocation (live pods, one slot each) over time.
//
// A Job ran below its quorum (its size) when it had some but fewer than
// size pods live for longer than settle, before any of its pods
// succeeded: on its way up (binds are separate calls; a scheduler
// without gangs starts what fits), or after it lost a pod to preemption.
// Once a pod succeeded the Job winds down and is no longer judged.
type traceTracker struct {
	settle time.Duration

	mu   sync.Mutex
	pods map[string]*tracePod
	jobs map[string]*traceJobState
	// live is the number of live pods; area their integral (pod-seconds)
	// since start, up to last.
	live        int
	area        float64
	start, last time.Time
	violations  []string
	// victims counts the pods that got a deletion timestamp while live:
	// only the scheduler deletes pods while a replay runs.
	victims int

	stop context.CancelFunc
	done chan struct{}
}

// tracePod is what the tracker knows of one pod.
type tracePod struct {
	job, index string
	node       string
	phase      v1.PodPhase
	deleting   bool
}

func (p *tracePod) live() bool {
	return p.node != "" && !p.deleting && p.phase != v1.PodSucceeded && p.phase != v1.PodFailed
}

// traceJobState is what the tracker knows of one Job.
type traceJobState struct {
	size    int
	class   int
	created time.Time
	// bound are the completion indexes ever bound; allBound when the
	// last of them was first bound (zero: not yet).
	bound    map[string]bool
	allBound time.Time
	live     int
	// succeeded are the indexes that succeeded; done when all had.
	succeeded map[string]bool
	done      time.Time
	// below is when the current window below quorum opened (zero: none).
	below   time.Time
	flagged bool
}

func (j *traceJobState) ending() bool { return len(j.succeeded) > 0 }

// newTraceTracker starts the informer on ns and returns once it listed
// the namespace's pods.
func newTraceTracker(tb testing.TB, client kubernetes.Interface, ns string, settle time.Duration) *traceTracker {
	tb.Helper()
	ctx, cancel := context.WithCancel(tb.Context())
	t := &traceTracker{settle: settle, pods: map[string]*tracePod{}, jobs: map[string]*traceJobState{}, stop: cancel, done: make(chan struct{})}
	// Open windows are judged once a second, so that a Job stuck
	// below its quorum is reported even if no event of it follows.
	watchPods(tb, ctx, client, ns, t.observe, func(now time.Time) {
		t.mu.Lock()
		defer t.mu.Unlock()
		for name, j := range t.jobs {
			t.judgeLocked(name, j, now)
		}
	}, t.done)
	tb.Cleanup(t.close)
	return t
}

// close stops the informer; the figures stay readable.
func (t *traceTracker) close() {
	t.stop()
	<-t.done
}

// begin starts the allocation's integral.
func (t *traceTracker) begin(at time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.start, t.last, t.area = at, at, 0
}

// expect registers a Job about to be created.
func (t *traceTracker) expect(name string, size, class int, created time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.jobs[name] = &traceJobState{size: size, class: class, created: created, bound: map[string]bool{}, succeeded: map[string]bool{}}
}

// observe applies one pod event.
func (t *traceTracker) observe(obj any, deleted bool) {
	pod, ok := obj.(*v1.Pod)
	if !ok {
		return
	}
	now := time.Now()
	t.mu.Lock()
	defer t.mu.Unlock()
	old := t.pods[pod.Name]
	var cur *tracePod
	if !deleted {
		cur = &tracePod{job: pod.Labels[batchv1.JobNameLabel], index: pod.Annotations[batchv1.JobCompletionIndexAnnotation],
			node: pod.Spec.NodeName, phase: pod.Status.Phase, deleting: pod.DeletionTimestamp != nil}
		t.pods[pod.Name] = cur
	} else {
		delete(t.pods, pod.Name)
	}
	p := cur
	if p == nil {
		p = old
	}
	j := t.jobs[p.job]
	if j == nil {
		return // not a Job of the replay
	}
	was, is := old != nil && old.live(), cur != nil && cur.live()
	if was && cur != nil && cur.deleting {
		t.victims++
	}
	if was != is {
		t.accrueLocked(now)
		if is {
			t.live++
			j.live++
		} else {
			t.live--
			j.live--
		}
	}
	if cur != nil && cur.node != "" && !j.bound[cur.index] {
		j.bound[cur.index] = true
		if len(j.bound) >= j.size && j.allBound.IsZero() {
			j.allBound = now
		}
	}
	if cur != nil && cur.phase == v1.PodSucceeded && !j.succeeded[cur.index] {
		j.succeeded[cur.index] = true
		if len(j.succeeded) >= j.size && j.done.IsZero() {
			j.done = now
		}
	}
	switch {
	case j.live >= j.size || j.live == 0 || j.ending():
		t.closeWindowLocked(p.job, j, now)
	case j.below.IsZero():
		j.below = now
	}
}

// accrueLocked adds the allocation since the last change to the integral.
func (t *traceTracker) accrueLocked(now time.Time) {
	if !t.start.IsZero() {
		t.area += float64(t.live) * now.Sub(t.last).Seconds()
	}
	t.last = now
}

func (t *traceTracker) closeWindowLocked(name string, j *traceJobState, now time.Time) {
	if j.below.IsZero() {
		return
	}
	t.judgeLocked(name, j, now)
	j.below = time.Time{}
}

// judgeLocked records a violation if j's open window is longer than
// settle.
func (t *traceTracker) judgeLocked(name string, j *traceJobState, now time.Time) {
	if j.below.IsZero() || j.flagged || now.Sub(j.below) <= t.settle {
		return
	}
	j.flagged = true
	t.violations = append(t.violations, fmt.Sprintf("Job %s of %d pods had %d of them live (bound, not finished, not being deleted) for more than %s from %s, before any finished",
		name, j.size, j.live, t.settle, j.below.Format("15:04:05.000")))
}

// progress returns how many of the expected Jobs are done.
func (t *traceTracker) progress() (done, expected int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, j := range t.jobs {
		if !j.done.IsZero() {
			done++
		}
	}
	return done, len(t.jobs)
}

// traceResult is the outcome of one replay.
type traceResult struct {
	scheduler string
	// makespan is from the start of the replay to the last Job done (or
	// to the end of the wait, if some never finished).
	makespan time.Duration
	// allocation is the time-averaged fraction of the capacity held by
	// live pods over the makespan.
	allocation float64
	// waits are, per size class, the times from a Job's creation to all
	// its indexes bound, in order.
	waits [][]time.Duration
	// unbound and unfinished count the Jobs never all bound, never done;
	// waiting the unfinished ones with pods waiting for a node at the end
	// (the others wait for the Job controller to replace preempted pods,
	// after its failure backoff).
	unbound, unfinished, waiting int
	violations                   []string
	// victims are the pods preempted.
	victims int
	jobs    int
	// lateness is how far behind its schedule the replay created its
	// last Job.
	lateness time.Duration
}

// result judges the windows still open and computes the figures at end.
func (t *traceTracker) result(scheduler string, capacity int, end time.Time) traceResult {
	t.mu.Lock()
	defer t.mu.Unlock()
	r := traceResult{scheduler: scheduler, waits: make([][]time.Duration, len(traceClasses)), jobs: len(t.jobs)}
	pending := map[string]bool{}
	for _, p := range t.pods {
		if p.node == "" && !p.deleting && p.phase != v1.PodSucceeded && p.phase != v1.PodFailed {
			pending[p.job] = true
		}
	}
	last := t.start
	for name, j := range t.jobs {
		t.judgeLocked(name, j, end)
		if j.allBound.IsZero() {
			r.unbound++
		} else {
			r.waits[j.class] = append(r.waits[j.class], j.allBound.Sub(j.created))
		}
		if j.done.IsZero() {
			r.unfinished++
			if pending[name] {
				r.waiting++
			}
			last = end
		} else if j.done.After(last) {
			last = j.done
		}
	}
	// The integral up to last: pods still live after it (none, when all
	// are done) are not counted.
	area := t.area
	if last.After(t.last) {
		area += float64(t.live) * last.Sub(t.last).Seconds()
	}
	r.makespan = last.Sub(t.start)
	if r.makespan > 0 {
		r.allocation = area / (float64(capacity) * r.makespan.Seconds())
	}
	for _, w := range r.waits {
		slices.Sort(w)
	}
	r.violations = slices.Clone(t.violations)
	r.victims = t.victims
	return r
}

// quantile is the q-quantile (nearest rank) of sorted durations; 0 if
// there are none.
func quantile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[min(len(sorted)-1, int(q*float64(len(sorted))))]
}
