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

package schedulingqueue

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/batch-scheduler/batch-scheduler/pkg/dialects"
	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
	st "github.com/batch-scheduler/batch-scheduler/pkg/testing"
)

func newTestQueue(t *testing.T, less framework.LessFunc) (*SchedulingQueue, *testingclock.FakeClock) {
	t.Helper()
	fakeClock := testingclock.NewFakeClock(epoch)
	q, err := New(Options{Clock: fakeClock, Less: less})
	mustNoErr(t, "New", err)
	return q, fakeClock
}

// add adds pending pods to q as the cache would.
func add(q *SchedulingQueue, pods ...*v1.Pod) {
	for _, p := range pods {
		q.PodChanged(dialects.Resolver().JobID(p), p, true)
	}
}

// popAll pops every active job without blocking and returns their IDs.
func popAll(t *testing.T, q *SchedulingQueue) []string {
	t.Helper()
	var ids []string
	for q.Lengths().Active > 0 {
		qj, err := q.Pop(t.Context())
		mustNoErr(t, "Pop", err)
		ids = append(ids, qj.ID.String())
	}
	return ids
}

func mustPop(t *testing.T, q *SchedulingQueue, want string) *framework.QueuedJob {
	t.Helper()
	if q.Lengths().Active == 0 {
		t.Fatalf("Pop: active queue is empty, want %s", want)
	}
	qj, err := q.Pop(t.Context())
	mustNoErr(t, "Pop", err)
	if qj.ID.String() != want {
		t.Fatalf("Pop = %s, want %s", qj.ID, want)
	}
	return qj
}

func TestQueueOrder(t *testing.T) {
	type step struct {
		pod     *v1.Pod
		advance time.Duration // before adding the pod
	}
	tests := []struct {
		name  string
		steps []step
		less  framework.LessFunc
		want  []string
	}{
		{
			name: "FIFO within a priority",
			steps: []step{
				{st.MakePod().Name("a").Obj(), 0},
				{st.MakePod().Name("b").Obj(), time.Second},
				{st.MakePod().Name("c").Obj(), time.Second},
			},
			want: []string{"default/pod:a", "default/pod:b", "default/pod:c"},
		},
		{
			name: "highest priority first, nil counts as zero",
			steps: []step{
				{st.MakePod().Name("low").Priority(-5).Obj(), 0},
				{st.MakePod().Name("none").Obj(), time.Second},
				{st.MakePod().Name("high").Priority(100).Obj(), time.Second},
			},
			want: []string{"default/pod:high", "default/pod:none", "default/pod:low"},
		},
		{
			name: "a gang is one unit with the max priority of its pods",
			steps: []step{
				{st.MakePod().Name("solo").Priority(10).Obj(), 0},
				{st.MakePod().Name("g-0").Group("g").Priority(1).Obj(), time.Second},
				{st.MakePod().Name("g-1").Group("g").Priority(50).Obj(), time.Second},
				{st.MakePod().Name("g-2").Group("g").Obj(), time.Second},
			},
			want: []string{"default/g", "default/pod:solo"},
		},
		{
			name: "same time: tie broken by ID",
			steps: []step{
				{st.MakePod().Name("b").Obj(), 0},
				{st.MakePod().Name("a").Obj(), 0},
			},
			want: []string{"default/pod:a", "default/pod:b"},
		},
		{
			name: "pluggable order",
			less: func(a, b *framework.QueuedJob) bool { return len(a.Pods) > len(b.Pods) }, // biggest job first
			steps: []step{
				{st.MakePod().Name("solo").Priority(1000).Obj(), 0},
				{st.MakePod().Name("g-0").Group("g").Obj(), time.Second},
				{st.MakePod().Name("g-1").Group("g").Obj(), time.Second},
			},
			want: []string{"default/g", "default/pod:solo"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q, clk := newTestQueue(t, tt.less)
			for _, s := range tt.steps {
				clk.Step(s.advance)
				add(q, s.pod)
			}
			if got := popAll(t, q); strings.Join(got, " ") != strings.Join(tt.want, " ") {
				t.Errorf("pop order = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestQueuePriorityFollowsPods(t *testing.T) {
	q, _ := newTestQueue(t, nil)
	a := st.MakePod().Name("a").Group("g").Priority(1).Obj()
	b := st.MakePod().Name("b").Group("g").Priority(9).Obj()
	add(q, a, b)
	id := dialects.Resolver().JobID(a)
	if p := q.jobs[id].Priority; p != 9 {
		t.Fatalf("priority = %d, want 9", p)
	}
	q.PodRemoved(id, b.UID)
	if p := q.jobs[id].Priority; p != 1 {
		t.Errorf("priority after removing the top pod = %d, want 1", p)
	}
	a2 := st.MakePod().Name("a").Group("g").Priority(-3).Obj()
	q.PodChanged(id, a2, true)
	if p := q.jobs[id].Priority; p != -3 {
		t.Errorf("priority after lowering the only pod = %d, want -3", p)
	}
	q.PodRemoved(id, a.UID)
	if _, ok := q.jobs[id]; ok || q.Lengths() != (Lengths{}) {
		t.Errorf("job without pods still queued: %+v", q.Lengths())
	}
}

func TestBackoffDuration(t *testing.T) {
	q, _ := newTestQueue(t, nil)
	for attempts, want := range map[int]time.Duration{
		0: time.Second, 1: time.Second, 2: 2 * time.Second, 3: 4 * time.Second,
		4: 8 * time.Second, 5: 10 * time.Second, 50: 10 * time.Second,
	} {
		if got := q.backoffDuration(attempts); got != want {
			t.Errorf("backoffDuration(%d) = %v, want %v", attempts, got, want)
		}
	}
}

// A job that holds a reservation is not failing when it waits: however
// often it was tried, it backs off the initial second, where a job without
// one backs off more each time.
func TestReservedJobKeepsTheInitialBackoff(t *testing.T) {
	for _, reserved := range []bool{false, true} {
		q, clock := newTestQueue(t, nil)
		pod := st.MakePod().Name("g").Obj()
		add(q, pod)
		for range 5 {
			qj := mustPop(t, q, "default/pod:g")
			mustNoErr(t, "AddUnschedulable", q.AddUnschedulable(qj, Attempt{AnyEvent: true, Reserved: reserved}))
			q.MoveAllToActiveOrBackoffQueue(framework.EventAssignedPodDelete, nil, nil)
			clock.Step(10 * time.Second)
			q.flushBackoffCompleted()
		}
		qj := mustPop(t, q, "default/pod:g")
		mustNoErr(t, "AddUnschedulable", q.AddUnschedulable(qj, Attempt{AnyEvent: true, Reserved: reserved}))
		q.MoveAllToActiveOrBackoffQueue(framework.EventAssignedPodDelete, nil, nil)
		clock.Step(1500 * time.Millisecond)
		q.flushBackoffCompleted()
		if got, want := q.Lengths().Active, map[bool]int{false: 0, true: 1}[reserved]; got != want {
			t.Errorf("reserved=%v: %d active 1.5s after the sixth failure, want %d", reserved, got, want)
		}
	}
}

func TestAddUnschedulable(t *testing.T) {
	tests := []struct {
		name string
		// during runs between Pop and AddUnschedulable.
		during  func(q *SchedulingQueue, pod *v1.Pod)
		attempt Attempt
		want    location
	}{
		{name: "parked as unschedulable", want: inUnschedulable},
		{
			name:    "an error goes to backoff",
			attempt: Attempt{Err: errors.New("API down")},
			want:    inBackoff,
		},
		{
			name: "a move request during the cycle goes to backoff",
			during: func(q *SchedulingQueue, _ *v1.Pod) {
				q.MoveAllToActiveOrBackoffQueue(framework.EventNodeAdd, nil, nil)
			},
			attempt: Attempt{AnyEvent: true},
			want:    inBackoff,
		},
		{
			name: "a pod change during the cycle goes to backoff",
			during: func(q *SchedulingQueue, pod *v1.Pod) {
				changed := pod.DeepCopy()
				changed.Spec.NodeSelector = map[string]string{"zone": "a"}
				q.PodChanged(dialects.Resolver().JobID(pod), changed, true)
			},
			want: inBackoff,
		},
		{
			name: "a status-only change during the cycle does not count",
			during: func(q *SchedulingQueue, pod *v1.Pod) {
				q.PodChanged(dialects.Resolver().JobID(pod), pod, false)
			},
			want: inUnschedulable,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q, clk := newTestQueue(t, nil)
			pod := st.MakePod().Name("p").Obj()
			add(q, pod)
			qj := mustPop(t, q, "default/pod:p")
			if qj.Attempts != 1 || qj.Cycle != 1 {
				t.Errorf("popped job = %+v, want attempt 1 in cycle 1", qj)
			}
			if tt.during != nil {
				tt.during(q, pod)
			}
			mustNoErr(t, "AddUnschedulable", q.AddUnschedulable(qj, tt.attempt))
			e := q.jobs[qj.ID]
			if e.where != tt.want {
				t.Fatalf("job is in %s, want %s", e.where, tt.want)
			}
			if !e.Timestamp.Equal(clk.Now()) || !e.backoffExpiry.Equal(clk.Now().Add(time.Second)) {
				t.Errorf("timestamp %v, backoff expiry %v; want now and now+1s", e.Timestamp, e.backoffExpiry)
			}
			if err := q.AddUnschedulable(qj, tt.attempt); err == nil || !strings.Contains(err.Error(), "already in the") {
				t.Errorf("second AddUnschedulable: got %v, want an error", err)
			}
		})
	}
}

func TestAddUnschedulableOfAJobThatLeft(t *testing.T) {
	q, _ := newTestQueue(t, nil)
	pod := st.MakePod().Name("p").Obj()
	add(q, pod)
	qj := mustPop(t, q, "default/pod:p")
	q.PodRemoved(qj.ID, pod.UID)
	mustNoErr(t, "AddUnschedulable", q.AddUnschedulable(qj, Attempt{Reason: "too big"}))
	q.Done(qj.ID) // no-op
	if l := q.Lengths(); l != (Lengths{}) {
		t.Errorf("lengths = %+v, want empty", l)
	}
}

func TestUnschedulableJobMovesOnRelevantUpdate(t *testing.T) {
	q, clk := newTestQueue(t, nil)
	pod := st.MakePod().Name("p").Obj()
	add(q, pod)
	qj := mustPop(t, q, "default/pod:p")
	mustNoErr(t, "AddUnschedulable", q.AddUnschedulable(qj, Attempt{Reason: "no fit"}))
	clk.Step(5 * time.Second)

	statusOnly := pod.DeepCopy()
	statusOnly.Status.Conditions = []v1.PodCondition{{Type: v1.PodScheduled, Status: v1.ConditionFalse}}
	q.PodChanged(qj.ID, statusOnly, false)
	if where := q.jobs[qj.ID].where; where != inUnschedulable {
		t.Fatalf("after a status update the job is in %s, want unschedulable", where)
	}
	specChange := st.MakePod().Name("p").Toleration("gpu", "true", v1.TaintEffectNoSchedule).Obj()
	q.PodChanged(qj.ID, specChange, true)
	if where := q.jobs[qj.ID].where; where != inActive {
		t.Fatalf("after a spec update the job is in %s, want active", where)
	}
}

func TestNewGangMemberMovesUnschedulableJob(t *testing.T) {
	q, clk := newTestQueue(t, nil)
	add(q, st.MakePod().Name("a").Group("g").Obj())
	qj := mustPop(t, q, "default/g")
	mustNoErr(t, "AddUnschedulable", q.AddUnschedulable(qj, Attempt{Reason: "waiting for members"}))
	clk.Step(2 * time.Second)
	add(q, st.MakePod().Name("b").Group("g").Obj())
	qj = mustPop(t, q, "default/g")
	if got := strings.Join(podNames(qj.Pods), ","); got != "a,b" {
		t.Errorf("popped pods = %s, want a,b", got)
	}
}

func TestDone(t *testing.T) {
	q, _ := newTestQueue(t, nil)
	a := st.MakePod().Name("a").Group("g").Obj()
	add(q, a)
	qj := mustPop(t, q, "default/g")
	q.Done(qj.ID)
	if l := q.Lengths(); l.AwaitingBinding != 1 || l.Active != 0 {
		t.Fatalf("after Done: %+v, want awaiting binding", l)
	}
	// A status update while the binding is in flight changes nothing.
	q.PodChanged(qj.ID, a, false)
	if l := q.Lengths(); l.AwaitingBinding != 1 {
		t.Fatalf("after a status update: %+v", l)
	}
	// A new member needs scheduling.
	add(q, st.MakePod().Name("b").Group("g").Obj())
	if l := q.Lengths(); l.Active != 1 {
		t.Fatalf("after a new member: %+v, want active", l)
	}

	// A member added during the cycle sends the job back at Done.
	qj = mustPop(t, q, "default/g")
	add(q, st.MakePod().Name("c").Group("g").Obj())
	if l := q.Lengths(); l.InFlight != 1 || l.Active != 0 {
		t.Fatalf("during the cycle: %+v, want in flight", l)
	}
	q.Done(qj.ID)
	qj = mustPop(t, q, "default/g")
	if qj.Attempts != 3 {
		t.Errorf("attempts = %d, want 3", qj.Attempts)
	}
	// Binding observed: the job leaves the queue.
	for _, name := range []string{"a", "b", "c"} {
		q.PodRemoved(qj.ID, st.MakePod().Name(name).Obj().UID)
	}
	q.Done(qj.ID)
	if l := q.Lengths(); l != (Lengths{}) {
		t.Errorf("after binding: %+v, want empty", l)
	}
}

func TestPopBlocksUntilAJobArrives(t *testing.T) {
	q, _ := newTestQueue(t, nil)
	got := make(chan *framework.QueuedJob)
	go func() {
		qj, err := q.Pop(context.Background())
		if err != nil {
			t.Errorf("Pop: %v", err)
		}
		got <- qj
	}()
	// Pop must still be waiting: nothing has been added.
	select {
	case qj := <-got:
		t.Fatalf("Pop returned %v from an empty queue", qj)
	default:
	}
	add(q, st.MakePod().Name("p").Obj())
	select {
	case qj := <-got:
		if qj.ID.Name != "p" {
			t.Errorf("Pop = %s, want p", qj.ID)
		}
	case <-time.After(wait.ForeverTestTimeout):
		t.Fatal("Pop did not return after a job was added")
	}
}

func TestPopReturnsWhenCtxEnds(t *testing.T) {
	q, _ := newTestQueue(t, nil)
	ctx, cancel := context.WithCancel(t.Context())
	errs := make(chan error)
	go func() {
		_, err := q.Pop(ctx)
		errs <- err
	}()
	cancel()
	select {
	case err := <-errs:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("Pop: got %v, want context.Canceled", err)
		}
	case <-time.After(wait.ForeverTestTimeout):
		t.Fatal("Pop did not return after ctx was cancelled")
	}
}

func TestPopAfterClose(t *testing.T) {
	q, _ := newTestQueue(t, nil)
	add(q, st.MakePod().Name("p").Obj())
	q.Close()
	mustPop(t, q, "default/pod:p") // what is active is still handed out
	if _, err := q.Pop(t.Context()); !errors.Is(err, ErrQueueClosed) {
		t.Errorf("Pop of a closed, empty queue: got %v, want ErrQueueClosed", err)
	}
}

// waitFor polls cond until it holds or the test times out.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	err := wait.PollUntilContextTimeout(t.Context(), 5*time.Millisecond, wait.ForeverTestTimeout, true,
		func(context.Context) (bool, error) { return cond(), nil })
	if err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}

func TestRunFlushesBackoffAndUnschedulable(t *testing.T) {
	q, clk := newTestQueue(t, nil)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	done := make(chan struct{})
	go func() {
		defer close(done)
		q.Run(ctx)
	}()
	// Run has created its tickers once the fake clock has waiters.
	waitFor(t, "the flush loops to start", func() bool { return clk.HasWaiters() })

	// "b" fails with an error: backoff 1s, then active.
	add(q, st.MakePod().Name("b").Obj())
	qj := mustPop(t, q, "default/pod:b")
	mustNoErr(t, "AddUnschedulable", q.AddUnschedulable(qj, Attempt{Err: errors.New("boom")}))
	// "u" is unschedulable and no event comes.
	add(q, st.MakePod().Name("u").Obj())
	qj = mustPop(t, q, "default/pod:u")
	mustNoErr(t, "AddUnschedulable", q.AddUnschedulable(qj, Attempt{Reason: "no fit"}))
	if l := q.Lengths(); l.Backoff != 1 || l.Unschedulable != 1 {
		t.Fatalf("lengths = %+v", l)
	}

	clk.Step(time.Second)
	waitFor(t, "the backoff flush", func() bool { return q.Lengths().Active == 1 })
	if l := q.Lengths(); l.Unschedulable != 1 {
		t.Fatalf("unschedulable job left before its timeout: %+v", l)
	}
	mustPop(t, q, "default/pod:b")

	// The unschedulable flush runs every 30s; the job goes after 5m.
	for elapsed := time.Second; elapsed <= DefaultUnschedulableTimeout; elapsed += unschedulableFlushPeriod {
		clk.Step(unschedulableFlushPeriod)
	}
	waitFor(t, "the unschedulable timeout", func() bool { return q.Lengths().Active == 1 })
	mustPop(t, q, "default/pod:u")

	cancel()
	<-done
	if _, err := q.Pop(t.Context()); !errors.Is(err, ErrQueueClosed) {
		t.Errorf("Pop after Run ended: got %v, want ErrQueueClosed", err)
	}
}

func TestUnschedulableTimeoutIsConfigurable(t *testing.T) {
	clk := testingclock.NewFakeClock(epoch)
	q, err := New(Options{Clock: clk, UnschedulableTimeout: time.Minute})
	mustNoErr(t, "New", err)
	add(q, st.MakePod().Name("p").Obj())
	qj := mustPop(t, q, "default/pod:p")
	mustNoErr(t, "AddUnschedulable", q.AddUnschedulable(qj, Attempt{Reason: "no fit"}))
	clk.Step(time.Minute)
	q.flushUnschedulableLeftover()
	if l := q.Lengths(); l.Unschedulable != 1 {
		t.Fatalf("moved at exactly the timeout: %+v", l)
	}
	clk.Step(time.Second)
	q.flushUnschedulableLeftover()
	if l := q.Lengths(); l.Active != 1 {
		t.Fatalf("not moved after the timeout: %+v", l)
	}
}

func TestQueueDump(t *testing.T) {
	q, clk := newTestQueue(t, nil)
	add(q, st.MakePod().Name("u").Obj(), st.MakePod().Name("b").Obj(), st.MakePod().Name("f").Obj(),
		st.MakePod().Name("w").Obj())
	for _, name := range []string{"b", "f", "u", "w"} {
		qj := mustPop(t, q, "default/pod:"+name)
		switch name {
		case "u":
			mustNoErr(t, "AddUnschedulable", q.AddUnschedulable(qj, Attempt{Reason: "too big"}))
		case "b":
			mustNoErr(t, "AddUnschedulable", q.AddUnschedulable(qj, Attempt{Err: errors.New("boom")}))
		case "w":
			q.Done(qj.ID)
		}
	}
	clk.Step(time.Second)
	add(q, st.MakePod().Name("a").Priority(5).Obj(), st.MakePod().Name("z").Priority(7).Obj())
	d := q.Dump()
	ids := func(jobs []JobDump) string {
		var s []string
		for _, j := range jobs {
			s = append(s, j.ID)
		}
		return strings.Join(s, ",")
	}
	for what, got := range map[string]string{
		"active":          ids(d.Active),
		"backoff":         ids(d.Backoff),
		"unschedulable":   ids(d.Unschedulable),
		"inFlight":        ids(d.InFlight),
		"awaitingBinding": ids(d.AwaitingBinding),
	} {
		want := map[string]string{
			"active": "default/pod:z,default/pod:a", "backoff": "default/pod:b",
			"unschedulable": "default/pod:u", "inFlight": "default/pod:f", "awaitingBinding": "default/pod:w",
		}[what]
		if got != want {
			t.Errorf("%s = %q, want %q", what, got, want)
		}
	}
	if d.Lengths != (Lengths{Active: 2, Backoff: 1, Unschedulable: 1, InFlight: 1, AwaitingBinding: 1}) {
		t.Errorf("lengths = %+v", d.Lengths)
	}
	if d.Unschedulable[0].LastFailure != "too big" || d.Unschedulable[0].UnschedulableSince == nil || d.Backoff[0].LastFailure != "boom" {
		t.Errorf("failure details missing: %+v %+v", d.Unschedulable[0], d.Backoff[0])
	}
}

// Within a priority, jobs leave in the order their first pods were
// created, whatever order this process saw them in (after a restart the
// initial list comes in no particular order). Pods without a creation time,
// or from the future, enter at the time they are seen.
func TestQueueIsFIFOByCreation(t *testing.T) {
	q, clk := newTestQueue(t, framework.DefaultLess)
	at := func(d time.Duration) metav1.Time { return metav1.NewTime(epoch.Add(d)) }
	add(q,
		st.MakePod().Name("third").Created(at(-1*time.Minute)).Obj(),
		st.MakePod().Name("first").Created(at(-3*time.Minute)).Obj(),
		st.MakePod().Name("future").Created(at(time.Hour)).Obj(),
		st.MakePod().Name("second").Created(at(-2*time.Minute)).Obj(),
	)
	clk.Step(time.Second)
	add(q, st.MakePod().Name("unknown").Obj())
	got := strings.Join(popAll(t, q), ",")
	want := "default/pod:first,default/pod:second,default/pod:third,default/pod:future,default/pod:unknown"
	if got != want {
		t.Errorf("pop order = %s, want %s", got, want)
	}
}

// With nothing active, Pop takes a job backing off after it did not fit
// before its backoff ends, the one whose backoff ends first; a job backing
// off after an error waits its backoff out, and an active job goes first.
func TestIdlePopTakesBackoffEarly(t *testing.T) {
	q, clk := newTestQueue(t, nil)
	// "err" fails with an error, "late" and "early" miss an event during
	// their cycles (late's backoff is longer: two attempts).
	add(q, st.MakePod().Name("err").Obj())
	errJob := mustPop(t, q, "default/pod:err")
	mustNoErr(t, "AddUnschedulable", q.AddUnschedulable(errJob, Attempt{Err: errors.New("API down")}))
	add(q, st.MakePod().Name("late").Obj())
	late := mustPop(t, q, "default/pod:late")
	q.MoveAllToActiveOrBackoffQueue(framework.EventNodeAdd, nil, nil)
	mustNoErr(t, "AddUnschedulable", q.AddUnschedulable(late, Attempt{AnyEvent: true}))
	q.jobs[late.ID].backoffExpiry = clk.Now().Add(4 * time.Second)
	add(q, st.MakePod().Name("early").Obj())
	early := mustPop(t, q, "default/pod:early")
	q.MoveAllToActiveOrBackoffQueue(framework.EventNodeAdd, nil, nil)
	mustNoErr(t, "AddUnschedulable", q.AddUnschedulable(early, Attempt{AnyEvent: true}))
	if l := q.Lengths(); l.Active != 0 || l.Backoff != 3 {
		t.Fatalf("lengths = %+v, want 3 jobs backing off", l)
	}

	// An active job goes before them.
	add(q, st.MakePod().Name("new").Obj())
	for _, want := range []string{"default/pod:new", "default/pod:early", "default/pod:late"} {
		qj, err := q.Pop(t.Context())
		mustNoErr(t, "Pop", err)
		if qj.ID.String() != want {
			t.Fatalf("Pop = %s, want %s", qj.ID, want)
		}
	}
	// Only the errored job is left, and Pop waits for its backoff.
	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	if qj, err := q.Pop(ctx); err == nil {
		t.Fatalf("Pop = %s before the backoff of a job that failed with an error ended", qj.ID)
	}
	clk.Step(time.Second)
	q.flushBackoffCompleted()
	mustPop(t, q, "default/pod:err")
}

// An idle Pop already waiting wakes when a job goes to the backoff queue.
func TestIdlePopWakesForBackoff(t *testing.T) {
	q, _ := newTestQueue(t, nil)
	add(q, st.MakePod().Name("p").Obj())
	qj := mustPop(t, q, "default/pod:p")
	popped := make(chan string, 1)
	go func() {
		got, err := q.Pop(t.Context())
		if err == nil {
			popped <- got.ID.String()
		}
	}()
	q.MoveAllToActiveOrBackoffQueue(framework.EventNodeAdd, nil, nil)
	mustNoErr(t, "AddUnschedulable", q.AddUnschedulable(qj, Attempt{AnyEvent: true}))
	select {
	case got := <-popped:
		if got != "default/pod:p" {
			t.Errorf("Pop = %s, want default/pod:p", got)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a waiting Pop did not take the job that went to the backoff queue")
	}
}
