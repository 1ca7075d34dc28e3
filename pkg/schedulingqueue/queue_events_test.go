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
	"errors"
	"maps"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/batch-scheduler/batch-scheduler/pkg/dialects"
	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
	st "github.com/batch-scheduler/batch-scheduler/pkg/testing"
)

// registered returns the events as registered by plugin, with hint.
func registered(plugin string, hint framework.QueueingHintFn, events ...framework.ClusterEvent) []framework.PluginEvent {
	out := make([]framework.PluginEvent, len(events))
	for i, e := range events {
		out[i] = framework.PluginEvent{Plugin: plugin, ClusterEventWithHint: framework.ClusterEventWithHint{Event: e, QueueingHintFn: hint}}
	}
	return out
}

var (
	nodeAddOrTaint = registered("Nodes", nil, framework.ClusterEvent{Resource: framework.Node, ActionType: framework.Add | framework.UpdateNodeTaint})
	podDelete      = registered("Pods", nil, framework.ClusterEvent{Resource: framework.Pod, ActionType: framework.Delete})
)

// parkUnschedulable adds a job of one pod, pops it and parks it with
// attempt, then lets its backoff expire.
func parkUnschedulable(t *testing.T, q *SchedulingQueue, name string, attempt Attempt) framework.JobID {
	t.Helper()
	add(q, st.MakePod().Name(name).Obj())
	qj := mustPop(t, q, "default/pod:"+name)
	attempt.Reason = "no fit"
	mustNoErr(t, "AddUnschedulable", q.AddUnschedulable(qj, attempt))
	if where := q.jobs[qj.ID].where; where != inUnschedulable {
		t.Fatalf("%s is in %s, want unschedulable", name, where)
	}
	return qj.ID
}

func TestMoveAllOnlyOnRelevantEvents(t *testing.T) {
	widgets := framework.EventResource("widgets.v1.example.com")
	tests := []struct {
		name    string
		attempt Attempt
		event   framework.ClusterEvent
		moved   bool
	}{
		{name: "no events: no event helps", event: framework.EventNodeConditionChange},
		{name: "any event", attempt: Attempt{AnyEvent: true}, event: framework.EventAssignedPodDelete, moved: true},
		{name: "any event whatever the events", attempt: Attempt{AnyEvent: true, Events: podDelete}, event: framework.EventNodeAdd, moved: true},
		{name: "matching resource and action", attempt: Attempt{Events: nodeAddOrTaint}, event: framework.EventNodeAdd, moved: true},
		{name: "one of several actions", attempt: Attempt{Events: nodeAddOrTaint}, event: framework.EventNodeTaintChange, moved: true},
		{name: "other action of the resource", attempt: Attempt{Events: nodeAddOrTaint}, event: framework.EventNodeLabelChange},
		{name: "other resource", attempt: Attempt{Events: nodeAddOrTaint}, event: framework.EventAssignedPodDelete},
		{name: "second of several events", attempt: Attempt{Events: append(append([]framework.PluginEvent(nil), nodeAddOrTaint...), podDelete...)}, event: framework.EventAssignedPodDelete, moved: true},
		{
			name:    "wildcard interest",
			attempt: Attempt{Events: registered("P", nil, framework.ClusterEvent{Resource: framework.WildCard, ActionType: framework.Delete})},
			event:   framework.ClusterEvent{Resource: widgets, ActionType: framework.Delete}, moved: true,
		},
		{
			name:    "wildcard interest, other action",
			attempt: Attempt{Events: registered("P", nil, framework.ClusterEvent{Resource: framework.WildCard, ActionType: framework.Delete})},
			event:   framework.ClusterEvent{Resource: widgets, ActionType: framework.Add},
		},
		{name: "wildcard event", attempt: Attempt{Events: podDelete}, event: framework.ClusterEvent{Resource: framework.WildCard, ActionType: framework.All}, moved: true},
		{name: "wildcard event, other action", attempt: Attempt{Events: podDelete}, event: framework.ClusterEvent{Resource: framework.WildCard, ActionType: framework.Add}},
		{name: "dynamic resource", attempt: Attempt{Events: registered("P", nil, framework.ClusterEvent{Resource: widgets, ActionType: framework.All})}, event: framework.ClusterEvent{Resource: widgets, ActionType: framework.UpdateGeneric}, moved: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q, clk := newTestQueue(t, nil)
			id := parkUnschedulable(t, q, "p", tt.attempt)
			clk.Step(2 * time.Second)
			q.MoveAllToActiveOrBackoffQueue(tt.event, nil, nil)
			want := inUnschedulable
			if tt.moved {
				want = inActive
			}
			if got := q.jobs[id].where; got != want {
				t.Errorf("after %s the job is in %s, want %s", tt.event, got, want)
			}
		})
	}
}

// A matching event moves a job only if the hint of the plugin that
// registered it answers Queue; the hint sees the job's pods and the
// event's objects, and a failing hint counts as Queue.
func TestMoveAllAsksTheHints(t *testing.T) {
	big := st.MakePod().Name("big").Req(map[v1.ResourceName]string{v1.ResourceCPU: "64"}).Obj()
	// fitsOnNode answers Queue when some pod of the job requests no more
	// CPU than the new node (the event's new object) allocates.
	fitsOnNode := func(_ klog.Logger, job *framework.QueuedJob, oldObj, newObj any) (framework.QueueingHint, error) {
		node, ok := newObj.(*v1.Node)
		if !ok {
			return framework.QueueSkip, errors.New("not a node")
		}
		for _, p := range job.Pods {
			if p.Spec.Containers[0].Resources.Requests.Cpu().Cmp(node.Status.Allocatable[v1.ResourceCPU]) <= 0 {
				return framework.Queue, nil
			}
		}
		return framework.QueueSkip, nil
	}
	skip := func(klog.Logger, *framework.QueuedJob, any, any) (framework.QueueingHint, error) {
		return framework.QueueSkip, nil
	}
	smallNode := st.MakeNode().Name("small").Capacity(map[v1.ResourceName]string{v1.ResourceCPU: "8"}).Obj()
	bigNode := st.MakeNode().Name("big").Capacity(map[v1.ResourceName]string{v1.ResourceCPU: "96"}).Obj()
	tests := []struct {
		name   string
		events []framework.PluginEvent
		newObj any
		moved  bool
	}{
		{name: "hint says skip", events: registered("Fit", fitsOnNode, framework.EventNodeAdd), newObj: smallNode},
		{name: "hint says queue", events: registered("Fit", fitsOnNode, framework.EventNodeAdd), newObj: bigNode, moved: true},
		{name: "a failing hint counts as queue", events: registered("Fit", fitsOnNode, framework.EventNodeAdd), newObj: "garbage", moved: true},
		{name: "one plugin's queue is enough", events: append(registered("A", skip, framework.EventNodeAdd), registered("Fit", fitsOnNode, framework.EventNodeAdd)...), newObj: bigNode, moved: true},
		{name: "every plugin says skip", events: append(registered("A", skip, framework.EventNodeAdd), registered("Fit", fitsOnNode, framework.EventNodeAdd)...), newObj: smallNode},
		{name: "a hint of an event that does not match is not asked", events: registered("Fit", fitsOnNode, framework.EventAssignedPodDelete), newObj: bigNode},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q, clk := newTestQueue(t, nil)
			add(q, big)
			qj := mustPop(t, q, "default/pod:big")
			mustNoErr(t, "AddUnschedulable", q.AddUnschedulable(qj, Attempt{Reason: "no fit", Events: tt.events}))
			clk.Step(2 * time.Second)
			q.MoveAllToActiveOrBackoffQueue(framework.EventNodeAdd, nil, tt.newObj)
			want := inUnschedulable
			if tt.moved {
				want = inActive
			}
			if got := q.jobs[qj.ID].where; got != want {
				t.Errorf("job is in %s, want %s", got, want)
			}
		})
	}
}

func TestMoveAllPicksJobsByTheirEvents(t *testing.T) {
	q, clk := newTestQueue(t, nil)
	nodes := parkUnschedulable(t, q, "wants-nodes", Attempt{Events: nodeAddOrTaint})
	pods := parkUnschedulable(t, q, "wants-pod-deletes", Attempt{Events: podDelete})
	anything := parkUnschedulable(t, q, "wants-anything", Attempt{AnyEvent: true})
	nothing := parkUnschedulable(t, q, "wants-nothing", Attempt{})
	clk.Step(2 * time.Second)
	q.MoveAllToActiveOrBackoffQueue(framework.EventAssignedPodDelete, nil, nil)
	want := map[framework.JobID]location{nodes: inUnschedulable, pods: inActive, anything: inActive, nothing: inUnschedulable}
	for id, w := range want {
		if got := q.jobs[id].where; got != w {
			t.Errorf("%s is in %s, want %s", id, got, w)
		}
	}
	d := q.Dump()
	if len(d.Unschedulable) != 2 || len(d.Unschedulable[0].Events) != 1 || d.Unschedulable[0].Events[0] != "Nodes:Node/Add|UpdateNodeTaint" {
		t.Errorf("unschedulable in dump = %+v, want its events", d.Unschedulable)
	}
}

// The unschedulable timeout moves a job whatever events it waits for.
func TestUnschedulableTimeoutIgnoresEvents(t *testing.T) {
	q, clk := newTestQueue(t, nil)
	id := parkUnschedulable(t, q, "p", Attempt{Events: podDelete})
	clk.Step(DefaultUnschedulableTimeout + time.Second)
	q.flushUnschedulableLeftover()
	if got := q.jobs[id].where; got != inActive {
		t.Errorf("after the timeout the job is in %s, want active", got)
	}
}

// A move request that comes while a job is being scheduled sends it to
// backoff instead of the unschedulable queue only if it may help the job.
func TestEventsDuringTheCycle(t *testing.T) {
	tests := []struct {
		name    string
		attempt Attempt
		// during runs between Pop and AddUnschedulable.
		during func(q *SchedulingQueue)
		want   location
	}{
		{
			name:    "irrelevant event",
			attempt: Attempt{Events: podDelete},
			during:  func(q *SchedulingQueue) { q.MoveAllToActiveOrBackoffQueue(framework.EventNodeAdd, nil, nil) },
			want:    inUnschedulable,
		},
		{
			name:    "relevant event",
			attempt: Attempt{Events: nodeAddOrTaint},
			during:  func(q *SchedulingQueue) { q.MoveAllToActiveOrBackoffQueue(framework.EventNodeAdd, nil, nil) },
			want:    inBackoff,
		},
		{
			name:    "relevant event among irrelevant ones",
			attempt: Attempt{Events: podDelete},
			during: func(q *SchedulingQueue) {
				for range 10 {
					q.MoveAllToActiveOrBackoffQueue(framework.EventNodeLabelChange, nil, nil)
				}
				q.MoveAllToActiveOrBackoffQueue(framework.EventAssignedPodDelete, nil, nil)
				q.MoveAllToActiveOrBackoffQueue(framework.EventNodeAdd, nil, nil)
			},
			want: inBackoff,
		},
		{
			name:    "any event counts for an attempt that allows any",
			attempt: Attempt{AnyEvent: true},
			during:  func(q *SchedulingQueue) { q.MoveAllToActiveOrBackoffQueue(framework.EventNodeLabelChange, nil, nil) },
			want:    inBackoff,
		},
		{
			name:    "too many events to remember: any counts",
			attempt: Attempt{Events: podDelete},
			during: func(q *SchedulingQueue) {
				for i := range maxInFlightEvents + 1 {
					q.MoveAllToActiveOrBackoffQueue(framework.ClusterEvent{Resource: framework.Node, ActionType: framework.UpdateNodeLabel, Label: string(rune('a' + i%2))}, nil, nil)
				}
			},
			want: inBackoff,
		},
		{
			name:    "event before the cycle",
			attempt: Attempt{Events: nodeAddOrTaint},
			want:    inUnschedulable,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q, _ := newTestQueue(t, nil)
			add(q, st.MakePod().Name("p").Obj())
			// An event before the pop is no reason to retry.
			q.MoveAllToActiveOrBackoffQueue(framework.EventNodeAdd, nil, nil)
			qj := mustPop(t, q, "default/pod:p")
			if tt.during != nil {
				tt.during(q)
			}
			tt.attempt.Reason = "no fit"
			mustNoErr(t, "AddUnschedulable", q.AddUnschedulable(qj, tt.attempt))
			if got := q.jobs[qj.ID].where; got != tt.want {
				t.Errorf("job is in %s, want %s", got, tt.want)
			}
			if q.numInFlight != 0 || len(q.inFlightEvents) != 0 || q.inFlightEventsLost {
				t.Errorf("in-flight bookkeeping not reset: %d in flight, %d events, lost %v", q.numInFlight, len(q.inFlightEvents), q.inFlightEventsLost)
			}
		})
	}
}

// Events are recorded only while jobs are in flight, and each in-flight
// job sees only those of its own cycle or later.
func TestInFlightEventsPerCycle(t *testing.T) {
	q, _ := newTestQueue(t, nil)
	q.MoveAllToActiveOrBackoffQueue(framework.EventNodeAdd, nil, nil)
	if len(q.inFlightEvents) != 0 {
		t.Fatalf("recorded %d events with nothing in flight", len(q.inFlightEvents))
	}
	add(q, st.MakePod().Name("a").Obj())
	qa := mustPop(t, q, "default/pod:a")
	q.MoveAllToActiveOrBackoffQueue(framework.EventNodeAdd, nil, nil)
	q.MoveAllToActiveOrBackoffQueue(framework.EventNodeAdd, nil, nil) // recorded once
	add(q, st.MakePod().Name("b").Obj())
	qb := mustPop(t, q, "default/pod:b")
	if len(q.inFlightEvents) != 1 || q.numInFlight != 2 {
		t.Fatalf("%d events, %d in flight; want 1, 2", len(q.inFlightEvents), q.numInFlight)
	}
	// b was popped after the node came: it is parked.
	mustNoErr(t, "AddUnschedulable", q.AddUnschedulable(qb, Attempt{Events: nodeAddOrTaint}))
	if got := q.jobs[qb.ID].where; got != inUnschedulable {
		t.Errorf("b is in %s, want unschedulable", got)
	}
	// a may have missed it.
	mustNoErr(t, "AddUnschedulable", q.AddUnschedulable(qa, Attempt{Events: nodeAddOrTaint}))
	if got := q.jobs[qa.ID].where; got != inBackoff {
		t.Errorf("a is in %s, want backoff", got)
	}
	if q.numInFlight != 0 || len(q.inFlightEvents) != 0 {
		t.Errorf("in-flight bookkeeping not reset: %d, %d", q.numInFlight, len(q.inFlightEvents))
	}
}

// The in-flight count follows every way out of flight.
func TestInFlightCount(t *testing.T) {
	q, _ := newTestQueue(t, nil)
	pods := []*v1.Pod{st.MakePod().Name("a").Obj(), st.MakePod().Name("b").Obj(), st.MakePod().Name("c").Obj()}
	add(q, pods...)
	qa := mustPop(t, q, "default/pod:a")
	qb := mustPop(t, q, "default/pod:b")
	mustPop(t, q, "default/pod:c")
	if q.numInFlight != 3 {
		t.Fatalf("in flight = %d, want 3", q.numInFlight)
	}
	q.Done(qa.ID)
	q.Done(qa.ID) // no-op
	mustNoErr(t, "AddUnschedulable", q.AddUnschedulable(qb, Attempt{Err: errors.New("boom")}))
	q.PodRemoved(dialects.Resolver().JobID(pods[2]), pods[2].UID)
	if q.numInFlight != 0 {
		t.Errorf("in flight = %d, want 0", q.numInFlight)
	}
	// A failed bind reported for a job awaiting binding does not count.
	mustNoErr(t, "AddUnschedulable", q.AddUnschedulable(qa, Attempt{Err: errors.New("bind failed")}))
	if q.numInFlight != 0 {
		t.Errorf("in flight = %d, want 0", q.numInFlight)
	}
}

// An attempt that fails after the job was popped again (a bind failure of
// an earlier cycle) does not end the newer cycle, but makes it retry.
func TestStaleAddUnschedulable(t *testing.T) {
	q, _ := newTestQueue(t, nil)
	add(q, st.MakePod().Name("a").Group("g").Obj())
	old := mustPop(t, q, "default/g")
	q.Done(old.ID)
	add(q, st.MakePod().Name("b").Group("g").Obj())
	newer := mustPop(t, q, "default/g")
	mustNoErr(t, "AddUnschedulable", q.AddUnschedulable(old, Attempt{Err: errors.New("bind of a failed")}))
	if got := q.jobs[old.ID].where; got != inFlight {
		t.Fatalf("job is in %s, want still in flight", got)
	}
	q.Done(newer.ID)
	if got := q.jobs[old.ID].where; got != inActive {
		t.Errorf("after the newer cycle the job is in %s, want active", got)
	}
}

// parkedInterest always equals what the parked jobs registered, through
// parking, moving, and pods leaving; an event of a resource nobody parked
// wants moves nothing.
func TestParkedInterestFollowsParkedJobs(t *testing.T) {
	q, clk := newTestQueue(t, nil)
	check := func(step string) {
		t.Helper()
		want := map[framework.EventResource]int{}
		for _, e := range q.unschedulable {
			seen := map[framework.EventResource]bool{}
			if e.anyEvent {
				seen[framework.WildCard] = true
			}
			for _, pe := range e.events {
				if !e.anyEvent {
					seen[pe.Event.Resource] = true
				}
			}
			for r := range seen {
				want[r]++
			}
		}
		if !maps.Equal(q.parkedInterest, want) {
			t.Errorf("%s: parkedInterest = %v, want %v", step, q.parkedInterest, want)
		}
	}
	both := append(append([]framework.PluginEvent(nil), nodeAddOrTaint...), podDelete...)
	parkUnschedulable(t, q, "nodes", Attempt{Events: nodeAddOrTaint})
	parkUnschedulable(t, q, "both", Attempt{Events: append(both, nodeAddOrTaint...)})
	parkUnschedulable(t, q, "any", Attempt{AnyEvent: true, Events: podDelete})
	check("parked")
	if q.parkedInterest[framework.Node] != 2 || q.parkedInterest[framework.Pod] != 1 || q.parkedInterest[framework.WildCard] != 1 {
		t.Fatalf("parkedInterest = %v, want Node 2, Pod 1, * 1", q.parkedInterest)
	}
	clk.Step(2 * time.Second)

	// "any" takes every event: it leaves on the first one.
	q.MoveAllToActiveOrBackoffQueue(framework.ClusterEvent{Resource: "widgets.v1.example.com", ActionType: framework.Add}, nil, nil)
	check("after an event only the any-event job wants")
	if _, parked := q.unschedulable[framework.JobID{Namespace: "default", Name: "any"}]; parked {
		t.Error("the any-event job is still parked")
	}
	// Nobody parked wants pods added: nothing moves, and the counts stay.
	q.MoveAllToActiveOrBackoffQueue(framework.EventAssignedPodAdd, nil, nil)
	if len(q.unschedulable) != 2 {
		t.Errorf("%d jobs parked after an event nobody wants, want 2", len(q.unschedulable))
	}
	check("after an event nobody wants")
	q.MoveAllToActiveOrBackoffQueue(framework.EventNodeAdd, nil, nil)
	check("after node add")
	if len(q.unschedulable) != 0 || len(q.parkedInterest) != 0 {
		t.Errorf("after node add: parked %d, interest %v; want none", len(q.unschedulable), q.parkedInterest)
	}

	// A parked job whose pods leave takes its interest with it.
	q, _ = newTestQueue(t, nil)
	id := parkUnschedulable(t, q, "leaving", Attempt{Events: podDelete})
	check("parked again")
	q.PodRemoved(id, q.jobs[id].Pods[0].UID)
	check("after its pod left")
	if len(q.parkedInterest) != 0 {
		t.Errorf("interest %v left by a job that is gone", q.parkedInterest)
	}
}
