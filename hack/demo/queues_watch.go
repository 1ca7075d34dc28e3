package main

// The pod watch of the queues story: it sees every transition of the pods
// of batch-scheduler (through an informer's watch) and records the
// guarantees it saw broken. A gang runs whole or not at all: some but
// fewer than its quorum of pods running (bound, not finished, not being
// deleted) for longer than a moment, after a bind (a partial start) or an
// eviction (a partial eviction), is a violation; members that finish one
// by one are not. No node holds pods (bound, not finished: a pod being
// deleted still runs) that request more cpu than it has.

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	toolscache "k8s.io/client-go/tools/cache"
)

// gangWatch follows the gangs of the story: the pods of each Job.
type gangWatch struct {
	// quorum is each Job's ("namespace/name") quorum; capacity each
	// node's allocatable milli-cpu; settle how long a gang may run below
	// its quorum on its way up or down.
	quorum   map[string]int
	capacity map[string]int64
	settle   time.Duration

	factory informers.SharedInformerFactory
	cancel  context.CancelFunc

	mu         sync.Mutex
	pods       map[types.UID]watchedPod
	gangs      map[string]*watchedGang
	violations []string
	binds      int
	peakCPU    map[string]int64
}

// watchedPod is what the watch knows of a pod.
type watchedPod struct {
	key, job, node string
	milliCPU       int64
	// holds: bound and not finished, it takes room on its node. live:
	// holds and is not being deleted, it runs as a member of its gang.
	holds, live bool
}

// watchedGang is what the watch knows of a gang.
type watchedGang struct {
	live int
	// starts counts the times it reached its quorum; evicted the pods
	// that stopped running without succeeding.
	starts, evicted int
	// partialSince is when it last went to some but fewer than its
	// quorum of pods running (zero: it has not), cause why ("bind",
	// "eviction" or "finish": excused).
	partialSince time.Time
	cause        string
	flagged      bool
	// longest is the longest partial state so far that was not excused,
	// and its cause.
	longest      time.Duration
	longestCause string
}

func newGangWatch(quorum map[string]int, capacity map[string]int64, settle time.Duration) *gangWatch {
	return &gangWatch{quorum: quorum, capacity: capacity, settle: settle,
		pods: map[types.UID]watchedPod{}, gangs: map[string]*watchedGang{}, peakCPU: map[string]int64{}}
}

// start lists and watches the pods of every namespace until ctx ends or
// stop is called, and returns once the first list is in.
func (g *gangWatch) start(ctx context.Context, client kubernetes.Interface) error {
	ctx, g.cancel = context.WithCancel(ctx)
	g.factory = informers.NewSharedInformerFactory(client, 0)
	inf := g.factory.Core().V1().Pods().Informer()
	if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { g.observe(obj, false) },
		UpdateFunc: func(_, obj any) { g.observe(obj, false) },
		DeleteFunc: func(obj any) { g.observe(obj, true) },
	}); err != nil {
		return fmt.Errorf("watching pods: %w", err)
	}
	g.factory.Start(ctx.Done())
	if !toolscache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		return errors.New("the pod watch never listed the pods")
	}
	// The partial states are timed between events too.
	go func() {
		t := time.NewTicker(g.settle / 10)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case now := <-t.C:
				g.mu.Lock()
				g.checkPartial(now)
				g.mu.Unlock()
			}
		}
	}()
	return nil
}

// stop ends the watch and waits for the informer to stop.
func (g *gangWatch) stop() {
	if g.cancel != nil {
		g.cancel()
	}
	if g.factory != nil {
		g.factory.Shutdown()
	}
}

// observe applies a pod's new state (deleted: it is gone).
func (g *gangWatch) observe(obj any, deleted bool) {
	if tomb, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	pod, ok := obj.(*v1.Pod)
	if !ok || pod.Spec.SchedulerName != ourScheduler {
		return
	}
	now := time.Now()
	g.mu.Lock()
	defer g.mu.Unlock()
	old, had := g.pods[pod.UID]
	cur := watchedPod{key: pod.Namespace + "/" + pod.Name, node: pod.Spec.NodeName}
	if owner := metav1.GetControllerOfNoCopy(pod); owner != nil && owner.Kind == "Job" {
		cur.job = pod.Namespace + "/" + owner.Name
	}
	for _, c := range pod.Spec.Containers {
		cur.milliCPU += c.Resources.Requests.Cpu().MilliValue()
	}
	terminal := pod.Status.Phase == v1.PodSucceeded || pod.Status.Phase == v1.PodFailed
	cur.holds = !deleted && cur.node != "" && !terminal
	cur.live = cur.holds && pod.DeletionTimestamp == nil
	if deleted {
		delete(g.pods, pod.UID)
	} else {
		g.pods[pod.UID] = cur
	}
	if cur.node != "" && (!had || old.node == "") && !deleted {
		g.binds++
		g.checkNode(cur.node)
	}
	if had && old.node != "" && cur.node != "" && old.node != cur.node {
		g.violations = append(g.violations, fmt.Sprintf("pod %s moved from node %s to %s", cur.key, old.node, cur.node))
	}
	if cur.job == "" || old.live == cur.live {
		return
	}
	gang := g.gangs[cur.job]
	if gang == nil {
		gang = &watchedGang{}
		g.gangs[cur.job] = gang
	}
	quorum := g.quorum[cur.job]
	if quorum == 0 {
		quorum = 1
	}
	cause := "bind"
	if cur.live {
		gang.live++
		if gang.live == quorum {
			gang.starts++
		}
	} else {
		gang.live--
		cause = "eviction"
		if pod.Status.Phase == v1.PodSucceeded {
			cause = "finish"
		} else {
			gang.evicted++
		}
	}
	switch {
	case gang.live > 0 && gang.live < quorum:
		if gang.partialSince.IsZero() {
			gang.partialSince, gang.cause, gang.flagged = now, cause, false
		}
	case !gang.partialSince.IsZero():
		if d := now.Sub(gang.partialSince); gang.cause != "finish" && d > gang.longest {
			gang.longest, gang.longestCause = d, gang.cause
		}
		gang.partialSince = time.Time{}
	}
	g.checkPartial(now)
}

// checkNode records node holding more cpu than it has. g.mu is held.
func (g *gangWatch) checkNode(node string) {
	var used int64
	var keys []string
	for _, p := range g.pods {
		if p.node == node && p.holds {
			used += p.milliCPU
			keys = append(keys, p.key)
		}
	}
	g.peakCPU[node] = max(g.peakCPU[node], used)
	if capacity, ok := g.capacity[node]; ok && used > capacity {
		slices.Sort(keys)
		g.violations = append(g.violations, fmt.Sprintf("node %s held pods requesting %dm cpu, more than its %dm: %s", node, used, capacity, strings.Join(keys, ", ")))
	}
}

// checkPartial records the gangs that have run below their quorum for
// longer than settle, other than while members finish. g.mu is held.
func (g *gangWatch) checkPartial(now time.Time) {
	for _, name := range slices.Sorted(maps.Keys(g.gangs)) {
		gang := g.gangs[name]
		if gang.partialSince.IsZero() || gang.cause == "finish" || gang.flagged || now.Sub(gang.partialSince) <= g.settle {
			continue
		}
		gang.flagged = true
		g.violations = append(g.violations, fmt.Sprintf("gang %s has run %d of its quorum of %d pods since %s, after %s",
			name, gang.live, g.quorum[name], gang.partialSince.Format("15:04:05.000"), withArticle(gang.cause)))
	}
}

// verdict returns the guarantees broken so far, nil if none.
func (g *gangWatch) verdict() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.checkPartial(time.Now())
	if len(g.violations) == 0 {
		return nil
	}
	return fmt.Errorf("the pod watch saw a guarantee broken: %s", strings.Join(g.violations, "; "))
}

// summary says what the watch saw, one line per guarantee.
func (g *gangWatch) summary() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	starts, evictedGangs := 0, []string{}
	var longest time.Duration
	cause := ""
	for _, name := range slices.Sorted(maps.Keys(g.gangs)) {
		gang := g.gangs[name]
		starts += gang.starts
		if gang.evicted > 0 {
			evictedGangs = append(evictedGangs, fmt.Sprintf("%s (%d of %d pods)", name, gang.evicted, g.quorum[name]))
		}
		if gang.longest > longest {
			longest, cause = gang.longest, gang.longestCause
		}
	}
	partial := "no gang ever ran some but not all of its pods"
	if longest > 0 {
		partial = fmt.Sprintf("the longest a gang ran some but not all of its pods was %s, during %s (allowed: %s)", longest.Round(time.Millisecond), withArticle(cause), g.settle)
	}
	var peaks []string
	for _, node := range slices.Sorted(maps.Keys(g.peakCPU)) {
		peaks = append(peaks, fmt.Sprintf("%s %dm/%dm", node, g.peakCPU[node], g.capacity[node]))
	}
	return []string{
		fmt.Sprintf("no gang ran below its quorum: %d gang starts and %d binds seen; evicted: %s; %s",
			starts, g.binds, joinOr(evictedGangs, "none"), partial),
		"no node held more cpu than it has (most held at a bind: " + strings.Join(peaks, ", ") + ")",
	}
}

// withArticle is "a bind", "an eviction".
func withArticle(cause string) string {
	if strings.HasPrefix(cause, "e") {
		return "an " + cause
	}
	return "a " + cause
}
