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

package scheduler

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	policyv1client "k8s.io/client-go/kubernetes/typed/policy/v1"
	policylisters "k8s.io/client-go/listers/policy/v1"
	clienttesting "k8s.io/client-go/testing"
	toolscache "k8s.io/client-go/tools/cache"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/batch-scheduler/batch-scheduler/pkg/dialects"
	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
	"github.com/batch-scheduler/batch-scheduler/pkg/framework/preemption"
	"github.com/batch-scheduler/batch-scheduler/pkg/metrics/metricstest"
	"github.com/batch-scheduler/batch-scheduler/pkg/schedulingqueue"
	st "github.com/batch-scheduler/batch-scheduler/pkg/testing"
)

// evictions records the Eviction API calls of a harness and answers them:
// 429 for the pods named in refuse, success (the pod is deleted from the
// fake API server) otherwise. The cache learns of a deletion only when the
// test says so (gone), as an informer would report it.
type evictions struct {
	h      *harness
	mu     sync.Mutex
	refuse map[string]bool
	asked  []string
	done   []string
}

func newEvictions(h *harness, refuse ...string) *evictions {
	e := &evictions{h: h, refuse: map[string]bool{}}
	for _, name := range refuse {
		e.refuse[name] = true
	}
	h.client.PrependReactor("create", "pods", func(a clienttesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() != "eviction" {
			return false, nil, nil
		}
		ev := a.(clienttesting.CreateAction).GetObject().(*policyv1.Eviction)
		e.mu.Lock()
		defer e.mu.Unlock()
		e.asked = append(e.asked, ev.Name)
		if e.refuse[ev.Name] {
			return true, nil, apierrors.NewTooManyRequests("Cannot evict pod as it would violate the pod's disruption budget.", 0)
		}
		e.done = append(e.done, ev.Name)
		return true, nil, h.client.Tracker().Delete(v1.SchemeGroupVersion.WithResource("pods"), ev.Namespace, ev.Name)
	})
	return e
}

// evicted returns the pods evicted, sorted.
func (e *evictions) evicted() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := slices.Clone(e.done)
	sort.Strings(out)
	return out
}

func (e *evictions) attempted() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.asked)
}

// gone tells the cache that the evicted pods were deleted, as the informer
// would, with the event that requeues the jobs they kept out.
func (e *evictions) gone(pods ...*v1.Pod) {
	e.h.t.Helper()
	for _, pod := range pods {
		if _, err := e.h.cache.DeletePod(pod); err != nil {
			e.h.t.Fatalf("deleting %s from the cache: %v", pod.Name, err)
		}
		e.h.cache.MoveAllToActiveOrBackoffQueue(framework.EventAssignedPodDelete, pod, nil)
	}
}

// t0 is the creation time of the oldest pods of the tests.
var t0 = metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))

// running returns a pod bound to node with priority, requesting cpu,
// created minutes after t0.
func running(name, node string, priority int32, cpu string, minutes int) *st.PodWrapper {
	return st.MakePod().Name(name).Node(node).Phase(v1.PodRunning).Priority(priority).
		Req(res{v1.ResourceCPU: cpu}).Created(metav1.NewTime(t0.Add(time.Duration(minutes) * time.Minute)))
}

// gangPods returns n pending pods of gang with quorum minAvailable.
func gangPods(gang string, n int, minAvailable string, priority int32, cpu string) []*v1.Pod {
	var pods []*v1.Pod
	for i := range n {
		pods = append(pods, st.MakePod().Name(fmt.Sprintf("%s-%d", gang, i)).Group(gang).MinAvailable(minAvailable).
			Priority(priority).Req(res{v1.ResourceCPU: cpu}).Obj())
	}
	return pods
}

func (h *harness) preemptionAttempts(result string) float64 {
	return metricstest.CounterValue(h.t, h.metrics.PreemptionAttempts.WithLabelValues(result))
}

// withPDBs makes the scheduler read pdbs.
func withPDBs(t *testing.T, pdbs ...*policyv1.PodDisruptionBudget) func(*Options) {
	indexer := toolscache.NewIndexer(toolscache.MetaNamespaceKeyFunc, toolscache.Indexers{toolscache.NamespaceIndex: toolscache.MetaNamespaceIndexFunc})
	for _, pdb := range pdbs {
		if err := indexer.Add(pdb); err != nil {
			t.Fatal(err)
		}
	}
	return func(o *Options) { o.PDBLister = policylisters.NewPodDisruptionBudgetLister(indexer) }
}

func pdb(name string, allowed int32, matchLabels map[string]string) *policyv1.PodDisruptionBudget {
	one := intstr.FromInt32(1)
	return &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec:       policyv1.PodDisruptionBudgetSpec{MinAvailable: &one, Selector: &metav1.LabelSelector{MatchLabels: matchLabels}},
		Status:     policyv1.PodDisruptionBudgetStatus{DisruptionsAllowed: allowed},
	}
}

// A high-priority gang of 4 preempts exactly the pods it needs, the least
// important ones, and lands where preemption made room once they are gone.
func TestPreemptionGangOfFourLands(t *testing.T) {
	h := newHarness(t)
	ev := newEvictions(h)
	for _, n := range []string{"n1", "n2", "n3", "n4"} {
		h.addNode(n, "2")
	}
	lowA := running("low-a", "n1", 10, "1", 1).Obj()
	lowB := running("low-b", "n1", 10, "1", 2).Obj()
	mid := running("mid", "n2", 50, "2", 0).Obj()
	fill3 := running("fill-3", "n3", 10, "1", 0).Label("app", "x").Obj()
	fill4 := running("fill-4", "n4", 200, "1", 0).Obj()
	for _, p := range []*v1.Pod{lowA, lowB, mid, fill3, fill4} {
		h.addPod(p)
	}
	gang := gangPods("high", 4, "4", 100, "1")
	for _, p := range gang {
		h.addPod(p)
	}

	h.cycle()
	// n3 and n4 have room for one pod each; the other two take n1, whose
	// pods have the lowest priority: mid (50) and fill-4 (200, not
	// lower) stay.
	if got, want := ev.evicted(), []string{"low-a", "low-b"}; !slices.Equal(got, want) {
		t.Fatalf("evicted %v, want %v", got, want)
	}
	if len(h.bindings()) != 0 {
		t.Fatalf("bound %v before the victims left", h.boundTo())
	}
	if got := h.preemptionAttempts(preemption.ResultPreempted); got != 1 {
		t.Errorf("PreemptionAttempts{preempted} = %v, want 1", got)
	}
	if got := metricstest.CounterValue(t, h.metrics.PreemptionVictims.WithLabelValues("DefaultPreemption")); got != 2 {
		t.Errorf("PreemptionVictims = %v, want 2", got)
	}
	nominated := map[string]string{}
	for _, p := range gang {
		nominated[p.Name] = h.apiPod(p).Status.NominatedNodeName
	}
	perNode := map[string]int{}
	for _, n := range nominated {
		perNode[n]++
	}
	if perNode["n1"] != 2 || perNode["n3"] != 1 || perNode["n4"] != 1 {
		t.Errorf("nominated nodes %v, want two pods on n1 and one each on n3 and n4", nominated)
	}
	evts := h.events()
	if got := eventsWith(evts, "Normal Preempted Preempted by pod "); len(got) != 2 {
		t.Errorf("Preempted events %q, want one per victim", got)
	}
	if got := eventsWith(evts, "Normal Preempting Preempting "); len(got) != 2 {
		t.Errorf("Preempting events %q, want one per preemptor pod nominated to n1", got)
	}

	// While the victims terminate, another cycle preempts nothing more.
	h.requeueAll()
	h.cycle()
	if got := ev.attempted(); len(got) != 2 {
		t.Errorf("evictions asked %v, want no more while the victims terminate", got)
	}

	ev.gone(lowA, lowB)
	h.cycle()
	got := h.boundTo()
	if len(got) != 4 {
		t.Fatalf("bound %v, want the whole gang", got)
	}
	for name, node := range got {
		if nominated[name] != node {
			t.Errorf("%s bound to %s, nominated to %s", name, node, nominated[name])
		}
	}
}

// A victim that belongs to a gang takes its whole gang when the rest
// would be below its quorum, and only itself when the rest keep it.
func TestPreemptionVictimGangs(t *testing.T) {
	tests := []struct {
		name         string
		minAvailable string
		want         []string
	}{
		{"the quorum is the whole gang: all go", "3", []string{"v-0", "v-1", "v-2"}},
		{"the rest keep the quorum: one goes", "2", []string{"v-0"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			ev := newEvictions(h)
			var victims []*v1.Pod
			for i := range 3 {
				node := fmt.Sprintf("n%d", i)
				h.addNode(node, "1")
				p := running(fmt.Sprintf("v-%d", i), node, 10, "1", 10-i).Group("v").MinAvailable(tt.minAvailable).Obj()
				victims = append(victims, p)
				h.addPod(p)
			}
			pre := st.MakePod().Name("pre").Priority(100).Req(res{v1.ResourceCPU: "1"}).Obj()
			h.addPod(pre)
			h.cycle()
			if got := ev.evicted(); !slices.Equal(got, tt.want) {
				t.Fatalf("evicted %v, want %v", got, tt.want)
			}
			var gone []*v1.Pod
			for _, v := range victims {
				if slices.Contains(tt.want, v.Name) {
					gone = append(gone, v)
				}
			}
			ev.gone(gone...)
			h.cycle()
			if got := h.boundTo(); got["pre"] == "" {
				t.Errorf("pre not bound after its victims left: %v", got)
			}
		})
	}
}

// A single pod beats a gang member that would take its whole gang with it.
func TestPreemptionPrefersFewerVictimsOverAGang(t *testing.T) {
	h := newHarness(t)
	ev := newEvictions(h)
	for i := range 3 {
		node := fmt.Sprintf("n%d", i)
		h.addNode(node, "1")
		// The gang's pods started last, so by start time alone one of
		// them would go.
		h.addPod(running(fmt.Sprintf("g-%d", i), node, 10, "1", 100).Group("g").MinAvailable("3").Obj())
	}
	h.addNode("n3", "1")
	h.addPod(running("single", "n3", 10, "1", 0).Obj())
	h.addPod(st.MakePod().Name("pre").Priority(100).Req(res{v1.ResourceCPU: "1"}).Obj())
	h.cycle()
	if got := ev.evicted(); !slices.Equal(got, []string{"single"}) {
		t.Errorf("evicted %v, want [single]", got)
	}
}

// A gang that cannot fit even after preempting everything it may
// preempts nothing; so does a job that must not preempt.
func TestPreemptionThatCannotHelpEvictsNothing(t *testing.T) {
	never := v1.PreemptNever
	tests := []struct {
		name string
		pods []*v1.Pod
		// wantUnhelpful is whether a preemption was tried and found
		// unhelpful (not tried at all otherwise).
		wantUnhelpful bool
		wantMessage   string
	}{
		{
			// 3.6 CPUs of the 4, but one pod per node of 2 CPUs.
			name:          "gang of 3 on room for 2",
			pods:          gangPods("big", 3, "3", 100, "1200m"),
			wantUnhelpful: true,
			wantMessage:   "0 of 3 tasks could be placed, min-available 3",
		},
		{
			// 6 CPUs of the 4 there are, with every other pod gone.
			name:        "gang larger than all the capacity: not tried",
			pods:        gangPods("huge", 3, "3", 100, "2"),
			wantMessage: "gang default/huge can never start: its quorum (min-available 3) needs cpu 6 but this scheduler could use cpu 4 with every other pod gone",
		},
		{
			name: "preemptionPolicy Never",
			pods: func() []*v1.Pod {
				pods := gangPods("polite", 2, "2", 100, "1")
				pods[1].Spec.PreemptionPolicy = &never
				return pods
			}(),
		},
		{
			name: "higher priority pods are no victims",
			pods: []*v1.Pod{st.MakePod().Name("equal").Priority(10).Req(res{v1.ResourceCPU: "1"}).Obj()},
			// Every pod running has priority 10: none is a candidate.
			wantUnhelpful: true,
			wantMessage:   "0/2 nodes are available: 2 Insufficient cpu.",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			ev := newEvictions(h)
			for _, n := range []string{"n1", "n2"} {
				h.addNode(n, "2")
				h.addPod(running("low-"+n, n, 10, "2", 0).Obj())
			}
			for _, p := range tt.pods {
				h.addPod(p)
			}
			h.cycle()
			if got := ev.attempted(); len(got) != 0 {
				t.Errorf("evictions asked %v, want none", got)
			}
			if got := h.preemptionAttempts(preemption.ResultUnhelpful); (got == 1) != tt.wantUnhelpful {
				t.Errorf("PreemptionAttempts{unhelpful} = %v, want it tried and unhelpful: %v", got, tt.wantUnhelpful)
			}
			if got := h.preemptionAttempts(preemption.ResultPreempted); got != 0 {
				t.Errorf("PreemptionAttempts{preempted} = %v, want 0", got)
			}
			for _, p := range tt.pods {
				got := h.apiPod(p)
				if got.Status.NominatedNodeName != "" {
					t.Errorf("%s nominated to %s", p.Name, got.Status.NominatedNodeName)
				}
				if c := podScheduledCondition(got); c == nil || !strings.Contains(c.Message, tt.wantMessage) || strings.Contains(c.Message, "preemption") {
					t.Errorf("%s condition %+v, want a message containing %q and not mentioning preemption", p.Name, c, tt.wantMessage)
				}
			}
			// The snapshot was restored: the victims are back on it.
			for _, n := range []string{"n1", "n2"} {
				if ni, _ := h.sched.snapshot.Get(n); ni == nil || ni.Requested.MilliCPU != 2000 {
					t.Errorf("snapshot node %s not restored: %+v", n, ni)
				}
			}
		})
	}
}

// PDB-protected pods are avoided when another choice exists; when none
// does, the refused eviction is a failure, not a success.
func TestPreemptionPodDisruptionBudgets(t *testing.T) {
	t.Run("avoided when another choice exists", func(t *testing.T) {
		// The protected pod is the cheaper victim by every other measure.
		h := newHarnessWith(t, harnessConfig{opts: withPDBs(t, pdb("protect", 0, map[string]string{"app": "db"}))})
		ev := newEvictions(h)
		h.addNode("n1", "1")
		h.addNode("n2", "1")
		h.addPod(running("db", "n1", 5, "1", 10).Label("app", "db").Obj())
		h.addPod(running("web", "n2", 10, "1", 0).Label("app", "web").Obj())
		h.addPod(st.MakePod().Name("pre").Priority(100).Req(res{v1.ResourceCPU: "1"}).Obj())
		h.cycle()
		if got := ev.evicted(); !slices.Equal(got, []string{"web"}) {
			t.Errorf("evicted %v, want [web]", got)
		}
	})
	t.Run("a refusal fails the preemption", func(t *testing.T) {
		h := newHarnessWith(t, harnessConfig{opts: withPDBs(t, pdb("protect", 0, map[string]string{"app": "db"}))})
		ev := newEvictions(h, "db-0")
		h.addNode("n1", "2")
		h.addPod(running("db-0", "n1", 5, "1", 0).Label("app", "db").Obj())
		h.addPod(running("db-1", "n1", 5, "1", 0).Label("app", "db").Obj())
		pre := st.MakePod().Name("pre").Priority(100).Req(res{v1.ResourceCPU: "2"}).Obj()
		h.addPod(pre)
		h.cycle()
		if got := ev.attempted(); len(got) != 1 || got[0] != "db-0" {
			t.Errorf("evictions asked %v, want only the first, refused, one", got)
		}
		if got := h.preemptionAttempts(preemption.ResultFailed); got != 1 {
			t.Errorf("PreemptionAttempts{failed} = %v, want 1", got)
		}
		if got := metricstest.CounterValue(t, h.metrics.PreemptionVictims.WithLabelValues("DefaultPreemption")); got != 0 {
			t.Errorf("PreemptionVictims = %v, want 0", got)
		}
		if got := eventsWith(h.events(), "Warning FailedPreemption "); len(got) != 1 {
			t.Errorf("FailedPreemption events %q, want 1", got)
		}
		if got := h.apiPod(pre).Status.NominatedNodeName; got != "" {
			t.Errorf("nominated node %q after a failed preemption, want none", got)
		}
		// Neither the refused victim nor the one never evicted is going:
		// no other preemption may take their room.
		if got := h.sched.nominated.GoingVictims(h.sched.snapshot.Get); len(got) != 0 {
			t.Errorf("%d victims still going after the refusal, want none", len(got))
		}
		if h.sched.nominated.Has(dialects.Resolver().JobID(pre)) {
			t.Errorf("the failed preemption's nomination is kept")
		}
	})
}

// The room preemption makes is held for the preemptor against jobs of
// lower priority, and not against jobs of higher priority.
func TestPreemptionHoldsNominatedRoom(t *testing.T) {
	tests := []struct {
		name     string
		priority int32
		wantLow  bool
	}{
		{"lower priority waits", 50, false},
		{"higher priority takes it", 150, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			ev := newEvictions(h)
			h.addNode("n1", "1")
			victim := running("victim", "n1", 10, "1", 0).Obj()
			h.addPod(victim)
			pre := st.MakePod().Name("pre").Priority(100).Req(res{v1.ResourceCPU: "1"}).Obj()
			h.addPod(pre)
			h.cycle()
			if got := ev.evicted(); !slices.Equal(got, []string{"victim"}) {
				t.Fatalf("evicted %v, want [victim]", got)
			}
			if n := h.sched.nominated.NodeOf(pre.UID); n != "n1" {
				t.Fatalf("pre nominated to %q, want n1", n)
			}
			// The victim is gone, but pre stays parked: the other pod is
			// tried alone.
			if _, err := h.cache.DeletePod(victim); err != nil {
				t.Fatal(err)
			}
			other := st.MakePod().Name("other").Priority(tt.priority).Req(res{v1.ResourceCPU: "1"}).Obj()
			h.addPod(other)
			h.cycle()
			if got := h.boundTo()["other"] != ""; got != tt.wantLow {
				t.Fatalf("other bound: %v, want %v", got, tt.wantLow)
			}
			if tt.wantLow {
				return
			}
			h.requeueAll()
			h.cycle()
			if got := h.boundTo(); got["pre"] != "n1" {
				t.Errorf("bound %v, want pre on n1", got)
			}
			if h.sched.nominated.Has(dialects.Resolver().JobID(pre)) {
				t.Errorf("pre's nomination outlived its placement")
			}
		})
	}
}

// The simulation runs the per-pod PreFilter plugins with the victims off
// their nodes, as a cycle would see the cluster after the evictions: a
// plugin that looks across nodes (here: no pod labelled blocker anywhere,
// like anti-affinity) lets the pod in once the blocker is a victim.
func TestPreemptionRunsPodPreFilterWithoutTheVictims(t *testing.T) {
	hook := &hookPlugin{preFilterPod: func(pod *v1.Pod, nodes []*framework.NodeInfo) *framework.Status {
		if pod.Name != "pre" {
			return nil
		}
		for _, n := range nodes {
			for _, task := range n.Pods {
				if task.GetLabels()["role"] == "blocker" {
					return framework.NewStatus(framework.Unschedulable, "a blocker runs")
				}
			}
		}
		return nil
	}}
	h := newHarnessWith(t, harnessConfig{hook: hook})
	ev := newEvictions(h)
	h.addNode("n1", "4")
	h.addNode("n2", "4")
	blocker := running("blocker", "n1", 10, "1", 0).Label("role", "blocker").Obj()
	h.addPod(blocker)
	h.addPod(running("bystander", "n2", 10, "1", 0).Obj())
	pre := st.MakePod().Name("pre").Priority(100).Req(res{v1.ResourceCPU: "1"}).Obj()
	h.addPod(pre)
	h.cycle()
	if got := ev.evicted(); !slices.Equal(got, []string{"blocker"}) {
		t.Fatalf("evicted %v, want [blocker]", got)
	}
	if got := h.apiPod(pre).Status.NominatedNodeName; got != "n1" {
		t.Errorf("pre nominated to %q, want n1", got)
	}
	ev.gone(blocker)
	// The hook registers no pod event; a real cross-node plugin would.
	h.requeueAll()
	h.cycle()
	if got := h.boundTo()["pre"]; got != "n1" {
		t.Errorf("pre bound to %q, want n1 (its nominated node)", got)
	}
}

// A gang the cycle's scoring places badly (its small pod takes the room
// the big one needs) but that fits placed another way evicts nothing: its
// pods are nominated to that placement, which the next cycle follows.
func TestPreemptionNominatesAPlacementThatNeedsNoVictims(t *testing.T) {
	h := newHarness(t)
	ev := newEvictions(h)
	// a-node has 2 cpus free of 8, b-node 4 of 4; least-allocated scoring
	// sends the small pod to b-node, where the big one then does not fit.
	h.addNode("a-node", "8")
	h.addPod(running("busy", "a-node", 1000, "6", 0).Obj())
	h.addNode("b-node", "4")
	// A lower-priority pod elsewhere makes preemption worth trying.
	h.addNode("c-node", "1")
	h.addPod(running("low", "c-node", 10, "1", 0).Obj())
	small := st.MakePod().Name("g-a").Group("g").MinAvailable("2").Priority(100).Req(res{v1.ResourceCPU: "1"}).Obj()
	big := st.MakePod().Name("g-b").Group("g").MinAvailable("2").Priority(100).Req(res{v1.ResourceCPU: "4"}).Obj()
	h.addPod(small)
	h.addPod(big)
	h.cycle()
	if len(h.bindings()) != 0 {
		t.Fatalf("bound %v in the first cycle; the test needs scoring to misplace the gang", h.boundTo())
	}
	if got := ev.attempted(); len(got) != 0 {
		t.Errorf("evictions asked %v, want none", got)
	}
	if a, b := h.sched.nominated.NodeOf(small.UID), h.sched.nominated.NodeOf(big.UID); a != "a-node" || b != "b-node" {
		t.Errorf("nominated g-a to %q and g-b to %q, want a-node and b-node", a, b)
	}
	h.requeueAll()
	h.cycle()
	if got := h.boundTo(); got["g-a"] != "a-node" || got["g-b"] != "b-node" {
		t.Errorf("bound %v, want g-a on a-node and g-b on b-node", got)
	}
}

// A pod whose status names a nominated node (from before a restart) goes
// there when it passes the filters, whatever the scores say.
func TestPlacementFollowsStatusNominatedNodeName(t *testing.T) {
	h := newHarness(t)
	h.addNode("n1", "4")
	h.addNode("n2", "4")
	h.addPod(running("busy", "n1", 0, "3", 0).Obj())
	pod := st.MakePod().Name("p").Req(res{v1.ResourceCPU: "1"}).Obj()
	pod.Status.NominatedNodeName = "n1"
	h.addPod(pod)
	h.cycle()
	if got := h.boundTo()["p"]; got != "n1" {
		t.Errorf("p bound to %q, want n1, its nominated node (least-allocated scoring prefers n2)", got)
	}
}

// When a preemptor gives its room up, the jobs the room kept out are
// retried, and its pods' nominatedNodeName is cleared.
func TestPreemptionGivingUpReleasesTheRoom(t *testing.T) {
	h := newHarness(t)
	ev := newEvictions(h)
	h.addNode("n1", "1")
	victim := running("victim", "n1", 10, "1", 0).Obj()
	h.addPod(victim)
	pre := st.MakePod().Name("pre").Priority(100).Req(res{v1.ResourceCPU: "1"}).Obj()
	h.addPod(pre)
	h.cycle()
	if got := ev.evicted(); !slices.Equal(got, []string{"victim"}) {
		t.Fatalf("evicted %v, want [victim]", got)
	}
	if _, err := h.cache.DeletePod(victim); err != nil {
		t.Fatal(err)
	}
	low := st.MakePod().Name("low").Priority(50).Req(res{v1.ResourceCPU: "1"}).Obj()
	h.addPod(low)
	h.cycle()
	if got := h.cache.Queue().Lengths(); got.Unschedulable != 2 || got.Active != 0 {
		t.Fatalf("queue %+v, want pre and low parked (low kept out by the held room)", got)
	}
	h.sched.preemption.GiveUp(t.Context(), dialects.Resolver().JobID(pre))
	h.sched.bindWG.Wait()
	if got := h.cache.Queue().Lengths(); got.Active != 2 {
		t.Errorf("queue %+v after giving the room up, want both jobs active again", got)
	}
	if h.sched.nominated.Has(dialects.Resolver().JobID(pre)) {
		t.Errorf("pre keeps its nomination")
	}
	if got := h.apiPod(pre).Status.NominatedNodeName; got != "" {
		t.Errorf("pre's nominatedNodeName = %q, want it cleared", got)
	}
}

// barrierClient holds each eviction call until want calls are in flight
// at once, or until a second has passed.
type barrierClient struct {
	kubernetes.Interface
	b *barrier
}

type barrier struct {
	mu       sync.Mutex
	want     int
	arrived  int
	released chan struct{}
	// timedOut counts the calls that gave up waiting for the others.
	timedOut int
}

func (b *barrier) arrive() {
	b.mu.Lock()
	b.arrived++
	if b.arrived == b.want {
		close(b.released)
	}
	b.mu.Unlock()
	select {
	case <-b.released:
	case <-time.After(time.Second):
		b.mu.Lock()
		b.timedOut++
		b.mu.Unlock()
	}
}

func (c barrierClient) PolicyV1() policyv1client.PolicyV1Interface {
	return barrierPolicy{c.Interface.PolicyV1(), c.b}
}

type barrierPolicy struct {
	policyv1client.PolicyV1Interface
	b *barrier
}

func (p barrierPolicy) Evictions(ns string) policyv1client.EvictionInterface {
	return barrierEvictions{p.PolicyV1Interface.Evictions(ns), p.b}
}

type barrierEvictions struct {
	policyv1client.EvictionInterface
	b *barrier
}

func (e barrierEvictions) Evict(ctx context.Context, ev *policyv1.Eviction) error {
	e.b.arrive()
	return e.EvictionInterface.Evict(ctx, ev)
}

// The victims no PDB protects are evicted at once, not one after the
// other: a victim gang is below its quorum only as long as one call takes.
func TestPreemptionEvictsAVictimGangAtOnce(t *testing.T) {
	b := &barrier{want: 3, released: make(chan struct{})}
	h := newHarnessWith(t, harnessConfig{opts: func(o *Options) { o.Client = barrierClient{o.Client, b} }})
	ev := newEvictions(h)
	for i := range 3 {
		node := fmt.Sprintf("n%d", i)
		h.addNode(node, "1")
		h.addPod(running(fmt.Sprintf("v-%d", i), node, 10, "1", i).Group("v").MinAvailable("3").Obj())
	}
	h.addPod(st.MakePod().Name("pre").Priority(100).Req(res{v1.ResourceCPU: "1"}).Obj())
	h.cycle()
	h.sched.bindWG.Wait()
	if got, want := ev.evicted(), []string{"v-0", "v-1", "v-2"}; !slices.Equal(got, want) {
		t.Fatalf("evicted %v, want %v", got, want)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.timedOut != 0 {
		t.Errorf("%d of 3 eviction calls waited a second for the others: the evictions ran one after the other", b.timedOut)
	}
}

// A gang waiting for its victims to go is retried at the initial backoff
// however often it was tried: those retries are not failures.
func TestPreemptorWaitsAtInitialBackoff(t *testing.T) {
	const initial = time.Hour
	clk := clocktesting.NewFakeClock(time.Now())
	h := newHarnessWith(t, harnessConfig{queue: &schedulingqueue.Options{InitialBackoff: initial, MaxBackoff: 100 * time.Hour, Clock: clk}})
	ev := newEvictions(h)
	h.addNode("n1", "2")
	h.addPod(running("low-a", "n1", 10, "1", 1).Obj())
	h.addPod(running("low-b", "n1", 10, "1", 2).Obj())
	for _, p := range gangPods("high", 2, "2", 100, "1") {
		h.addPod(p)
	}
	h.cycle()
	if got := ev.evicted(); len(got) != 2 {
		t.Fatalf("evicted %v, want both low pods", got)
	}
	for range 3 {
		// Past any backoff: an event moves the job to the active queue.
		clk.Step(1000 * time.Hour)
		h.requeueAll()
		h.cycle()
	}
	d := h.cache.Queue().Dump()
	var job *schedulingqueue.JobDump
	for _, j := range append(append(d.Unschedulable, d.Backoff...), d.Active...) {
		if j.ID == "default/high" {
			job = &j
		}
	}
	if job == nil || job.BackoffExpiry == nil {
		t.Fatalf("queue %+v lacks the gang with a backoff", d)
	}
	if job.Attempts != 4 {
		t.Errorf("%d attempts, want 4", job.Attempts)
	}
	if got := job.BackoffExpiry.Sub(job.Timestamp); got != initial {
		t.Errorf("backoff %v after %d attempts, want the initial %v", got, job.Attempts, initial)
	}
}
