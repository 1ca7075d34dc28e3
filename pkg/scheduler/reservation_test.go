package scheduler

import (
	"fmt"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
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

// Without a reservation (the default profile), the same room goes to the
// first pod that fits, whatever its runtime: the control for the test
// above.
func TestWithoutReservationFreedRoomGoesToTheNextPod(t *testing.T) {
	h := newHarness(t)
	for _, n := range []string{"n1", "n2"} {
		h.addNode(n, "2")
	}
	n1 := runningFor("n1-a", "n1", "2", time.Minute, "1h")
	n2a, n2b := runningFor("n2-a", "n2", "1", time.Minute, "2m"), runningFor("n2-b", "n2", "1", time.Minute, "2m")
	for _, p := range []*v1.Pod{n1, n2a, n2b} {
		h.addPod(p)
	}
	gang := gangPods("big", 1, "1", 0, "2")
	h.addPod(gang[0])
	h.cycle()
	h.cache.DeletePod(n2a)
	long := st.MakePod().Name("long").Req(res{v1.ResourceCPU: "1"}).Obj()
	h.addPod(long)
	h.cycle()
	if got := h.boundTo(); got["long"] != "n2" {
		t.Fatalf("long bound to %q, want n2: nothing is reserved by default", got["long"])
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
