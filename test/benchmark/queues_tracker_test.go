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
	"strconv"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
)

// queueTracker follows the pods of one namespace of BenchmarkQueues
// through one informer, and keeps, per queue, the CPU of its pods that
// wait (no node), that are bound (a node, not finished, not being
// deleted) and that run (phase Running as the simulated kubelet reports
// it, not being deleted), updated on every pod event: the sampler reads
// them every second without listing anything.
//
// It also counts, per gang (the annotation scheduling.k8s.io/group-name),
// its live pods on every pod event: bound, not finished and not being
// deleted (the pods the scheduler placed and nobody took away; the
// phase Running would add the simulated kubelets' start lag, seconds to
// tens of seconds on a busy machine, to every gang's way up). It records
// a violation when a gang has some but fewer than its quorum live for
// longer than settle: either on its way up (binds are separate calls), or
// after it had reached its quorum and lost a pod that did not finish
// (evicted, deleted, failed): a reclaim that evicts part of a gang leaves
// it there for good. A gang some of whose pods finished (Succeeded)
// winds down and is no longer judged.
type queueTracker struct {
	settle time.Duration
	// onTerminal, if set, is called (without the lock) with the name of
	// each pod that reached Succeeded or Failed and is not being deleted:
	// the fairness phase deletes them, as a job controller would.
	onTerminal func(name string)

	mu      sync.Mutex
	pods    map[string]*trackedPod
	pending map[string]int64 // queue → milli-CPU
	bound   map[string]int64
	running map[string]int64
	// seen is the milli-CPU of the pods of each queue the informer has
	// reported, ever: with what a generator asked to create, it tells
	// what is still on its way.
	seen map[string]int64
	// deleting counts the pods that are being deleted and not finished.
	deleting int
	gangs    map[string]*trackedGang
	// evictions are the times at which a pod that was bound and not
	// finished got a deletion timestamp (nobody but the scheduler
	// deletes such pods while a phase runs), by queue.
	evictions map[string][]time.Time
	// startLags are the times from a pod seen bound to seen Running: the
	// simulated kubelets' lag, plus the informer's.
	startLags  []time.Duration
	violations []string
	// starts are the jobs that started: each gang when it first had its
	// quorum live, each single pod (no gang) when first bound. binds
	// counts the pods first seen bound, succeeded those seen Succeeded.
	starts           []jobStart
	binds, succeeded int64

	stop context.CancelFunc
	done chan struct{}
}

// trackedPod is what the tracker knows of one pod.
type trackedPod struct {
	queue    string
	gang     string
	quorum   int
	milli    int64
	node     string
	phase    v1.PodPhase
	deleting bool
	// seenAt, boundAt and runningAt are when the informer first reported
	// the pod, bound and Running (zero: not yet); evictedAt when it first
	// reported a deletion timestamp on it while bound and not finished.
	seenAt, boundAt, runningAt, evictedAt time.Time
}

// jobStart is one job's way to its start: a gang's from its first pod
// seen to its quorum live, a single pod's from seen to bound. started is
// zero for a job still waiting.
type jobStart struct {
	job, queue       string
	size             int
	single           bool
	created, started time.Time
}

func (p *trackedPod) finished() bool {
	return p.phase == v1.PodSucceeded || p.phase == v1.PodFailed
}
func (p *trackedPod) isPending() bool { return p.node == "" && !p.deleting && !p.finished() }
func (p *trackedPod) isBound() bool   { return p.node != "" && !p.deleting && !p.finished() }
func (p *trackedPod) isRunning() bool { return p.phase == v1.PodRunning && !p.deleting }

// trackedGang is what the tracker knows of one gang.
type trackedGang struct {
	queue  string
	quorum int
	// live is how many of its pods are live (bound, not finished, not
	// being deleted); reached says it once had its quorum live; ending
	// that one of its pods finished.
	live            int
	reached, ending bool
	lost            int // pods evicted
	// firstSeen is when its first pod was seen, started when it first
	// had its quorum live.
	firstSeen, started time.Time
	below              time.Time
	belowUp, flagged   bool
	maxBelow           time.Duration
}

// newQueueTracker starts the informer on ns and returns once it listed
// the namespace's pods.
func newQueueTracker(b testing.TB, client kubernetes.Interface, ns string, settle time.Duration, onTerminal func(string)) *queueTracker {
	b.Helper()
	ctx, cancel := context.WithCancel(b.Context())
	t := &queueTracker{settle: settle, onTerminal: onTerminal, pods: map[string]*trackedPod{},
		pending: map[string]int64{}, bound: map[string]int64{}, running: map[string]int64{}, seen: map[string]int64{},
		gangs: map[string]*trackedGang{}, evictions: map[string][]time.Time{}, stop: cancel, done: make(chan struct{})}
	// Open windows are judged once a second, so that a gang stuck
	// below its quorum is reported even if no event of it follows.
	watchPods(b, ctx, client, ns, t.observe, func(now time.Time) {
		t.mu.Lock()
		defer t.mu.Unlock()
		for name, g := range t.gangs {
			t.judgeLocked(name, g, now)
		}
	}, t.done)
	b.Cleanup(t.close)
	return t
}

// close stops the informer; the figures stay readable.
func (t *queueTracker) close() {
	t.stop()
	<-t.done
}

// observe applies one pod event.
func (t *queueTracker) observe(obj any, deleted bool) {
	pod, ok := obj.(*v1.Pod)
	if !ok {
		return
	}
	now := time.Now()
	var terminal string
	t.mu.Lock()
	old := t.pods[pod.Name]
	var cur *trackedPod
	if !deleted {
		cur = &trackedPod{node: pod.Spec.NodeName, phase: pod.Status.Phase, deleting: pod.DeletionTimestamp != nil}
		if old != nil {
			cur.queue, cur.gang, cur.quorum, cur.milli = old.queue, old.gang, old.quorum, old.milli
			cur.seenAt, cur.boundAt, cur.runningAt, cur.evictedAt = old.seenAt, old.boundAt, old.runningAt, old.evictedAt
		} else {
			cur.seenAt = now
			cur.queue, _ = framework.QueueNameForPod(pod)
			cur.gang = pod.Annotations[framework.GroupNameAnnotation]
			cur.quorum, _ = strconv.Atoi(pod.Annotations[framework.MinAvailableAnnotation])
			for _, c := range pod.Spec.Containers {
				cur.milli += c.Resources.Requests.Cpu().MilliValue()
			}
			t.seen[cur.queue] += cur.milli
		}
		if cur.node != "" && cur.boundAt.IsZero() {
			cur.boundAt = now
			t.binds++
			if cur.gang == "" {
				t.starts = append(t.starts, jobStart{job: pod.Name, queue: cur.queue, size: 1, single: true, created: cur.seenAt, started: now})
			}
		}
		if cur.phase == v1.PodSucceeded && (old == nil || old.phase != v1.PodSucceeded) {
			t.succeeded++
		}
		if cur.phase == v1.PodRunning && cur.runningAt.IsZero() {
			cur.runningAt = now
			if !cur.boundAt.IsZero() {
				t.startLags = append(t.startLags, now.Sub(cur.boundAt))
			}
		}
		if cur.deleting && cur.evictedAt.IsZero() && old != nil && old.isBound() {
			cur.evictedAt = now
			t.evictions[cur.queue] = append(t.evictions[cur.queue], now)
		}
		t.pods[pod.Name] = cur
		if cur.finished() && !cur.deleting && (old == nil || !old.finished()) {
			terminal = pod.Name
		}
	} else {
		delete(t.pods, pod.Name)
	}
	t.account(old, -1)
	t.account(cur, 1)
	if gang := gangOf(old, cur); gang != "" {
		t.gangChangeLocked(gang, old, cur, now)
	}
	t.mu.Unlock()
	if terminal != "" && t.onTerminal != nil {
		t.onTerminal(terminal)
	}
}

func gangOf(old, cur *trackedPod) string {
	if cur != nil {
		return cur.gang
	}
	if old != nil {
		return old.gang
	}
	return ""
}

// account adds (sign 1) or removes (-1) what p counts for its queue.
func (t *queueTracker) account(p *trackedPod, sign int64) {
	if p == nil {
		return
	}
	if p.isPending() {
		t.pending[p.queue] += sign * p.milli
	}
	if p.isBound() {
		t.bound[p.queue] += sign * p.milli
	}
	if p.isRunning() {
		t.running[p.queue] += sign * p.milli
	}
	if p.deleting && !p.finished() {
		t.deleting += int(sign)
	}
}

// gangChangeLocked updates the gang's count of live pods and its
// below-quorum window.
func (t *queueTracker) gangChangeLocked(name string, old, cur *trackedPod, now time.Time) {
	g := t.gangs[name]
	if g == nil {
		p := cur
		if p == nil {
			p = old
		}
		g = &trackedGang{queue: p.queue, quorum: max(p.quorum, 1), firstSeen: now}
		t.gangs[name] = g
	}
	if cur != nil && !cur.evictedAt.IsZero() && (old == nil || old.evictedAt.IsZero()) {
		g.lost++
	}
	was, is := old != nil && old.isBound(), cur != nil && cur.isBound()
	switch {
	case was == is:
		return
	case is:
		g.live++
	default:
		g.live--
		if cur != nil && cur.phase == v1.PodSucceeded && !cur.deleting {
			g.ending = true
		}
	}
	switch {
	case g.live >= g.quorum:
		if !g.reached {
			g.started = now
			t.starts = append(t.starts, jobStart{job: name, queue: g.queue, size: g.quorum, created: g.firstSeen, started: now})
		}
		g.reached = true
		t.closeWindowLocked(name, g, now)
	case g.live == 0 || g.ending:
		t.closeWindowLocked(name, g, now)
	case g.below.IsZero():
		g.below, g.belowUp = now, !g.reached
	}
}

func (t *queueTracker) closeWindowLocked(name string, g *trackedGang, now time.Time) {
	if g.below.IsZero() {
		return
	}
	t.judgeLocked(name, g, now)
	g.maxBelow = max(g.maxBelow, now.Sub(g.below))
	g.below = time.Time{}
}

// judgeLocked records a violation if g's open window is longer than
// settle.
func (t *queueTracker) judgeLocked(name string, g *trackedGang, now time.Time) {
	if g.below.IsZero() || g.flagged || now.Sub(g.below) <= t.settle {
		return
	}
	g.flagged = true
	how := "after it had its quorum and lost pods that did not finish"
	if g.belowUp {
		how = "on its way up"
	}
	t.violations = append(t.violations, fmt.Sprintf("gang %s of queue %s had %d of its quorum of %d pods live (bound, not finished, not being deleted) for more than %s (since %s), %s",
		name, g.queue, g.live, g.quorum, t.settle, g.below.Format("15:04:05.000"), how))
}

// queueSample is the CPU per queue at one moment, in milli-CPU.
type queueSample struct {
	at                       time.Time
	pending, bound, running  map[string]int64
	deleting                 int
	runningTotal, boundTotal int64
}

func (t *queueTracker) sample() queueSample {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := queueSample{at: time.Now(), pending: clone(t.pending), bound: clone(t.bound), running: clone(t.running), deleting: t.deleting}
	for _, v := range t.running {
		s.runningTotal += v
	}
	for _, v := range t.bound {
		s.boundTotal += v
	}
	return s
}

func clone(m map[string]int64) map[string]int64 {
	out := make(map[string]int64, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// seenMilli is the milli-CPU of queue's pods the informer reported, ever.
func (t *queueTracker) seenMilli(queue string) int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.seen[queue]
}

// usage is the milli-CPU of queue's pods that wait, and that are bound.
func (t *queueTracker) usage(queue string) (pending, bound int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.pending[queue], t.bound[queue]
}

// gangTimes returns, for the pods of gang, the latest boundAt and
// runningAt, and how many of them run; ok is false until want pods run.
func (t *queueTracker) gangTimes(gang string, want int) (bound, running time.Time, n int, ok bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, p := range t.pods {
		if p.gang != gang {
			continue
		}
		if p.isRunning() {
			n++
		}
		if p.boundAt.After(bound) {
			bound = p.boundAt
		}
		if p.runningAt.After(running) {
			running = p.runningAt
		}
	}
	return bound, running, n, n >= want
}

// evictionsSince returns the evictions of queue's pods at or after from,
// in order.
func (t *queueTracker) evictionsSince(queue string, from time.Time) []time.Time {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []time.Time
	for _, at := range t.evictions[queue] {
		if !at.Before(from) {
			out = append(out, at)
		}
	}
	return out
}

// gangLosses counts the gangs of queue that lost pods to evictions, and
// those pods.
func (t *queueTracker) gangLosses(queue string) (gangs, pods int, maxBelow time.Duration) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, g := range t.gangs {
		if g.queue != queue {
			continue
		}
		if g.lost > 0 {
			gangs++
			pods += g.lost
		}
		maxBelow = max(maxBelow, g.maxBelow)
	}
	return gangs, pods, maxBelow
}

// jobStarts returns the jobs that started, in order, and those still
// waiting (started zero): gangs that never had their quorum live, and
// single pods not bound, not finished and not being deleted.
func (t *queueTracker) jobStarts() (started, waiting []jobStart) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for name, g := range t.gangs {
		if !g.reached {
			waiting = append(waiting, jobStart{job: name, queue: g.queue, size: g.quorum, created: g.firstSeen})
		}
	}
	for name, p := range t.pods {
		if p.gang == "" && p.isPending() {
			waiting = append(waiting, jobStart{job: name, queue: p.queue, size: 1, single: true, created: p.seenAt})
		}
	}
	return slices.Clone(t.starts), waiting
}

// counts returns how many pods were seen bound, and Succeeded, so far.
func (t *queueTracker) counts() (binds, succeeded int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.binds, t.succeeded
}

// finish judges the windows still open and returns the violations.
func (t *queueTracker) finish() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := time.Now()
	for name, g := range t.gangs {
		t.judgeLocked(name, g, now)
	}
	return slices.Clone(t.violations)
}

// startLagQuantiles returns the median and the 99th percentile of the
// start lags.
func (t *queueTracker) startLagQuantiles() (p50, p99 time.Duration, n int) {
	t.mu.Lock()
	lags := slices.Clone(t.startLags)
	t.mu.Unlock()
	if len(lags) == 0 {
		return 0, 0, 0
	}
	slices.Sort(lags)
	return lags[len(lags)/2], lags[min(len(lags)-1, len(lags)*99/100)], len(lags)
}

// finishStrict is finish, once the phase's evictions are over: a gang
// still below its quorum after losing pods is a violation however short
// its window so far.
func (t *queueTracker) finishStrict() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := time.Now()
	for name, g := range t.gangs {
		if !g.below.IsZero() && !g.belowUp && !g.flagged {
			g.flagged = true
			t.violations = append(t.violations, fmt.Sprintf("gang %s of queue %s has %d of its quorum of %d pods live at the end of the phase (since %s), after it had its quorum and lost pods",
				name, g.queue, g.live, g.quorum, g.below.Format("15:04:05.000")))
		}
		t.judgeLocked(name, g, now)
	}
	return slices.Clone(t.violations)
}

// watchPods starts an informer on ns's pods that passes every event to
// observe (deleted for a deletion) and returns once it listed them; tick
// runs once a second until ctx ends, and done is closed after the
// informer stopped.
func watchPods(tb testing.TB, ctx context.Context, client kubernetes.Interface, ns string, observe func(obj any, deleted bool), tick func(now time.Time), done chan struct{}) {
	tb.Helper()
	factory := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithNamespace(ns))
	inf := factory.Core().V1().Pods().Informer()
	_, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { observe(obj, false) },
		UpdateFunc: func(_, obj any) { observe(obj, false) },
		DeleteFunc: func(obj any) {
			if d, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
				obj = d.Obj
			}
			observe(obj, true)
		},
	})
	if err != nil {
		tb.Fatal(err)
	}
	factory.Start(ctx.Done())
	for typ, ok := range factory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			tb.Fatalf("watch of %s in %s did not sync", typ, ns)
		}
	}
	go func() {
		defer close(done)
		defer factory.Shutdown()
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case now := <-t.C:
				tick(now)
			}
		}
	}()
}
