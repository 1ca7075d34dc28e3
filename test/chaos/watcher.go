package chaos

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
// usage at that moment, and a gang with some but fewer than its quorum of
// pods bound for longer than Settle (binds of a gang are separate calls).
type Watcher struct {
	client   kubernetes.Interface
	ns       string
	nodes    map[string]Capacity
	external ExternalUsage
	// Settle is how long a gang may run below its quorum on its way up.
	Settle time.Duration

	mu         sync.Mutex
	pods       map[types.UID]*podState
	seen       map[types.UID]bool
	boundTo    map[string]string
	retired    map[string]bool
	below      map[string]time.Time
	flagged    map[string]bool
	violations []Violation
	live       bool
	rv         string
	relists    int
	events     int
	binds      int
}

// NewWatcher returns a Watcher of the pods of ns on nodes (name ->
// allocatable); external may be nil.
func NewWatcher(client kubernetes.Interface, ns string, nodes map[string]Capacity, external ExternalUsage) *Watcher {
	return &Watcher{client: client, ns: ns, nodes: nodes, external: external, Settle: 10 * time.Second,
		pods: map[types.UID]*podState{}, seen: map[types.UID]bool{}, boundTo: map[string]string{}, retired: map[string]bool{},
		below: map[string]time.Time{}, flagged: map[string]bool{}}
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

func (w *Watcher) run(ctx context.Context) {
	ticker := time.NewTicker(w.Settle / 10)
	defer ticker.Stop()
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
			pause(ctx, 200*time.Millisecond) // the API server is down
			continue
		}
		w.setLive(true)
		expired := w.consume(ctx, wi, ticker.C)
		wi.Stop()
		w.setLive(false)
		if expired {
			w.relistUntilDone(ctx)
		}
	}
}

// consume handles the events of one watch until it ends; it returns true
// if it ended with 410.
func (w *Watcher) consume(ctx context.Context, wi watch.Interface, tick <-chan time.Time) bool {
	for {
		select {
		case <-ctx.Done():
			return false
		case now := <-tick:
			w.checkQuorums(now)
		case ev, ok := <-wi.ResultChan():
			if !ok {
				return false
			}
			switch ev.Type {
			case watch.Error:
				status, _ := ev.Object.(*metav1.Status)
				return status != nil && status.Code == 410
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
		}
	}
}

func (w *Watcher) relistUntilDone(ctx context.Context) {
	for ctx.Err() == nil {
		if err := w.relist(ctx); err == nil {
			return
		}
		pause(ctx, 200*time.Millisecond)
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
		return
	}
	cur := &podState{key: key, node: pod.Spec.NodeName, req: requestsOf(pod),
		terminal: pod.Status.Phase == v1.PodSucceeded || pod.Status.Phase == v1.PodFailed}
	cur.gang = pod.Annotations[framework.GroupNameAnnotation]
	if q, err := strconv.Atoi(pod.Annotations[framework.MinAvailableAnnotation]); err == nil {
		cur.quorum = q
	}
	w.pods[pod.UID] = cur
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
		w.checkNode(cur.node, time.Now())
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

// checkQuorums records the gangs that stayed partly bound for longer
// than Settle.
func (w *Watcher) checkQuorums(now time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	bound, quorum := map[string]int{}, map[string]int{}
	for _, p := range w.pods {
		if p.gang == "" {
			continue
		}
		quorum[p.gang] = p.quorum
		if p.node != "" {
			bound[p.gang]++
		}
	}
	for gang, q := range quorum {
		b := bound[gang]
		if w.retired[gang] || b == 0 || b >= q {
			delete(w.below, gang)
			continue
		}
		since, ok := w.below[gang]
		if !ok {
			w.below[gang] = now
			continue
		}
		if now.Sub(since) > w.Settle && !w.flagged[gang] {
			w.flagged[gang] = true
			w.violate("below-quorum", "gang %s/%s has %d of its quorum of %d pods bound since %s", w.ns, gang, b, q, since.Format("15:04:05.000"))
		}
	}
}

// violate records a violation. w.mu is held.
func (w *Watcher) violate(kind, format string, args ...any) {
	v := Violation{Kind: kind, At: time.Now(), Message: fmt.Sprintf(format, args...)}
	klog.ErrorS(nil, "Chaos watcher saw a violation", "kind", kind, "message", v.Message)
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
			out = append(out, Violation{Kind: "missed", At: time.Now(), Message: fmt.Sprintf("pod uid %s was created by the load but never seen", uid)})
		}
	}
	return out
}

// requestsOf sums the requests of the containers of pod (the load sets
// nothing else).
func requestsOf(pod *v1.Pod) Capacity {
	var c Capacity
	for _, ctr := range pod.Spec.Containers {
		c.MilliCPU += ctr.Resources.Requests.Cpu().MilliValue()
		c.Memory += ctr.Resources.Requests.Memory().Value()
	}
	return c
}

// pause waits d or until ctx ends.
func pause(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
