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

package capacity

import (
	"context"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	configapi "github.com/batch-scheduler/batch-scheduler/pkg/apis/config"
	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
)

// reserveRoom is a RoomMaker that answers Reserve with res (recording the
// policy) and MakeRoom with out (recording the victim policy), and records
// what it was asked to release.
type reserveRoom struct {
	fakeRoom
	res      framework.Reservation
	reserves int
	reserve  framework.ReservePolicy
	released []framework.JobID
}

func (r *reserveRoom) Reserve(_ context.Context, policy framework.ReservePolicy) (framework.Reservation, error) {
	r.reserves++
	r.reserve = policy
	return r.res, nil
}

func (r *reserveRoom) Release(_ context.Context, job framework.JobID) {
	r.released = append(r.released, job)
}

// newTestReservation builds the plugin with args (defaults where zero)
// and a clock at now.
func newTestReservation(t *testing.T, args configapi.ReservationArgs, now *time.Time) *Reservation {
	t.Helper()
	if args.ReclaimAfter == "" {
		args.ReclaimAfter = "2m"
	}
	if args.WaitWithoutEstimate == "" {
		args.WaitWithoutEstimate = "0s"
	}
	if args.MaxHold == "" {
		args.MaxHold = "15m"
	}
	if args.OverrunGrace == "" {
		args.OverrunGrace = "30s"
	}
	pl, err := NewReservation(t.Context(), &args, nil)
	if err != nil {
		t.Fatalf("NewReservation: %v", err)
	}
	p := pl.(*Reservation)
	p.now = func() time.Time { return *now }
	return p
}

// pendingJob is a pending gang of queue q named name, created at since,
// known to room as pending.
func pendingJob(room *reserveRoom, name, q string, qs *framework.QueueSnapshot, priority int32, since time.Time) *framework.Job {
	j := job(q, qs, 2, cpuPod(name+"-0", "1"), cpuPod(name+"-1", "1"))
	j.ID.Name, j.Priority, j.Since = name, priority, since
	if room.jobs == nil {
		room.jobs = map[framework.JobID]*framework.JobInfo{}
	}
	room.jobs[j.ID] = &framework.JobInfo{Tasks: map[types.UID]*framework.TaskInfo{"0": {Status: framework.TaskPending}}}
	return j
}

// holds reports whether job name holds a reservation of p.
func holds(p *Reservation, name string) bool {
	for _, h := range p.Reservations() {
		if h.Job.Name == name {
			return true
		}
	}
	return false
}

func TestReservationPostFilter(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	soon := framework.Reservation{Fits: true, StartKnown: true, Start: now.Add(time.Minute), WaitFor: 2, Nodes: []string{"n1", "n2"}}
	two := func() *framework.QueueSnapshot {
		return snapshot(cores(8), queue("a", "", fairShare(cores(4))), queue("b", "", fairShare(cores(4))))
	}

	t.Run("a gang of quorum 1 does not reserve; it waits unheld when room frees soon", func(t *testing.T) {
		clock := now
		p := newTestReservation(t, configapi.ReservationArgs{MaxReservations: 4}, &clock)
		far, unknown := soon, framework.Reservation{Fits: true, WaitFor: 1, Nodes: []string{"n1"}}
		far.Start = now.Add(10 * time.Minute)
		over := func() *framework.QueueSnapshot {
			qs := two()
			qs.Queues["a"].Allocated = cores(5) // above its fair share of 4
			return qs
		}
		for _, tc := range []struct {
			name     string
			res      framework.Reservation
			queues   func() *framework.QueueSnapshot
			wantWait bool
		}{
			{"room frees in 1m", soon, two, true},
			{"room frees in 10m", far, two, false},
			{"nobody says when", unknown, two, false},
			{"its queue is above its share", soon, over, false},
			{"no queues", soon, nil, false},
		} {
			room := &reserveRoom{res: tc.res}
			var qs *framework.QueueSnapshot
			if tc.queues != nil {
				qs = tc.queues()
			}
			j := pendingJob(room, "one", "a", qs, 0, now)
			j.MinAvailable = 1
			res, st := p.PostFilter(t.Context(), nil, j, room)
			if got := st.IsSuccess(); got != tc.wantWait || len(p.Reservations()) != 0 || room.reserves > 0 && !room.reserve.Probe {
				t.Errorf("%s: PostFilter = %+v, %v, reservations %v, probe %v; want waiting %v, nothing held",
					tc.name, res, st, p.Reservations(), room.reserve.Probe, tc.wantWait)
			}
			if tc.wantWait && (res == nil || !strings.Contains(res.Message, "waiting for 2 running pods to end rather than evicting: expected to start in 1m0s")) {
				t.Errorf("%s: result %+v, want the wait said", tc.name, res)
			}
		}
	})

	t.Run("an elastic gang running its quorum does not reserve for the rest", func(t *testing.T) {
		clock := now
		p := newTestReservation(t, configapi.ReservationArgs{MaxReservations: 4}, &clock)
		room := &reserveRoom{res: soon}
		j := pendingJob(room, "elastic", "a", two(), 0, now)
		room.jobs[j.ID].Tasks["1"] = &framework.TaskInfo{Status: framework.TaskBound, Counted: true}
		room.jobs[j.ID].Tasks["2"] = &framework.TaskInfo{Status: framework.TaskBound, Counted: true}
		if res, st := p.PostFilter(t.Context(), nil, j, room); st.IsSuccess() || res != nil || room.reserves != 0 {
			t.Errorf("PostFilter = %+v, %v after %d reserves; want declined without reserving", res, st, room.reserves)
		}
		// One of its quorum finished: it reserves again.
		room.jobs[j.ID].Tasks["2"] = &framework.TaskInfo{Status: framework.TaskBound, Counted: false}
		if _, st := p.PostFilter(t.Context(), nil, j, room); !st.IsSuccess() || !holds(p, "elastic") {
			t.Errorf("below its quorum: %v, want a reservation", st)
		}
	})

	t.Run("reserves and holds while the start is near", func(t *testing.T) {
		clock := now
		p := newTestReservation(t, configapi.ReservationArgs{MaxReservations: 4}, &clock)
		room := &reserveRoom{res: soon}
		res, st := p.PostFilter(t.Context(), nil, pendingJob(room, "j", "a", two(), 0, now), room)
		if !st.IsSuccess() || res == nil || !strings.Contains(res.Message, "room held on n1, n2 until 2 running pods end; expected to start in 1m0s") {
			t.Fatalf("PostFilter = %+v, %v; want success with the reservation's message", res, st)
		}
		if len(p.Reservations()) != 1 {
			t.Errorf("Reservations() = %v, want the job's", p.Reservations())
		}
		// The policy's estimate comes from the pod's expected runtime.
		pod := cpuPod("r", "1")
		pod.Annotations = map[string]string{framework.ExpectedRuntimeAnnotation: "90s"}
		started := metav1.NewTime(now.Add(-30 * time.Second))
		pod.Status.StartTime = &started
		if end, ok := room.reserve.End(&framework.TaskInfo{Pod: pod}); !ok || !end.Equal(now.Add(time.Minute)) {
			t.Errorf("End = %v, %v; want start + 90s", end, ok)
		}
	})

	t.Run("hands on to reclaim when the start is far or unknown", func(t *testing.T) {
		clock := now
		p := newTestReservation(t, configapi.ReservationArgs{MaxReservations: 4}, &clock)
		far := soon
		far.Start = now.Add(10 * time.Minute)
		room := &reserveRoom{res: far}
		res, st := p.PostFilter(t.Context(), nil, pendingJob(room, "far", "a", two(), 0, now), room)
		if st.Code() != framework.Unschedulable || res == nil || !strings.Contains(res.Message, "expected to start in 10m0s") {
			t.Fatalf("far start: %+v, %v; want the reservation kept, the job handed on (Unschedulable)", res, st)
		}
		// By default a job whose start is unknown is handed on at once,
		// its room kept.
		unknown := framework.Reservation{Fits: true, WaitFor: 1, Nodes: []string{"n1"}}
		room1 := &reserveRoom{res: unknown}
		res, st = p.PostFilter(t.Context(), nil, pendingJob(room1, "blind", "b", two(), 0, now), room1)
		if st.Code() != framework.Unschedulable || res == nil || !strings.Contains(res.Message, "start time unknown") || !holds(p, "blind") {
			t.Errorf("unknown start, waitWithoutEstimate 0s: %+v, %v, reservations %v; want handed on with its room kept", res, st, p.Reservations())
		}
		// With waitWithoutEstimate, it waits that long first.
		p = newTestReservation(t, configapi.ReservationArgs{MaxReservations: 4, WaitWithoutEstimate: "2m"}, &clock)
		room2 := &reserveRoom{res: unknown}
		if _, st := p.PostFilter(t.Context(), nil, pendingJob(room2, "fresh", "b", two(), 0, now.Add(-time.Minute)), room2); !st.IsSuccess() {
			t.Errorf("unknown start, waited 1m of 2m: %v, want held", st)
		}
		if _, st := p.PostFilter(t.Context(), nil, pendingJob(room2, "old", "b", two(), 0, now.Add(-3*time.Minute)), room2); st.IsSuccess() {
			// "fresh" holds queue b's reservation and is younger, so "old"
			// (ahead of it) takes it over and then waits too long.
			t.Errorf("unknown start, waited 3m of 2m: success, want handed on")
		}
		if len(room2.released) != 1 || room2.released[0].Name != "fresh" {
			t.Errorf("released %v, want fresh's reservation taken over by old, ahead in queue b", room2.released)
		}
	})

	t.Run("one per queue, the job ahead keeps it", func(t *testing.T) {
		clock := now
		p := newTestReservation(t, configapi.ReservationArgs{MaxReservations: 4}, &clock)
		room := &reserveRoom{res: soon}
		if _, st := p.PostFilter(t.Context(), nil, pendingJob(room, "first", "a", two(), 5, now), room); !st.IsSuccess() {
			t.Fatalf("first: %v", st)
		}
		// The job behind may not reserve; its room frees within
		// reclaimAfter, so it waits, holding nothing, rather than being
		// handed to Reclaim.
		res, st := p.PostFilter(t.Context(), nil, pendingJob(room, "behind", "a", two(), 5, now.Add(time.Second)), room)
		if !st.IsSuccess() || res == nil || !room.reserve.Probe || holds(p, "behind") ||
			!strings.Contains(res.Message, "waiting for 2 running pods to end rather than evicting: expected to start in 1m0s; no reservation: job") ||
			!strings.Contains(res.Message, "ahead in queue a, holds its reservation") {
			t.Fatalf("behind: %+v, %v (probe %v, reservations %v); want it to wait unheld: first holds the queue's reservation", res, st, room.reserve.Probe, p.Reservations())
		}
		// When its room frees later than that, it is handed on, saying why
		// it holds nothing.
		room.res.Start = now.Add(10 * time.Minute)
		if _, st := p.PostFilter(t.Context(), nil, pendingJob(room, "behind", "a", two(), 5, now.Add(time.Second)), room); st.IsSuccess() ||
			!strings.Contains(st.Message(), "ahead in queue a, holds its reservation") {
			t.Fatalf("behind, room in 10m: %v, want declined: first holds the queue's reservation", st)
		}
		room.res = soon
		if _, st := p.PostFilter(t.Context(), nil, pendingJob(room, "urgent", "a", two(), 9, now.Add(time.Minute)), room); !st.IsSuccess() {
			t.Fatalf("urgent (higher priority): %v, want it to take the queue's reservation", st)
		}
		if len(room.released) != 1 || room.released[0].Name != "first" {
			t.Errorf("released %v, want first's", room.released)
		}
	})

	t.Run("at most MaxReservations", func(t *testing.T) {
		clock := now
		p := newTestReservation(t, configapi.ReservationArgs{MaxReservations: 1}, &clock)
		room := &reserveRoom{res: soon}
		if _, st := p.PostFilter(t.Context(), nil, pendingJob(room, "x", "a", two(), 0, now), room); !st.IsSuccess() {
			t.Fatalf("x: %v", st)
		}
		if res, st := p.PostFilter(t.Context(), nil, pendingJob(room, "y", "b", two(), 0, now), room); !st.IsSuccess() || holds(p, "y") ||
			res == nil || !strings.Contains(res.Message, "no reservation: 1 jobs hold reservations") {
			t.Fatalf("y: %+v, %v; want it to wait unheld at the bound (its room frees in 1m)", res, st)
		}
		room.res.Start = now.Add(10 * time.Minute)
		if _, st := p.PostFilter(t.Context(), nil, pendingJob(room, "y", "b", two(), 0, now), room); st.IsSuccess() || !strings.Contains(st.Message(), "1 jobs hold reservations") {
			t.Fatalf("y, room in 10m: %v, want declined at the bound", st)
		}
		room.res = soon
		// x starts: its slot frees.
		room.jobs[framework.JobID{Namespace: "default", Name: "x", Gang: true}].Tasks[types.UID("0")].Status = framework.TaskBound
		if _, st := p.PostFilter(t.Context(), nil, pendingJob(room, "y", "b", two(), 0, now), room); !st.IsSuccess() {
			t.Fatalf("y after x started: %v", st)
		}
	})

	t.Run("a queue that comes to use more than its share gives its reservation up", func(t *testing.T) {
		// Queue b reserved while alone (its share was the whole cluster);
		// queue a came, b now uses more than its share: the next cycle,
		// of any job, releases b's room, so that a's reclaim does not
		// plan around room nobody may use.
		clock := now
		p := newTestReservation(t, configapi.ReservationArgs{MaxReservations: 4}, &clock)
		room := &reserveRoom{res: soon}
		alone := snapshot(cores(8), queue("b", "", fairShare(cores(8))))
		alone.Queues["b"].Allocated = cores(8)
		if _, st := p.PostFilter(t.Context(), nil, pendingJob(room, "borrower", "b", alone, 0, now), room); !st.IsSuccess() || !holds(p, "borrower") {
			t.Fatalf("borrower alone: %v, want a reservation", st)
		}
		shared := two()
		shared.Queues["b"].Allocated = cores(8)
		room.res = framework.Reservation{Fits: true, WaitFor: 2, Nodes: []string{"n3", "n4"}}
		if _, st := p.PostFilter(t.Context(), nil, pendingJob(room, "owed", "a", shared, 0, now), room); st.Code() != framework.Unschedulable || !holds(p, "owed") {
			t.Fatalf("owed: %v, want its own reservation and handed on to reclaim", st)
		}
		if holds(p, "borrower") || len(room.released) != 1 || room.released[0].Name != "borrower" {
			t.Errorf("reservations %v, released %v; want borrower's released", p.Reservations(), room.released)
		}
	})

	t.Run("a queue over its fair share does not reserve", func(t *testing.T) {
		clock := now
		p := newTestReservation(t, configapi.ReservationArgs{MaxReservations: 4}, &clock)
		room := &reserveRoom{res: soon}
		qs := snapshot(cores(8), queue("a", "", fairShare(cores(2)), allocated(cores(3))))
		if _, st := p.PostFilter(t.Context(), nil, pendingJob(room, "j", "a", qs, 0, now), room); st.IsSuccess() || room.reserves != 0 {
			t.Fatalf("%v (reserves %d), want declined without a reservation", st, room.reserves)
		}
		// At its share, busy with its own jobs: it waits for them.
		full := snapshot(cores(8), queue("a", "", fairShare(cores(2)), allocated(cores(2))))
		if _, st := p.PostFilter(t.Context(), nil, pendingJob(room, "k", "a", full, 0, now), room); !st.IsSuccess() {
			t.Fatalf("at its share: %v, want a reservation", st)
		}
	})

	t.Run("MaxHold ends it, and it waits as long to reserve again", func(t *testing.T) {
		clock := now
		p := newTestReservation(t, configapi.ReservationArgs{MaxReservations: 4, MaxHold: "10m"}, &clock)
		room := &reserveRoom{res: soon}
		j := pendingJob(room, "j", "a", two(), 0, now)
		if _, st := p.PostFilter(t.Context(), nil, j, room); !st.IsSuccess() {
			t.Fatal(st)
		}
		clock = now.Add(11 * time.Minute)
		if _, st := p.PostFilter(t.Context(), nil, j, room); st.IsSuccess() || len(room.released) != 1 {
			t.Fatalf("after 11m: %v, released %v; want it given up", st, room.released)
		}
		clock = now.Add(15 * time.Minute)
		if _, st := p.PostFilter(t.Context(), nil, j, room); st.IsSuccess() || !strings.Contains(st.Message(), "may reserve again in") {
			t.Fatalf("in the cool-down: %v", st)
		}
		clock = now.Add(22 * time.Minute)
		if _, st := p.PostFilter(t.Context(), nil, j, room); !st.IsSuccess() {
			t.Fatalf("after the cool-down: %v, want a new reservation", st)
		}
	})

	t.Run("a late job has the pods that backfilled its nodes and overran evicted", func(t *testing.T) {
		clock := now
		p := newTestReservation(t, configapi.ReservationArgs{MaxReservations: 4}, &clock)
		room := &reserveRoom{res: soon}
		j := pendingJob(room, "j", "a", two(), 0, now)
		if _, st := p.PostFilter(t.Context(), nil, j, room); !st.IsSuccess() {
			t.Fatal(st)
		}
		clock = now.Add(2 * time.Minute) // a minute late, past the 30s grace
		room.out = framework.RoomOutcome{Fits: true, Victims: 1}
		res, st := p.PostFilter(t.Context(), nil, j, room)
		if !st.IsSuccess() || res == nil || !strings.Contains(res.Message, "evicting 1 pods that overran") {
			t.Fatalf("late: %+v, %v", res, st)
		}
		overran := func(node, runtime string, started time.Duration) *framework.TaskInfo {
			pod := cpuPod("p", "1")
			pod.Annotations = map[string]string{framework.ExpectedRuntimeAnnotation: runtime}
			s := metav1.NewTime(clock.Add(-started))
			pod.Status.StartTime = &s
			return &framework.TaskInfo{Pod: pod, NodeName: node}
		}
		for _, tc := range []struct {
			task *framework.TaskInfo
			want bool
		}{
			// Backfilled: started after the reservation, 1m ago.
			{overran("n1", "30s", time.Minute), true},
			{overran("n1", "5m", time.Minute), false},
			{overran("n9", "30s", time.Minute), false},
			// There before the reservation (5m ago): waited for, even late.
			{overran("n1", "1m", 5*time.Minute), false},
			{&framework.TaskInfo{Pod: cpuPod("q", "1"), NodeName: "n1"}, false},
		} {
			if got := room.fakeRoom.policy(tc.task); got != tc.want {
				t.Errorf("victim policy(%s on %s, %s) = %v, want %v", tc.task.GetName(), tc.task.NodeName,
					tc.task.GetAnnotations()[framework.ExpectedRuntimeAnnotation], got, tc.want)
			}
		}
	})

	t.Run("no fit at all, and preemption first", func(t *testing.T) {
		clock := now
		p := newTestReservation(t, configapi.ReservationArgs{MaxReservations: 4}, &clock)
		room := &reserveRoom{res: framework.Reservation{}}
		if _, st := p.PostFilter(t.Context(), nil, pendingJob(room, "huge", "a", two(), 0, now), room); st.IsSuccess() ||
			!strings.Contains(st.Message(), "does not fit even with every running pod gone") {
			t.Fatalf("%v", st)
		}
		room = &reserveRoom{res: framework.Reservation{Deferred: true}}
		if _, st := p.PostFilter(t.Context(), nil, pendingJob(room, "hi", "a", two(), 0, now), room); st.IsSuccess() ||
			!strings.Contains(st.Message(), "may be preempted instead") {
			t.Fatalf("%v", st)
		}
	})

	t.Run("off at 0", func(t *testing.T) {
		clock := now
		p := newTestReservation(t, configapi.ReservationArgs{MaxReservations: 0}, &clock)
		room := &reserveRoom{res: soon}
		if _, st := p.PostFilter(t.Context(), nil, pendingJob(room, "j", "a", two(), 0, now), room); st.IsSuccess() || room.reserves != 0 {
			t.Fatalf("%v, reserves %d", st, room.reserves)
		}
	})
}

func TestPreemptible(t *testing.T) {
	prio := func(v int32) *v1.Pod {
		p := cpuPod("p", "1")
		p.Spec.Priority = &v
		return p
	}
	j := &framework.Job{Priority: 10}
	room := &reserveRoom{}
	f := preemptible(j, room)
	if !f(&framework.TaskInfo{Pod: prio(5)}) || f(&framework.TaskInfo{Pod: prio(10)}) || f(&framework.TaskInfo{Pod: prio(20)}) {
		t.Errorf("without queues: want only lower priority preemptible")
	}
}

// A gang whose queue would exceed its fair share with it started waits
// only for its own queue's pods; within its share, for anyone's.
func TestReservationWaitsForOthersOnlyWithinItsShare(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	clock := now
	p := newTestReservation(t, configapi.ReservationArgs{MaxReservations: 4}, &clock)
	own := &framework.TaskInfo{Job: framework.JobID{Namespace: "default", Name: "mine"}}
	other := &framework.TaskInfo{Job: framework.JobID{Namespace: "default", Name: "theirs"}}
	for _, tc := range []struct {
		name      string
		allocated int64
		wantOnly  bool
	}{
		{"room for its quorum within its share", 2, false},
		{"at its share", 4, true},
	} {
		room := &reserveRoom{res: framework.Reservation{Fits: true, WaitFor: 1, Nodes: []string{"n1"}}}
		qs := snapshot(cores(8), queue("a", "", fairShare(cores(4))), queue("b", "", fairShare(cores(4))))
		qs.Queues["a"].Allocated = cores(tc.allocated)
		j := pendingJob(room, "g-"+tc.name, "a", qs, 0, now)
		room.jobs[own.Job] = &framework.JobInfo{QueueAccount: "a"}
		room.jobs[other.Job] = &framework.JobInfo{QueueAccount: "b"}
		p.PostFilter(t.Context(), nil, j, room)
		only := room.reserve.WaitOnly
		if got := only != nil; got != tc.wantOnly {
			t.Fatalf("%s: WaitOnly set %v, want %v", tc.name, got, tc.wantOnly)
		}
		if only != nil && (!only(own) || only(other)) {
			t.Errorf("%s: WaitOnly(own) %v, WaitOnly(other) %v; want only its own queue's pods", tc.name, only(own), only(other))
		}
	}
}
