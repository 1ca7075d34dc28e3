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

package podwatch

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"

	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
)

// Capacity is what a node can hold, or what something uses of it.
type Capacity struct {
	MilliCPU int64
	Memory   int64
	Pods     int64
}

// ExternalUsage returns what runs on node outside Kubernetes (VMs) at a
// moment, as the test knows it.
type ExternalUsage func(node string, at time.Time) Capacity

// Violation is a broken guarantee the Watcher saw.
type Violation struct {
	// Kind is "double-bind", "overcommit", "below-quorum" or "missed".
	Kind    string
	At      time.Time
	Message string
}

func (v Violation) String() string {
	return fmt.Sprintf("%s at %s: %s", v.Kind, v.At.Format("15:04:05.000"), v.Message)
}

// podState is what the Watcher knows of one pod.
type podState struct {
	key      string
	node     string
	req      Capacity
	gang     string
	quorum   int
	terminal bool
	// succeeded: the pod finished with phase Succeeded.
	succeeded bool
}

// GangOf says which gang pod belongs to and the gang's quorum; an empty
// gang means a pod of its own.
type GangOf func(pod *v1.Pod) (gang string, quorum int)

// AnnotatedGang is the default GangOf: the gang and quorum the pod's own
// annotations declare (framework.GroupNameAnnotation and
// framework.MinAvailableAnnotation).
func AnnotatedGang(pod *v1.Pod) (string, int) {
	q, _ := strconv.Atoi(pod.Annotations[framework.MinAvailableAnnotation])
	return pod.Annotations[framework.GroupNameAnnotation], q
}

// ControllerGang returns a GangOf that puts the pods controlled by one
// object of kind in one gang, named after the object, whose quorum is
// quorum(name); other pods are pods of their own.
func ControllerGang(kind string, quorum func(name string) int) GangOf {
	return func(pod *v1.Pod) (string, int) {
		ref := metav1.GetControllerOfNoCopy(pod)
		if ref == nil || ref.Kind != kind {
			return "", 0
		}
		return ref.Name, quorum(ref.Name)
	}
}

// Watcher sees every transition of the pods of one namespace through one
// watch, opened at the start and resumed from the last resourceVersion it
// saw whenever it ends. When the API server answers that the version is
// too old (410), it lists again and reconciles: a pod on another node than
// it last saw is a double bind; a pod gone that it last saw unbound might
// have been bound and unbound unseen, and is reported as "missed".
//
// It reports a pod whose node changes once set, a node whose bound
// non-terminal pods request more than its allocatable minus the external
// usage at that moment, and a gang running below its quorum: a bind that
// leaves a gang with some but fewer than its quorum of running pods (bound
// and not finished) opens a window, closed when the gang reaches its
// quorum or has no pod running; a window open for longer than Settle is a
// violation (binds of a gang are separate calls, so it takes a moment to
// reach the quorum). Pods that finish or fail do not open a window: a
// gang whose members end one by one is not started below its quorum.
type Watcher struct {
	client   kubernetes.Interface
	ns       string
	nodes    map[string]Capacity
	external ExternalUsage
	// Settle is how long a gang may run below its quorum on its way up.
	// Set it, and GangOf, before Start.
	Settle time.Duration
	// GangOf groups the pods into gangs; AnnotatedGang by default.
	GangOf GangOf
	// Evictions: a member that stops running without succeeding (it
	// failed or was deleted: an eviction) and leaves its gang with some
	// but fewer than its quorum of pods running opens a window too, so
	// that a gang evicted in part is reported. Set it before Start, for
	// a scheduler that evicts whole gangs.
	Evictions bool

	// now is the clock every time the Watcher records or judges is read
	// from, and newTicker paces the quorum checks. New sets them to the
	// wall clock and a time.Ticker; the package's tests swap them to play
	// events at instants they choose.
	now       func() time.Time
	newTicker func(time.Duration) (<-chan time.Time, func())

	// mu guards everything below; observe, the checks and the accessors
	// take it, the watch loop does not hold it while it waits.
	mu         sync.Mutex
	pods       map[types.UID]*podState
	seen       map[types.UID]bool
	boundTo    map[string]string
	retired    map[string]bool
	gangs      map[string]*gangState
	violations []Violation
	live       bool
	rv         string
	relists    int
	events     int
	binds      int
}

// gangState is what the Watcher knows of one gang.
type gangState struct {
	quorum int
	// live is how many of its pods are bound and not finished, and peak
	// the most ever at once.
	live, peak int
	// below is when a bind left the gang below its quorum (zero: no open
	// window); belowFor sums the windows closed so far.
	below    time.Time
	belowFor time.Duration
	flagged  bool
}

// GangStats is what a Watcher saw of one gang.
type GangStats struct {
	Quorum int
	// Running is how many of its pods are bound and not finished now, and
	// Peak the most at once.
	Running, Peak int
	// BelowQuorum is how long binds left it with some but fewer than its
	// quorum of pods running, in all.
	BelowQuorum time.Duration
}

// New returns a Watcher of the pods of ns on nodes (name ->
// allocatable); external may be nil, and nodes may be nil to skip the
// over-commit check.
func New(client kubernetes.Interface, ns string, nodes map[string]Capacity, external ExternalUsage) *Watcher {
	return &Watcher{client: client, ns: ns, nodes: nodes, external: external, Settle: 10 * time.Second, GangOf: AnnotatedGang,
		now: time.Now, newTicker: wallTicker,
		pods: map[types.UID]*podState{}, seen: map[types.UID]bool{}, boundTo: map[string]string{}, retired: map[string]bool{},
		gangs: map[string]*gangState{}}
}

// Start lists the pods once and then watches them until ctx ends; it
// returns after the first list.
func (w *Watcher) Start(ctx context.Context) error {
	if err := w.relist(ctx); err != nil {
		return err
	}
	go w.run(ctx)
	return nil
}

// wallTicker is the default newTicker.
func wallTicker(d time.Duration) (<-chan time.Time, func()) {
	t := time.NewTicker(d)
	return t.C, t.Stop
}

func (w *Watcher) run(ctx context.Context) {
	tick, stop := w.newTicker(w.Settle / 10)
	defer stop()
	for ctx.Err() == nil {
		w.mu.Lock()
		rv := w.rv
		w.mu.Unlock()
		wi, err := w.client.CoreV1().Pods(w.ns).Watch(ctx, metav1.ListOptions{ResourceVersion: rv, AllowWatchBookmarks: true})
		if err != nil {
			if apierrors.IsResourceExpired(err) || apierrors.IsGone(err) {
				w.relistUntilDone(ctx)
				continue
			}
			Pause(ctx, 200*time.Millisecond) // the API server is down
			continue
		}
		w.setLive(true)
		expired := w.consume(ctx, wi, tick)
		wi.Stop()
		w.setLive(false)
		if expired {
			w.relistUntilDone(ctx)
		}
	}
}

// maxCatchUp bounds how many waiting events a quorum check applies
// before it judges, so that a watch that never pauses cannot hold the
// checks off for good.
const maxCatchUp = 1000

// consume handles the events of one watch until it ends; it returns true
// if it ended with 410.
//
// A quorum check judges what the Watcher knows, so before it runs,
// consume applies the events the watch has already delivered. Otherwise
// a tick and an event ready together would be taken in random order
// (select), and once the loop had been held up for longer than Settle (a
// loaded machine, a GC pause) the check could run between the bind that
// left a gang below its quorum and the bind, already waiting in the
// channel, that made it whole, and report the gang below its quorum.
func (w *Watcher) consume(ctx context.Context, wi watch.Interface, tick <-chan time.Time) bool {
	for {
		select {
		case <-ctx.Done():
			return false
		case <-tick:
		catchUp:
			for range maxCatchUp {
				select {
				case ev, ok := <-wi.ResultChan():
					if done, expired := w.handle(ev, ok); done {
						return expired
					}
				default:
					break catchUp
				}
			}
			w.checkQuorums()
		case ev, ok := <-wi.ResultChan():
			if done, expired := w.handle(ev, ok); done {
				return expired
			}
		}
	}
}

// handle applies one event of a watch (ok false: the watch ended); done
// says the watch is over, and expired that it ended with 410.
func (w *Watcher) handle(ev watch.Event, ok bool) (done, expired bool) {
	if !ok {
		return true, false
	}
	switch ev.Type {
	case watch.Error:
		status, _ := ev.Object.(*metav1.Status)
		return true, status != nil && status.Code == 410
	case watch.Bookmark:
		if pod, ok := ev.Object.(*v1.Pod); ok {
			w.mu.Lock()
			w.rv = pod.ResourceVersion
			w.mu.Unlock()
		}
	default:
		if pod, ok := ev.Object.(*v1.Pod); ok {
			w.observe(pod, ev.Type == watch.Deleted)
		}
	}
	return false, false
}

func (w *Watcher) relistUntilDone(ctx context.Context) {
	for ctx.Err() == nil {
		if err := w.relist(ctx); err == nil {
			return
		}
		Pause(ctx, 200*time.Millisecond)
	}
}

// relist lists the pods and reconciles them with what was known.
func (w *Watcher) relist(ctx context.Context) error {
	list, err := w.client.CoreV1().Pods(w.ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("listing the pods of %s: %w", w.ns, err)
	}
	listed := map[types.UID]bool{}
	for i := range list.Items {
		listed[list.Items[i].UID] = true
		w.observe(&list.Items[i], false)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.relists++
	for uid, p := range w.pods {
		if listed[uid] {
			continue
		}
		if p.node == "" && w.relists > 1 {
			w.violate("missed", "pod %s (uid %s) vanished between two watches while last seen unbound: a bind of it may have gone unseen", p.key, uid)
		}
		delete(w.pods, uid)
	}
	w.rv = list.ResourceVersion
	return nil
}

// observe applies one state of pod.
func (w *Watcher) observe(pod *v1.Pod, deleted bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.events++
	key := pod.Namespace + "/" + pod.Name
	if pod.ResourceVersion != "" {
		w.rv = pod.ResourceVersion
	}
	w.seen[pod.UID] = true
	old := w.pods[pod.UID]
	if deleted {
		delete(w.pods, pod.UID)
		if old != nil {
			w.updateGang(nil, old, w.now())
		}
		return
	}
	cur := &podState{key: key, node: pod.Spec.NodeName, req: requestsOf(pod),
		terminal: pod.Status.Phase == v1.PodSucceeded || pod.Status.Phase == v1.PodFailed, succeeded: pod.Status.Phase == v1.PodSucceeded}
	cur.gang, cur.quorum = w.GangOf(pod)
	w.pods[pod.UID] = cur
	defer w.updateGang(cur, old, w.now())
	oldNode := ""
	if old != nil {
		oldNode = old.node
	}
	switch {
	case oldNode != "" && cur.node != oldNode:
		w.violate("double-bind", "pod %s (uid %s) moved from node %q to %q", key, pod.UID, oldNode, cur.node)
	case oldNode == "" && cur.node != "":
		w.binds++
		w.boundTo[key] = cur.node
		w.checkNode(cur.node, w.now())
	}
}

// checkNode records an over-commit of node. w.mu is held.
func (w *Watcher) checkNode(node string, now time.Time) {
	alloc, known := w.nodes[node]
	if !known {
		return
	}
	var used Capacity
	var names []string
	for _, p := range w.pods {
		if p.node != node || p.terminal {
			continue
		}
		used.MilliCPU += p.req.MilliCPU
		used.Memory += p.req.Memory
		used.Pods++
		names = append(names, p.key)
	}
	var ext Capacity
	if w.external != nil {
		ext = w.external(node, now)
	}
	if used.MilliCPU+ext.MilliCPU > alloc.MilliCPU || used.Memory+ext.Memory > alloc.Memory || used.Pods > alloc.Pods {
		sort.Strings(names)
		w.violate("overcommit", "node %s: pods request cpu %dm memory %d (%d pods), external cpu %dm memory %d, allocatable cpu %dm memory %d pods %d; pods: %s",
			node, used.MilliCPU, used.Memory, used.Pods, ext.MilliCPU, ext.Memory, alloc.MilliCPU, alloc.Memory, alloc.Pods, strings.Join(names, ","))
	}
}

// updateGang recounts the gang of a pod that changed from old to cur
// (either may be nil), and opens a window when a bind left it below its
// quorum (or, with Evictions, a member that stopped without succeeding).
// w.mu is held.
func (w *Watcher) updateGang(cur, old *podState, now time.Time) {
	live := func(p *podState) bool { return p != nil && p.node != "" && !p.terminal }
	name := ""
	if cur != nil {
		name = cur.gang
	} else if old != nil {
		name = old.gang
	}
	if name == "" {
		return
	}
	g := w.gangs[name]
	if g == nil {
		g = &gangState{}
		w.gangs[name] = g
	}
	if cur != nil && cur.quorum > 0 {
		g.quorum = cur.quorum
	}
	switch {
	case live(cur) && !live(old):
		g.live++
	case !live(cur) && live(old):
		g.live--
	}
	g.peak = max(g.peak, g.live)
	bind := cur != nil && cur.node != "" && (old == nil || old.node == "")
	evicted := w.Evictions && live(old) && !live(cur) && (cur == nil || !cur.succeeded)
	if (bind || evicted) && g.below.IsZero() && g.live > 0 && g.live < g.quorum {
		g.below = now
	}
	w.closeWindow(name, g, now)
}

// closeWindow ends the open window of gang g once it reached its quorum
// or runs no pod. w.mu is held.
func (w *Watcher) closeWindow(name string, g *gangState, now time.Time) {
	if g.below.IsZero() || (g.live > 0 && g.live < g.quorum && !w.retired[name]) {
		return
	}
	g.belowFor += now.Sub(g.below)
	g.below = time.Time{}
	g.flagged = false
}

// checkQuorums records the gangs whose window has been open for longer
// than Settle. It reads the time from w.now, the clock the windows were
// opened on, not from the tick, whose value is when it fired and lags
// when the loop took it late.
func (w *Watcher) checkQuorums() {
	w.mu.Lock()
	defer w.mu.Unlock()
	now := w.now()
	for name, g := range w.gangs {
		w.closeWindow(name, g, now)
		if g.below.IsZero() || g.flagged || now.Sub(g.below) <= w.Settle {
			continue
		}
		g.flagged = true
		w.violate("below-quorum", "gang %s/%s has %d of its quorum of %d pods running since %s", w.ns, name, g.live, g.quorum, g.below.Format("15:04:05.000"))
	}
}

// Gangs returns what the Watcher saw of each gang, by name.
func (w *Watcher) Gangs() map[string]GangStats {
	w.mu.Lock()
	defer w.mu.Unlock()
	now := w.now()
	out := make(map[string]GangStats, len(w.gangs))
	for name, g := range w.gangs {
		below := g.belowFor
		if !g.below.IsZero() {
			below += now.Sub(g.below)
		}
		out[name] = GangStats{Quorum: g.quorum, Running: g.live, Peak: g.peak, BelowQuorum: below}
	}
	return out
}

// violate records a violation. w.mu is held.
func (w *Watcher) violate(kind, format string, args ...any) {
	v := Violation{Kind: kind, At: w.now(), Message: fmt.Sprintf(format, args...)}
	klog.ErrorS(nil, "Pod watcher saw a violation", "kind", kind, "message", v.Message)
	w.violations = append(w.violations, v)
}

func (w *Watcher) setLive(live bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.live = live
}

// Live says whether a watch is open: what happens now will be seen in
// order, without a relist.
func (w *Watcher) Live() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.live
}

// Retire tells the Watcher that gang is being deleted, so that its
// partial states from now on are expected.
func (w *Watcher) Retire(gang string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.retired[gang] = true
}

// Bound returns how many pods it saw bound, and a snapshot of how many
// are bound now.
func (w *Watcher) Bound() (total, now int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, p := range w.pods {
		if p.node != "" {
			now++
		}
	}
	return w.binds, now
}

// BoundTo returns the node each pod (namespace/name) was ever seen bound
// to.
func (w *Watcher) BoundTo() map[string]string {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make(map[string]string, len(w.boundTo))
	for k, v := range w.boundTo {
		out[k] = v
	}
	return out
}

// WatcherStats are the Watcher's counters.
type WatcherStats struct {
	Events, Relists, Binds int
}

// Stats returns the Watcher's counters.
func (w *Watcher) Stats() WatcherStats {
	w.mu.Lock()
	defer w.mu.Unlock()
	return WatcherStats{Events: w.events, Relists: w.relists, Binds: w.binds}
}

// Violations returns what the Watcher saw so far, and the UIDs of
// created (those it was told of and never saw).
func (w *Watcher) Violations(created []types.UID) []Violation {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := append([]Violation(nil), w.violations...)
	for _, uid := range created {
		if !w.seen[uid] {
			out = append(out, Violation{Kind: "missed", At: w.now(), Message: fmt.Sprintf("pod uid %s was created by the load but never seen", uid)})
		}
	}
	return out
}

// requestsOf sums the requests of the containers of pod (what the tests
// set).
func requestsOf(pod *v1.Pod) Capacity {
	var c Capacity
	for _, ctr := range pod.Spec.Containers {
		c.MilliCPU += ctr.Resources.Requests.Cpu().MilliValue()
		c.Memory += ctr.Resources.Requests.Memory().Value()
	}
	return c
}

// Pause waits d or until ctx ends.
func Pause(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
