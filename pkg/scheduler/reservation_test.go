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
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
	"github.com/batch-scheduler/batch-scheduler/pkg/metrics/metricstest"
	"github.com/batch-scheduler/batch-scheduler/pkg/plugins/capacity"
	"github.com/batch-scheduler/batch-scheduler/pkg/tenancy"
	st "github.com/batch-scheduler/batch-scheduler/pkg/testing"
)

// reservationPostFilter is the PostFilter order that turns reservations
// on: reserve first, evict only when waiting is not enough.
var reservationPostFilter = []string{capacity.ReservationName, capacity.ReclaimName, "DefaultPreemption"}

// runningFor returns a pod bound to node requesting cpu that started
// started ago and is expected to run runtime in all ("" for no estimate).
func runningFor(name, node, cpu string, started time.Duration, runtime string) *v1.Pod {
	w := st.MakePod().Name(name).Node(node).Phase(v1.PodRunning).Req(res{v1.ResourceCPU: cpu})
	if runtime != "" {
		w = w.Annotation(framework.ExpectedRuntimeAnnotation, runtime)
	}
	pod := w.Obj()
	start := metav1.NewTime(time.Now().Add(-started))
	pod.CreationTimestamp, pod.Status.StartTime = start, &start
	return pod
}

// A gang that waits for room reserves the nodes whose pods end soonest;
// the room that frees there is not given to a job that would outlast the
// reservation, but is to one that ends before it (backfill); the gang
// lands there once the pods it waited for are gone.
func TestReservationHoldsRoomAndLetsShortJobsBackfill(t *testing.T) {
	h := newHarnessWith(t, harnessConfig{postFilter: reservationPostFilter})
	for _, n := range []string{"n1", "n2", "n3", "n4"} {
		h.addNode(n, "2")
	}
	// n2 and n3 free up within 2 minutes, n1 in an hour; n4's pods say
	// nothing of their runtime.
	n1a, n1b := runningFor("n1-a", "n1", "1", time.Minute, "1h"), runningFor("n1-b", "n1", "1", time.Minute, "1h")
	n2a, n2b := runningFor("n2-a", "n2", "1", time.Minute, "2m"), runningFor("n2-b", "n2", "1", time.Minute, "2m")
	n3a, n3b := runningFor("n3-a", "n3", "1", time.Minute, "3m"), runningFor("n3-b", "n3", "1", time.Minute, "3m")
	n4a, n4b := runningFor("n4-a", "n4", "1", time.Minute, ""), runningFor("n4-b", "n4", "1", time.Minute, "")
	for _, p := range []*v1.Pod{n1a, n1b, n2a, n2b, n3a, n3b, n4a, n4b} {
		h.addPod(p)
	}
	gang := gangPods("big", 2, "2", 0, "2")
	for _, p := range gang {
		h.addPod(p)
	}

	h.cycle()
	if got := h.boundTo(); len(got) != 0 {
		t.Fatalf("bound %v on a full cluster", got)
	}
	cond := podScheduledCondition(h.apiPod(gang[0]))
	if cond == nil || !strings.Contains(cond.Message, "reservation: room held on n2, n3 until 4 running pods end; expected to start in") {
		t.Fatalf("gang's condition %+v, want the reservation of n2 and n3 (their pods end first) with a start estimate", cond)
	}

	// n2-a ends: its CPU is reserved. A pod that gives no runtime may
	// not take it...
	h.cache.DeletePod(n2a)
	long := st.MakePod().Name("long").Req(res{v1.ResourceCPU: "1"}).Obj()
	h.addPod(long)
	h.cycle()
	if got := h.boundTo(); got["long"] != "" {
		t.Fatalf("long, which gives no runtime, bound to %s: the reservation gave its room away", got["long"])
	}
	// ...nor one expected to outlast the reservation (n3's pods end in
	// 2 minutes)...
	late := st.MakePod().Name("late").Req(res{v1.ResourceCPU: "1"}).Annotation(framework.ExpectedRuntimeAnnotation, "10m").Obj()
	h.addPod(late)
	h.cycle()
	if got := h.boundTo(); got["late"] != "" {
		t.Fatalf("late (10m) bound to %s before a reservation that starts in 2m", got["late"])
	}
	// ...but one that ends well before it backfills.
	short := st.MakePod().Name("short").Req(res{v1.ResourceCPU: "1"}).Annotation(framework.ExpectedRuntimeAnnotation, "30s").Obj()
	h.addPod(short)
	h.cycle()
	if got := h.boundTo(); got["short"] != "n2" {
		t.Fatalf("short (30s) bound to %q, want n2, the reserved room it ends before", got["short"])
	}
	// Its binding says whose room it took and until when.
	held := h.sched.nominated.Reservations()
	if len(held) != 1 {
		t.Fatalf("reservations held: %v, want the gang's", held)
	}
	var bigID framework.JobID
	var r framework.Reservation
	for bigID, r = range held {
	}
	for _, b := range h.bindings() {
		into, deadline := b.Annotations[framework.BackfilledIntoAnnotation], b.Annotations[framework.BackfillDeadlineAnnotation]
		switch b.Name {
		case "short":
			if into != bigID.String() || deadline != r.Start.UTC().Format(time.RFC3339Nano) {
				t.Errorf("short's binding says it backfilled into %q until %q, want %s until %s (the reservation's start)", into, deadline, bigID, r.Start.UTC().Format(time.RFC3339Nano))
			}
		default:
			if into != "" || deadline != "" {
				t.Errorf("%s's binding says it backfilled into %q until %q: it took no reserved room", b.Name, into, deadline)
			}
		}
	}

	// Everything the gang waits for ends, the backfilled pod too: the
	// gang lands on its reserved nodes, ahead of the pods waiting.
	for _, p := range []*v1.Pod{n2b, n3a, n3b} {
		h.cache.DeletePod(p)
	}
	h.cache.DeletePod(h.apiPod(short))
	h.requeueAll()
	for range 3 {
		if h.cache.Queue().Lengths().Active == 0 {
			break
		}
		h.cycle()
	}
	got := h.boundTo()
	if got[gang[0].Name] == "" || got[gang[1].Name] == "" {
		t.Fatalf("gang not bound after its reserved room freed: %v", got)
	}
	for _, p := range gang {
		if n := got[p.Name]; n != "n2" && n != "n3" {
			t.Errorf("%s bound to %s, want a reserved node (n2, n3)", p.Name, n)
		}
	}
	if got["long"] == "n2" || got["long"] == "n3" || got["late"] == "n2" || got["late"] == "n3" {
		t.Errorf("a pod that waited took the reserved room: %v", got)
	}
}

// The room a pod frees goes to a gang that waits for it with the default
// profile (Reservation first among the PostFilter plugins), and to the
// next pod that fits, whatever its runtime, with Reservation left out:
// the control for the test above.
func TestFreedRoomWithAndWithoutReservation(t *testing.T) {
	for _, tc := range []struct {
		name       string
		postFilter []string
		wantLong   string // where the pod that gives no runtime binds
	}{
		{name: "default profile", wantLong: ""},
		{name: "Reservation left out", postFilter: []string{capacity.ReclaimName, "DefaultPreemption"}, wantLong: "n2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarnessWith(t, harnessConfig{postFilter: tc.postFilter})
			for _, n := range []string{"n1", "n2"} {
				h.addNode(n, "2")
			}
			n1 := runningFor("n1-a", "n1", "2", time.Minute, "1h")
			n2a, n2b := runningFor("n2-a", "n2", "1", time.Minute, "2m"), runningFor("n2-b", "n2", "1", time.Minute, "2m")
			for _, p := range []*v1.Pod{n1, n2a, n2b} {
				h.addPod(p)
			}
			for _, p := range gangPods("big", 2, "2", 0, "1") {
				h.addPod(p)
			}
			h.cycle()
			h.cache.DeletePod(n2a)
			long := st.MakePod().Name("long").Req(res{v1.ResourceCPU: "1"}).Obj()
			h.addPod(long)
			h.cycle()
			if got := h.boundTo(); got["long"] != tc.wantLong {
				t.Fatalf("long bound to %q, want %q", got["long"], tc.wantLong)
			}
		})
	}
}

// A job of higher priority that may preempt is left to preemption: the
// reservation steps aside, so priority keeps its meaning.
func TestReservationDefersToPreemptionByPriority(t *testing.T) {
	h := newHarnessWith(t, harnessConfig{postFilter: reservationPostFilter})
	ev := newEvictions(h)
	h.addNode("n1", "2")
	low := running("low", "n1", 10, "2", 0).Obj()
	h.addPod(low)
	pre := st.MakePod().Name("pre").Priority(100).Req(res{v1.ResourceCPU: "2"}).Obj()
	h.addPod(pre)
	h.cycle()
	if got := ev.evicted(); len(got) != 1 || got[0] != "low" {
		t.Fatalf("evicted %v, want low: preemption by priority first", got)
	}
	if _, ok := h.sched.nominated.Reservation(framework.JobID{Namespace: "default", Name: "pre"}); ok {
		t.Errorf("pre holds a reservation; want its nomination by preemption only")
	}
}

// With queues: a gang of a queue busy with its own singles reserves (the
// room they free is its own queue's), and the singles that follow, of the
// same queue, do not take it.
func TestReservationWithinItsQueue(t *testing.T) {
	h := newHarnessWith(t, harnessConfig{postFilter: reservationPostFilter})
	h.cache.SetTenantQueue(tenancy.SourceOwn, "q", &framework.QueueSpec{Name: "q", Weight: 1, Borrow: true, Lend: true, Reclaimable: true, Source: "Queue q"})
	inQ := func(p *v1.Pod) *v1.Pod {
		if p.Labels == nil {
			p.Labels = map[string]string{}
		}
		p.Labels[framework.QueueLabel] = "q"
		return p
	}
	var singles []*v1.Pod
	for i := range 4 {
		node := fmt.Sprintf("n%d", i)
		h.addNode(node, "1")
		p := inQ(runningFor(fmt.Sprintf("s-%d", i), node, "1", time.Duration(i)*time.Second, ""))
		singles = append(singles, p)
		h.addPod(p)
	}
	gang := gangPods("big", 4, "4", 0, "1")
	for _, p := range gang {
		h.addPod(inQ(p))
	}
	h.cycle()
	cond := podScheduledCondition(h.apiPod(gang[0]))
	if cond == nil || !strings.Contains(cond.Message, "reservation: room held on n0, n1, n2 and 1 more until 4 running pods end") {
		t.Fatalf("gang's condition %+v, want a reservation of the 4 nodes", cond)
	}
	h.cache.DeletePod(singles[0])
	next := inQ(st.MakePod().Name("next").Req(res{v1.ResourceCPU: "1"}).Obj())
	h.addPod(next)
	h.cycle()
	if got := h.boundTo(); got["next"] != "" {
		t.Fatalf("next single bound to %s: it took the gang's reserved room", got["next"])
	}
}

// Gangs with placement rules reserve within them: a gang that must share
// a rack reserves the rack where it fits soonest, not the nodes that free
// soonest across racks; an elastic gang reserves for its quorum, not for
// every pod it could run.
func TestReservationOfTopologyAndElasticGangs(t *testing.T) {
	t.Run("required rack", func(t *testing.T) {
		h := newHarness(t)
		h.addRack("b1", "rack-a", 4, "1")
		h.addRack("b1", "rack-b", 4, "1")
		// rack-a: three nodes free in 10 s, one in an hour; rack-b: all
		// four in a minute. Across racks, the soonest four would be
		// rack-a's three and one of rack-b.
		for i, runtime := range []string{"70s", "70s", "70s", "1h"} {
			h.addPod(runningFor(fmt.Sprintf("a%d", i), fmt.Sprintf("rack-a-%d", i), "1", time.Minute, runtime))
		}
		for i := range 4 {
			h.addPod(runningFor(fmt.Sprintf("b%d", i), fmt.Sprintf("rack-b-%d", i), "1", time.Minute, "2m"))
		}
		pods := h.addTopologyGang("train", 4, "1", framework.TopologyRequiredAnnotation, rackKey)
		h.cycle()
		cond := podScheduledCondition(h.apiPod(pods[0]))
		if cond == nil || !strings.Contains(cond.Message, "reservation: room held on rack-b-0, rack-b-1, rack-b-2 and 1 more until 4 running pods end; expected to start in 1m0s") {
			t.Fatalf("gang's condition %+v, want rack-b reserved whole (the gang must share a rack)", cond)
		}
	})
	t.Run("elastic", func(t *testing.T) {
		h := newHarness(t)
		for _, n := range []string{"n1", "n2", "n3", "n4"} {
			h.addNode(n, "1")
		}
		for i, runtime := range []string{"2m", "2m", "1h", "1h"} {
			h.addPod(runningFor(fmt.Sprintf("r%d", i), fmt.Sprintf("n%d", i+1), "1", time.Minute, runtime))
		}
		pods := gangPods("elastic", 4, "2", 0, "1")
		for _, p := range pods {
			h.addPod(p)
		}
		h.cycle()
		cond := podScheduledCondition(h.apiPod(pods[0]))
		if cond == nil || !strings.Contains(cond.Message, "reservation: room held on n1, n2 until 2 running pods end; expected to start in") {
			t.Fatalf("gang's condition %+v, want n1 and n2 reserved for its quorum of 2", cond)
		}
	})
}

// A single pod of a queue owed room waits for it rather than have Reclaim
// evict, when the pods in the way say they end within reclaimAfter; when
// nothing says when they end, Reclaim evicts at once, as without
// reservations.
func TestSinglePodWaitsRatherThanReclaimWhenRoomFreesSoon(t *testing.T) {
	for _, tc := range []struct {
		name        string
		runtime     string // of queue b's running pods; "" for none
		wantEvicted int
	}{
		{name: "b's pods end in a minute", runtime: "2m", wantEvicted: 0},
		{name: "b's pods say nothing", runtime: "", wantEvicted: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			ev := newEvictions(h)
			in := twoQueues(h)
			for i := range 4 {
				node := fmt.Sprintf("n%d", i)
				h.addNode(node, "1")
				h.addPod(in("b", runningFor(fmt.Sprintf("b-%d", i), node, "1", time.Minute, tc.runtime)))
			}
			single := in("a", st.MakePod().Name("a-0").Req(res{v1.ResourceCPU: "1"}).Obj())
			h.addPod(single)
			h.cycle()
			if got := ev.evicted(); len(got) != tc.wantEvicted {
				t.Fatalf("evicted %v, want %d pods of b", got, tc.wantEvicted)
			}
			if tc.wantEvicted == 0 {
				cond := podScheduledCondition(h.apiPod(single))
				if cond == nil || !strings.Contains(cond.Message, "waiting for 1 running pods to end rather than evicting: expected to start in 1m0s") {
					t.Errorf("a-0's condition %+v, want the wait said", cond)
				}
			}
		})
	}
}

// A gang whose reclaim's victims are still terminating does not reserve
// again: a reservation would replace the nominations that name the
// victims, and Reclaim, after it, would evict as many again. The retries
// here run whole, as they do once the scheduler has waited victimWait
// for the victims (awaitVictims; TestGangWaitsForItsVictimsUnplaced).
func TestReservationKeepsReclaimWaitingForItsVictims(t *testing.T) {
	h := newHarness(t)
	h.sched.victimWait = 0
	ev := newEvictions(h)
	in := twoQueues(h)
	for i := range 6 {
		node := fmt.Sprintf("n%d", i)
		h.addNode(node, "1")
		h.addPod(in("b", runningFor(fmt.Sprintf("b-%d", i), node, "1", time.Minute, "")))
	}
	gang := gangPods("a", 2, "2", 0, "1")
	for _, p := range gang {
		h.addPod(in("a", p))
	}
	h.cycle()
	if got := ev.evicted(); len(got) != 2 {
		t.Fatalf("evicted %v, want 2 pods of b (nothing says when they end)", got)
	}
	// The victims are still in the cache (terminating): the next cycles
	// wait for them.
	for range 2 {
		h.requeueAll()
		h.cycle()
	}
	if got := ev.attempted(); len(got) != 2 {
		t.Errorf("evictions asked %v, want no more while the victims terminate", got)
	}
	if got := metricstest.CounterValue(t, h.metrics.PreemptionVictims.WithLabelValues(capacity.ReclaimName)); got != 2 {
		t.Errorf("PreemptionVictims{Reclaim} = %v, want 2: the victims are counted as the plugin's that evicted them", got)
	}
	cond := podScheduledCondition(h.apiPod(gang[0]))
	if cond == nil || !strings.Contains(cond.Message, "reclaim: waiting for 2 reclaimed pods to terminate") {
		t.Errorf("a-0's condition %+v, want the wait for the victims said", cond)
	}
}

// twoQueues sets up queues a and b of equal weight, both reclaimable,
// and returns what puts a pod in one of them.
func twoQueues(h *harness) func(q string, p *v1.Pod) *v1.Pod {
	for _, q := range []string{"a", "b"} {
		h.cache.SetTenantQueue(tenancy.SourceOwn, q, &framework.QueueSpec{Name: q, Weight: 1, Borrow: true, Lend: true, Reclaimable: true, Source: "Queue " + q})
	}
	return func(q string, p *v1.Pod) *v1.Pod {
		if p.Labels == nil {
			p.Labels = map[string]string{}
		}
		p.Labels[framework.QueueLabel] = q
		return p
	}
}

// A reservation's pods on a node count only beyond what the running pods
// it awaits there still use. Here queue b is back at its share after
// reclaim evicted a pod for queue a's pod, which is nominated to the
// room; b's gang then reserves, waiting for b's own pods, one of them on
// the victim's node. Counting both the reserved pod and the pod it
// awaits there would fill that node twice over and keep a's pod out of
// the room reclaim made for it, while b, at its share, could be
// reclaimed from no more: a's pod would never start.
func TestReservationDoesNotHoldTheRoomItAwaitsTwice(t *testing.T) {
	h := newHarnessWith(t, harnessConfig{postFilter: reservationPostFilter})
	in := twoQueues(h)
	h.addNode("n0", "2")
	h.addNode("n1", "2")
	// b-young is the pod reclaim takes (the one that started last); b-0
	// ends first of the rest, so b's gang waits for it on n0.
	young := in("b", runningFor("b-young", "n0", "1", time.Minute, ""))
	for _, p := range []*v1.Pod{young,
		in("b", runningFor("b-0", "n0", "1", 10*time.Minute, "1h")),
		in("b", runningFor("b-1", "n1", "1", 10*time.Minute, "")),
		in("b", runningFor("b-2", "n1", "1", 10*time.Minute, ""))} {
		h.addPod(p)
	}
	ev := newEvictions(h)
	a := in("a", st.MakePod().Name("a-0").Req(res{v1.ResourceCPU: "1"}).Obj())
	h.addPod(a)
	h.cycle()
	if got := ev.evicted(); !slices.Equal(got, []string{young.Name}) {
		t.Fatalf("evicted %v, want [%s]", got, young.Name)
	}
	if _, err := h.cache.DeletePod(young); err != nil {
		t.Fatal(err)
	}
	gang := gangPods("g", 2, "2", 0, "1")
	for _, p := range gang {
		h.addPod(in("b", p))
	}
	h.cycle()
	cond := podScheduledCondition(h.apiPod(gang[0]))
	if cond == nil || !strings.Contains(cond.Message, "reservation: room held on n0, n1 until 2 running pods end") {
		t.Fatalf("b's gang's condition %+v, want a reservation of n0 and n1", cond)
	}
	h.requeueAll()
	for range 2 {
		if h.cache.Queue().Lengths().Active == 0 {
			break
		}
		h.cycle()
	}
	if got := h.boundTo(); got[a.Name] != "n0" {
		t.Errorf("a-0 bound to %q, want n0, the room reclaim made for it (bound: %v)", got[a.Name], got)
	}
}

// A pod whose bind is in flight is waited for as a running one: a short
// pod that backfills a node of a reservation is still assumed (the
// informer has not reported it bound) when the gang's next cycle
// reserves again, and the reservation stays on that node, its start
// known, rather than moving to a node whose pods say nothing of their
// end and so giving the room it left behind to the next pod that fits.
func TestReservationWaitsForAPodBeingBound(t *testing.T) {
	h := newHarnessWith(t, harnessConfig{postFilter: reservationPostFilter})
	for _, n := range []string{"n1", "n2", "n3"} {
		h.addNode(n, "1")
	}
	h.addPod(runningFor("n1-a", "n1", "1", time.Minute, "2m"))
	h.addPod(runningFor("n2-a", "n2", "1", time.Minute, ""))
	// The gang's two pods do not fit yet: it reserves n3, free, and n1,
	// whose pod ends first.
	gang := gangPods("big", 2, "2", 0, "1")
	for _, p := range gang {
		h.addPod(p)
	}
	h.cycle()
	want := "reservation: room held on n1, n3 until 1 running pods end; expected to start in"
	if cond := podScheduledCondition(h.apiPod(gang[0])); cond == nil || !strings.Contains(cond.Message, want) {
		t.Fatalf("gang's condition %+v, want %q", cond, want)
	}
	// A 30 s pod backfills n3; the cache has it assumed until the
	// informer reports the bind, which this test never delivers.
	short := st.MakePod().Name("short").Req(res{v1.ResourceCPU: "1"}).Annotation(framework.ExpectedRuntimeAnnotation, "30s").Obj()
	h.addPod(short)
	h.cycle()
	if got := h.boundTo(); got["short"] != "n3" {
		t.Fatalf("short (30s) bound to %q, want n3, the reserved room it ends before", got["short"])
	}
	if _, status, _ := h.cache.TaskState(short.UID); status != framework.TaskAssumed {
		t.Fatalf("short is %s in the cache, want Assumed: the scene needs its bind in flight", status)
	}
	h.requeueAll()
	h.cycle()
	want = "reservation: room held on n1, n3 until 2 running pods end; expected to start in"
	if cond := podScheduledCondition(h.apiPod(gang[0])); cond == nil || !strings.Contains(cond.Message, want) {
		t.Fatalf("gang's condition after the backfill %+v, want %q: the reservation left the node its backfilled pod took", cond, want)
	}
}
