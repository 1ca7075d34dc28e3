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
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
	"github.com/batch-scheduler/batch-scheduler/pkg/metrics/metricstest"
	"github.com/batch-scheduler/batch-scheduler/pkg/schedulingqueue"
	st "github.com/batch-scheduler/batch-scheduler/pkg/testing"
)

func TestScheduleOneBindsAPodThatFits(t *testing.T) {
	tests := []struct {
		name  string
		nodes []*v1.Node
		// bound are pods already running on the nodes.
		bound    []*v1.Pod
		pod      *v1.Pod
		wantNode string
	}{
		{
			name:     "single node",
			nodes:    []*v1.Node{st.MakeNode().Name("n1").Capacity(res{"cpu": "2", "pods": "110"}).Obj()},
			pod:      st.MakePod().Name("p").Req(res{"cpu": "1"}).Obj(),
			wantNode: "n1",
		},
		{
			name: "least allocated node wins",
			nodes: []*v1.Node{
				st.MakeNode().Name("n1").Capacity(res{"cpu": "4", "pods": "110"}).Obj(),
				st.MakeNode().Name("n2").Capacity(res{"cpu": "4", "pods": "110"}).Obj(),
				st.MakeNode().Name("n3").Capacity(res{"cpu": "4", "pods": "110"}).Obj(),
			},
			bound: []*v1.Pod{
				st.MakePod().Name("busy-1").Node("n1").Phase(v1.PodRunning).Req(res{"cpu": "3"}).Obj(),
				st.MakePod().Name("busy-3").Node("n3").Phase(v1.PodRunning).Req(res{"cpu": "2"}).Obj(),
			},
			pod:      st.MakePod().Name("p").Req(res{"cpu": "1"}).Obj(),
			wantNode: "n2",
		},
		{
			name: "only the node the selector and taints allow",
			nodes: []*v1.Node{
				st.MakeNode().Name("n1").Label("zone", "a").Capacity(res{"cpu": "4", "pods": "110"}).Obj(),
				st.MakeNode().Name("n2").Label("zone", "b").Taint("dedicated", "x", v1.TaintEffectNoSchedule).Capacity(res{"cpu": "4", "pods": "110"}).Obj(),
				st.MakeNode().Name("n3").Label("zone", "b").Capacity(res{"cpu": "4", "pods": "110"}).Obj(),
				st.MakeNode().Name("n4").Label("zone", "b").Unschedulable(true).Capacity(res{"cpu": "4", "pods": "110"}).Obj(),
			},
			pod:      st.MakePod().Name("p").NodeSelector(map[string]string{"zone": "b"}).Req(res{"cpu": "1"}).Obj(),
			wantNode: "n3",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			for _, n := range tt.nodes {
				h.addNodeObj(n)
			}
			for _, p := range tt.bound {
				h.addPod(p)
			}
			h.addPod(tt.pod)
			before := h.requestedCPU(tt.wantNode)

			h.cycle()

			bindings := h.bindings()
			if len(bindings) != 1 {
				t.Fatalf("got %d bindings, want 1: %+v", len(bindings), bindings)
			}
			b := bindings[0]
			if b.Namespace != tt.pod.Namespace || b.Name != tt.pod.Name || b.UID != tt.pod.UID || b.Target.Kind != "Node" || b.Target.Name != tt.wantNode {
				t.Errorf("binding = %s/%s (uid %s) -> %s %s, want %s/%s (uid %s) -> Node %s",
					b.Namespace, b.Name, b.UID, b.Target.Kind, b.Target.Name, tt.pod.Namespace, tt.pod.Name, tt.pod.UID, tt.wantNode)
			}

			// Assumed in the cache, on the node, with its binding finished.
			task := h.task(tt.pod)
			if task.Status != framework.TaskAssumed || task.NodeName != tt.wantNode {
				t.Errorf("task = %s on %q, want %s on %q", task.Status, task.NodeName, framework.TaskAssumed, tt.wantNode)
			}
			if td := h.taskDump(tt.pod); td.Assumed == nil || !td.Assumed.BindingFinished || td.Assumed.Expires == nil {
				t.Errorf("task dump %+v: want an assumption whose binding finished", td)
			}
			if got, want := h.requestedCPU(tt.wantNode), before+1000; got != want {
				t.Errorf("requested cpu on %s = %dm, want %dm", tt.wantNode, got, want)
			}
			if got := h.cache.Queue().Lengths(); got != (schedulingqueue.Lengths{AwaitingBinding: 1}) {
				t.Errorf("queue lengths = %+v, want the job awaiting binding", got)
			}

			evts := h.events()
			want := fmt.Sprintf("Normal Scheduled Successfully assigned %s/%s to %s", tt.pod.Namespace, tt.pod.Name, tt.wantNode)
			if !slices.Equal(evts, []string{want}) {
				t.Errorf("events = %q, want [%q]", evts, want)
			}
			if n := len(h.statusPatches()); n != 0 {
				t.Errorf("got %d status patches, want none", n)
			}

			if got := h.attempts(resultScheduled); got != 1 {
				t.Errorf("Attempts{scheduled} = %v, want 1", got)
			}
			if got := h.attempts(resultUnschedulable) + h.attempts(resultError); got != 0 {
				t.Errorf("Attempts{unschedulable}+Attempts{error} = %v, want 0", got)
			}
			if got := metricstest.CounterValue(t, h.metrics.PodsBound); got != 1 {
				t.Errorf("PodsBound = %v, want 1", got)
			}
			if got := metricstest.CounterValue(t, h.metrics.BindErrors); got != 0 {
				t.Errorf("BindErrors = %v, want 0", got)
			}
			if got := metricstest.HistogramCount(t, h.metrics.E2ELatency.ObserverMetric); got != 1 {
				t.Errorf("E2ELatency has %d observations, want 1 (one pod bound)", got)
			}
		})
	}
}

// decodeStatusPatch returns the PodScheduled condition of a status patch.
func decodeStatusPatch(t *testing.T, patch []byte) *v1.PodCondition {
	t.Helper()
	var pod v1.Pod
	if err := json.Unmarshal(patch, &pod); err != nil {
		t.Fatalf("decoding patch %s: %v", patch, err)
	}
	return podScheduledCondition(&pod)
}

func TestScheduleOneUnschedulable(t *testing.T) {
	small := func(name string) *v1.Node {
		return st.MakeNode().Name(name).Capacity(res{"cpu": "1", "pods": "110"}).Obj()
	}
	tests := []struct {
		name    string
		nodes   []*v1.Node
		wantMsg string
		// wantEvents are the registered events the job waits for, as
		// "<plugin>:<event>", sorted; "*" for any event.
		wantEvents []string
	}{
		{
			// No plugin rejected anything: any event may help.
			name:       "no nodes",
			wantMsg:    "no nodes available to schedule pods",
			wantEvents: withReservation(withGang("*")...),
		},
		{
			name:       "insufficient cpu everywhere",
			nodes:      []*v1.Node{small("n1"), small("n2"), small("n3")},
			wantMsg:    "0/3 nodes are available: 3 Insufficient cpu.",
			wantEvents: withReservation(withGang(fitEvents...)...),
		},
		{
			name: "several reasons, most frequent first",
			nodes: []*v1.Node{
				small("n1"),
				st.MakeNode().Name("n2").Unschedulable(true).Capacity(res{"cpu": "8", "pods": "110"}).Obj(),
				small("n3"),
			},
			wantMsg:    "0/3 nodes are available: 2 Insufficient cpu, 1 node(s) were unschedulable.",
			wantEvents: withReservation(withGang(append(slices.Clone(fitEvents), "NodeUnschedulable:NodeAdd", "NodeUnschedulable:NodeBecameSchedulable")...)...),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			for _, n := range tt.nodes {
				h.addNodeObj(n)
			}
			pod := st.MakePod().Name("big").Req(res{"cpu": "2"}).Obj()
			h.addPod(pod)

			h.cycle()

			if b := h.bindings(); len(b) != 0 {
				t.Errorf("got bindings %+v, want none", b)
			}
			if got := h.task(pod).Status; got != framework.TaskPending {
				t.Errorf("task status = %s, want %s", got, framework.TaskPending)
			}
			evts := h.events()
			if want := "Warning FailedScheduling " + tt.wantMsg; !slices.Equal(evts, []string{want}) {
				t.Errorf("events = %q, want [%q]", evts, want)
			}

			patches := h.statusPatches()
			if len(patches) != 1 {
				t.Fatalf("got %d status patches, want 1", len(patches))
			}
			if p := patches[0]; p.GetNamespace() != pod.Namespace || p.GetName() != pod.Name {
				t.Errorf("patched %s/%s, want %s/%s", p.GetNamespace(), p.GetName(), pod.Namespace, pod.Name)
			}
			cond := decodeStatusPatch(t, patches[0].GetPatch())
			if cond == nil || cond.Status != v1.ConditionFalse || cond.Reason != v1.PodReasonUnschedulable || cond.Message != tt.wantMsg || cond.LastTransitionTime.IsZero() {
				t.Errorf("patched condition = %+v, want PodScheduled=False/Unschedulable %q with a transition time", cond, tt.wantMsg)
			}
			// The patch applies: the API server has the condition.
			if cond := podScheduledCondition(h.apiPod(pod)); cond == nil || cond.Message != tt.wantMsg {
				t.Errorf("condition in the API = %+v, want message %q", cond, tt.wantMsg)
			}

			d := h.cache.Dump().Queue
			if d.Lengths != (schedulingqueue.Lengths{Unschedulable: 1}) {
				t.Fatalf("queue lengths = %+v, want the job unschedulable", d.Lengths)
			}
			// Gang's Permit rejects every job with a pod left unplaced; it
			// registers only a grown grant: the filters that rejected nodes
			// say what else may help.
			if got := d.Unschedulable[0]; got.LastFailure != tt.wantMsg || !slices.Equal(sorted(got.Events), tt.wantEvents) {
				t.Errorf("unschedulable job: last failure %q, events %q; want %q, %q", got.LastFailure, got.Events, tt.wantMsg, tt.wantEvents)
			}
			if got := h.attempts(resultUnschedulable); got != 1 {
				t.Errorf("Attempts{unschedulable} = %v, want 1", got)
			}
			if got := h.attempts(resultScheduled) + h.attempts(resultError); got != 0 {
				t.Errorf("Attempts{scheduled}+Attempts{error} = %v, want 0", got)
			}
		})
	}
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}

// A pod that already says why it is unschedulable is not patched again
// with the same; a new reason is patched, keeping when the condition
// became False.
func TestUnschedulablePatchesOnlyChanges(t *testing.T) {
	h := newHarness(t)
	h.addNode("n1", "1")
	pod := st.MakePod().Name("big").Req(res{"cpu": "2"}).Obj()
	h.addPod(pod)

	h.cycle()
	if n := len(h.statusPatches()); n != 1 {
		t.Fatalf("first attempt: got %d status patches, want 1", n)
	}
	h.events()
	// The informer delivers the patched pod: a status-only change, which
	// leaves the job parked.
	patched := h.apiPod(pod)
	first := podScheduledCondition(patched)
	if err := h.cache.UpdatePendingPod(pod, patched); err != nil {
		t.Fatal(err)
	}
	if got := h.cache.Queue().Lengths(); got != (schedulingqueue.Lengths{Unschedulable: 1}) {
		t.Fatalf("queue lengths after the status update = %+v, want the job still unschedulable", got)
	}

	// Second identical attempt: an event, but no patch.
	h.requeueAll()
	h.cycle()
	if n := len(h.statusPatches()); n != 1 {
		t.Errorf("second identical attempt: got %d status patches in all, want still 1", n)
	}
	if evts := h.events(); len(eventsWith(evts, "Warning FailedScheduling 0/1 nodes are available: 1 Insufficient cpu.")) != 1 {
		t.Errorf("second attempt: events = %q, want the FailedScheduling event again", evts)
	}

	// A new reason is written; the condition did not transition, so its
	// transition time stays.
	h.addNode("n2", "1")
	h.requeueAll()
	h.cycle()
	patches := h.statusPatches()
	if len(patches) != 2 {
		t.Fatalf("attempt with a new reason: got %d status patches in all, want 2", len(patches))
	}
	const wantMsg = "0/2 nodes are available: 2 Insufficient cpu."
	cond := podScheduledCondition(h.apiPod(pod))
	if cond == nil || cond.Message != wantMsg || cond.Status != v1.ConditionFalse {
		t.Fatalf("condition in the API = %+v, want False with %q", cond, wantMsg)
	}
	if !cond.LastTransitionTime.Equal(&first.LastTransitionTime) {
		t.Errorf("LastTransitionTime = %v, want it kept at %v: the status did not change", cond.LastTransitionTime, first.LastTransitionTime)
	}
}

func gangPod(name, group, minAvailable, cpu string) *v1.Pod {
	return st.MakePod().Name(name).Group(group).MinAvailable(minAvailable).Req(res{"cpu": cpu}).Obj()
}

func TestGangAllOrNothing(t *testing.T) {
	h := newHarness(t)
	// Room for one pod of 1.5 CPUs per node: the 4 pods of the gang fit
	// in the 6 CPUs of the 3 nodes together, but on 3 nodes only.
	for i := 1; i <= 3; i++ {
		h.addNode(fmt.Sprintf("n%d", i), "2")
	}
	var pods []*v1.Pod
	for i := range 4 {
		p := gangPod(fmt.Sprintf("w-%d", i), "train", "4", "1500m")
		pods = append(pods, p)
		h.addPod(p)
	}

	h.cycle()

	if b := h.bindings(); len(b) != 0 {
		t.Fatalf("got bindings %+v, want none", b)
	}
	for _, p := range pods {
		if got := h.task(p).Status; got != framework.TaskPending {
			t.Errorf("task %s = %s, want %s", p.Name, got, framework.TaskPending)
		}
	}
	for i := 1; i <= 3; i++ {
		if got := h.requestedCPU(fmt.Sprintf("n%d", i)); got != 0 {
			t.Errorf("n%d: requested %dm in the cache, want 0", i, got)
		}
	}
	// The cycle's tentative placements were taken off the snapshot.
	for _, ni := range h.sched.snapshot.NodeInfos() {
		if len(ni.Pods) != 0 || ni.Requested.MilliCPU != 0 {
			t.Errorf("snapshot node %s still has %d pods, %dm requested", ni.Name(), len(ni.Pods), ni.Requested.MilliCPU)
		}
	}
	const jobMsg = "gang default/train: 3 of 4 tasks could be placed, min-available 4"
	evts := eventsWith(h.events(), "Warning FailedScheduling ")
	if len(evts) != 4 {
		t.Errorf("got %d FailedScheduling events, want 4: %q", len(evts), evts)
	}
	for _, e := range evts {
		if !strings.Contains(e, jobMsg) {
			t.Errorf("event %q does not contain %q", e, jobMsg)
		}
	}
	// The pod that found no node also says why.
	if want := "Warning FailedScheduling " + jobMsg + "; 0/3 nodes are available: 3 Insufficient cpu."; !slices.Contains(evts, want) {
		t.Errorf("events %q lack %q", evts, want)
	}
	if n := len(h.statusPatches()); n != 4 {
		t.Errorf("got %d status patches, want 4", n)
	}
	d := h.cache.Dump().Queue
	if d.Lengths != (schedulingqueue.Lengths{Unschedulable: 1}) {
		t.Fatalf("queue lengths = %+v, want the gang unschedulable", d.Lengths)
	}
	if got := d.Unschedulable[0].LastFailure; got != jobMsg {
		t.Errorf("last failure = %q, want the gang's verdict %q", got, jobMsg)
	}

	// A fourth node: the gang fits, one task per node.
	h.addNode("n4", "2")
	h.cache.MoveAllToActiveOrBackoffQueue(framework.EventNodeAdd, nil, nil)
	h.cycle()

	bound := h.boundTo()
	if len(bound) != 4 {
		t.Fatalf("bound %v, want all 4 pods", bound)
	}
	nodes := map[string]bool{}
	for pod, node := range bound {
		if nodes[node] {
			t.Errorf("pod %s bound to %s, which already has another task", pod, node)
		}
		nodes[node] = true
	}
	for _, p := range pods {
		if got := h.task(p); got.Status != framework.TaskAssumed || got.NodeName != bound[p.Name] {
			t.Errorf("task %s = %s on %q, want assumed on %q", p.Name, got.Status, got.NodeName, bound[p.Name])
		}
	}
	if got := len(eventsWith(h.events(), "Normal Scheduled ")); got != 4 {
		t.Errorf("got %d Scheduled events, want 4", got)
	}
	if got := h.attempts(resultScheduled); got != 1 {
		t.Errorf("Attempts{scheduled} = %v, want 1", got)
	}
	if got := h.attempts(resultUnschedulable); got != 1 {
		t.Errorf("Attempts{unschedulable} = %v, want 1", got)
	}
}

// fitEvents are the NodeResourcesFit plugin's events, sorted.
var fitEvents = []string{"NodeResourcesFit:AssignedPodDelete", "NodeResourcesFit:AssignedPodScaleDown", "NodeResourcesFit:ExternalUsageDecrease", "NodeResourcesFit:GrantIncrease", "NodeResourcesFit:NodeAdd", "NodeResourcesFit:NodeAllocatableChange"}

// gangEvents are the events the Gang plugin registers, sorted: a change of
// the gang's own group object, and a grown grant.
var gangEvents = []string{"Gang:GangGroupChange", "Gang:GrantIncrease"}

// withReservation returns events with the Reservation plugin's (a
// PostFilter plugin of the default profile), sorted: a job that may not
// reserve for its queue's share may once the shares move.
func withReservation(events ...string) []string {
	return sorted(append(slices.Clone(events), "Reservation:QueueChange"))
}

// withGang returns events with gangEvents, sorted.
func withGang(events ...string) []string { return sorted(append(events, gangEvents...)) }

func TestGangWaitsForItsTasks(t *testing.T) {
	h := newHarness(t)
	h.addNode("n1", "8")
	pods := []*v1.Pod{gangPod("t-0", "late", "3", "1"), gangPod("t-1", "late", "3", "1")}
	for _, p := range pods {
		h.addPod(p)
	}

	h.cycle()

	if b := h.bindings(); len(b) != 0 {
		t.Fatalf("got bindings %+v, want none", b)
	}
	const msg = "waiting for tasks: 2 of min-available 3 exist"
	evts := h.events()
	if want := []string{"Warning FailedScheduling " + msg, "Warning FailedScheduling " + msg}; !slices.Equal(evts, want) {
		t.Errorf("events = %q, want %q", evts, want)
	}
	d := h.cache.Dump().Queue
	if d.Lengths != (schedulingqueue.Lengths{Unschedulable: 1}) {
		t.Fatalf("queue lengths = %+v, want the gang unschedulable", d.Lengths)
	}
	// Only the Gang plugin rejected it. A gang waiting for its own pods
	// waits for them (or the timeout); of the cluster events only a grown
	// grant where one of its pods fits, or a change of its own group
	// object, retries it (the events Gang registers).
	if got := sorted(d.Unschedulable[0].Events); !slices.Equal(got, gangEvents) {
		t.Errorf("events the gang waits for = %q, want only %q", got, gangEvents)
	}

	// The third task arrives: a relevant pod event requeues the gang.
	third := gangPod("t-2", "late", "3", "1")
	h.addPod(third)
	h.cycle()
	if got := len(h.boundTo()); got != 3 {
		t.Errorf("bound %d pods, want 3", got)
	}
}

// With min-available 2 of 3 and room for 2, Permit lets the 2 placements
// through: they are bound, and the third pod says why it was not, and
// waits with its job for an event that may help it.
func TestGangPartialPlacement(t *testing.T) {
	h := newHarness(t)
	h.addNode("n1", "1")
	h.addNode("n2", "1")
	pods := []*v1.Pod{gangPod("w-0", "mpi", "2", "1"), gangPod("w-1", "mpi", "2", "1"), gangPod("w-2", "mpi", "2", "1")}
	for _, p := range pods {
		h.addPod(p)
	}

	h.cycle()

	bound := h.boundTo()
	if len(bound) != 2 || bound["w-0"] == bound["w-1"] || bound["w-2"] != "" {
		t.Fatalf("bound %v, want w-0 and w-1 on distinct nodes", bound)
	}
	for _, p := range pods[:2] {
		if got := h.task(p).Status; got != framework.TaskAssumed {
			t.Errorf("task %s = %s, want %s", p.Name, got, framework.TaskAssumed)
		}
	}
	if got := h.task(pods[2]).Status; got != framework.TaskPending {
		t.Errorf("task w-2 = %s, want %s", got, framework.TaskPending)
	}
	const msg = "0/2 nodes are available: 2 Insufficient cpu."
	evts := h.events()
	if got := eventsWith(evts, "Warning FailedScheduling "); !slices.Equal(got, []string{"Warning FailedScheduling " + msg}) {
		t.Errorf("FailedScheduling events = %q, want one for w-2 saying %q", got, msg)
	}
	if got := len(eventsWith(evts, "Normal Scheduled ")); got != 2 {
		t.Errorf("got %d Scheduled events, want 2", got)
	}
	patches := h.statusPatches()
	if len(patches) != 1 || patches[0].GetName() != "w-2" {
		t.Errorf("status patches = %v, want one of w-2", patches)
	}
	if got := h.attempts(resultScheduled); got != 1 {
		t.Errorf("Attempts{scheduled} = %v, want 1", got)
	}
	d := h.cache.Dump().Queue
	if d.Lengths != (schedulingqueue.Lengths{Unschedulable: 1}) {
		t.Fatalf("queue lengths = %+v, want the job parked for w-2", d.Lengths)
	}
	// Only NodeResourcesFit rejected anything (Gang's Permit passed): the
	// job waits for its events.
	if got, want := sorted(d.Unschedulable[0].Events), fitEvents; !slices.Equal(got, want) || d.Unschedulable[0].LastFailure != msg {
		t.Errorf("parked job waits for %q with last failure %q, want %q and %q", got, d.Unschedulable[0].LastFailure, want, msg)
	}

	// The informer reports the two pods bound.
	for _, p := range pods[:2] {
		if err := h.cache.RemovePendingPod(p); err != nil {
			t.Fatal(err)
		}
		b := p.DeepCopy()
		b.Spec.NodeName = bound[p.Name]
		if err := h.cache.AddPod(b); err != nil {
			t.Fatal(err)
		}
	}
	// A node is added: w-2 is tried again and lands there.
	h.addNode("n3", "1")
	h.cache.MoveAllToActiveOrBackoffQueue(framework.EventNodeAdd, nil, nil)
	if got := h.cache.Queue().Lengths(); got.Active != 1 {
		t.Fatalf("queue lengths after NodeAdd = %+v, want the job active (w-2 must not be stuck)", got)
	}
	h.cycle()
	if got := h.boundTo()["w-2"]; got != "n3" {
		t.Errorf("w-2 bound to %q, want n3", got)
	}
}

// A gang that already runs min-available tasks passes Permit with nothing
// placed: its pod that does not fit is unschedulable with its own reason.
func TestGangAtMinAvailableNothingPlaced(t *testing.T) {
	h := newHarness(t)
	h.addNode("n1", "2")
	h.addPod(st.MakePod().Name("w-0").Group("mpi").MinAvailable("2").Node("n1").Phase(v1.PodRunning).Req(res{"cpu": "1"}).Obj())
	h.addPod(st.MakePod().Name("w-1").Group("mpi").MinAvailable("2").Node("n1").Phase(v1.PodRunning).Req(res{"cpu": "1"}).Obj())
	h.addPod(gangPod("w-2", "mpi", "2", "1"))

	h.cycle()

	if b := h.bindings(); len(b) != 0 {
		t.Fatalf("got bindings %+v, want none", b)
	}
	if evts := h.events(); !slices.Equal(evts, []string{"Warning FailedScheduling 0/1 nodes are available: 1 Insufficient cpu."}) {
		t.Errorf("events = %q", evts)
	}
	if got := h.attempts(resultUnschedulable); got != 1 {
		t.Errorf("Attempts{unschedulable} = %v, want 1", got)
	}
}

func TestNoProfileRequeuesWithError(t *testing.T) {
	h := newHarness(t)
	h.addNode("n1", "4")
	pod := st.MakePod().Name("p").Scheduler("other").Req(res{"cpu": "1"}).Obj()
	h.addPod(pod)

	h.cycle()

	if b := h.bindings(); len(b) != 0 {
		t.Errorf("got bindings %+v, want none", b)
	}
	if evts := h.events(); len(evts) != 0 {
		t.Errorf("events = %q, want none", evts)
	}
	if got := metricstest.CounterValue(t, h.metrics.Attempts.WithLabelValues(resultError, "other")); got != 1 {
		t.Errorf(`Attempts{error, "other"} = %v, want 1`, got)
	}
	d := h.cache.Dump().Queue
	if d.Lengths != (schedulingqueue.Lengths{Backoff: 1}) {
		t.Fatalf("queue lengths = %+v, want the job backing off", d.Lengths)
	}
	if want := `no profile for scheduler name "other"`; !strings.Contains(d.Backoff[0].LastFailure, want) {
		t.Errorf("last failure = %q, want it to contain %q", d.Backoff[0].LastFailure, want)
	}
}

// Errors of plugins end the cycle: the job is retried after backoff, what
// was placed is unreserved and taken off the snapshot, nothing is bound
// and nothing is reported to the pod.
func TestCycleErrorsRequeue(t *testing.T) {
	boom := func() *framework.Status { return framework.AsStatus(errors.New("boom")) }
	tests := []struct {
		name string
		hook *hookPlugin
		// wantUnreserved counts the Unreserve calls of w-0, the first pod.
		wantUnreserved int
		wantFailure    string
	}{
		{
			name:        "pre-filter error",
			hook:        &hookPlugin{preFilter: func(*framework.Job) *framework.Status { return boom() }},
			wantFailure: "pre-filter: ",
		},
		{
			name: "filter error",
			hook: &hookPlugin{filter: func(pod *v1.Pod, _ *framework.NodeInfo) *framework.Status {
				if pod.Name == "w-1" {
					return boom()
				}
				return nil
			}},
			wantUnreserved: 1,
			wantFailure:    "filtering nodes for pod default/w-1",
		},
		{
			name: "reserve error",
			hook: &hookPlugin{reserve: func(pod *v1.Pod, _ string) *framework.Status {
				if pod.Name == "w-1" {
					return boom()
				}
				return nil
			}},
			wantUnreserved: 1,
			wantFailure:    "reserving node",
		},
		{
			name:           "permit error",
			hook:           &hookPlugin{permit: func(*framework.Job, map[string]string) *framework.Status { return boom() }},
			wantUnreserved: 1,
			wantFailure:    "permit: ",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarnessWith(t, harnessConfig{hook: tt.hook})
			h.addNode("n1", "4")
			pods := []*v1.Pod{gangPod("w-0", "g", "2", "1"), gangPod("w-1", "g", "2", "1")}
			for _, p := range pods {
				h.addPod(p)
			}

			h.cycle()

			if b := h.bindings(); len(b) != 0 {
				t.Errorf("got bindings %+v, want none", b)
			}
			if evts := h.events(); len(evts) != 0 {
				t.Errorf("events = %q, want none", evts)
			}
			if n := len(h.statusPatches()); n != 0 {
				t.Errorf("got %d status patches, want none", n)
			}
			if got := h.hook.unreserveCount(pods[0]); got != tt.wantUnreserved {
				t.Errorf("w-0 unreserved %d times, want %d", got, tt.wantUnreserved)
			}
			for _, ni := range h.sched.snapshot.NodeInfos() {
				if len(ni.Pods) != 0 {
					t.Errorf("snapshot node %s keeps %d tentative pods", ni.Name(), len(ni.Pods))
				}
			}
			for _, p := range pods {
				if got := h.task(p).Status; got != framework.TaskPending {
					t.Errorf("task %s = %s, want pending", p.Name, got)
				}
			}
			if got := h.attempts(resultError); got != 1 {
				t.Errorf("Attempts{error} = %v, want 1", got)
			}
			d := h.cache.Dump().Queue
			if d.Lengths != (schedulingqueue.Lengths{Backoff: 1}) {
				t.Fatalf("queue lengths = %+v, want the job backing off", d.Lengths)
			}
			if !strings.Contains(d.Backoff[0].LastFailure, tt.wantFailure) || !strings.Contains(d.Backoff[0].LastFailure, "boom") {
				t.Errorf("last failure = %q, want it to contain %q and boom", d.Backoff[0].LastFailure, tt.wantFailure)
			}
		})
	}
}

// Rejections by Reserve and Permit make the job unschedulable, naming the
// plugin's reason, and register the plugin's events.
func TestReserveAndPermitRejections(t *testing.T) {
	reject := func(msg string) *framework.Status { return framework.NewStatus(framework.Unschedulable, msg) }
	tests := []struct {
		name       string
		hook       *hookPlugin
		wantMsg    string
		wantEvents []string
	}{
		{
			// The pod is not placed, so Gang's Permit rejects the job too
			// (registering a grown grant), but its verdict on a single pod
			// adds nothing to the pod's reason.
			name:       "reserve",
			hook:       &hookPlugin{reserve: func(*v1.Pod, string) *framework.Status { return reject("no lease") }},
			wantMsg:    "no lease",
			wantEvents: withReservation(withGang("TestHook:NodeLabelChange")...),
		},
		{
			name:       "permit",
			hook:       &hookPlugin{permit: func(*framework.Job, map[string]string) *framework.Status { return reject("not now") }},
			wantMsg:    "not now",
			wantEvents: withReservation("TestHook:NodeLabelChange"),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarnessWith(t, harnessConfig{hook: tt.hook})
			h.addNode("n1", "4")
			pod := st.MakePod().Name("p").Req(res{"cpu": "1"}).Obj()
			h.addPod(pod)

			h.cycle()

			if b := h.bindings(); len(b) != 0 {
				t.Errorf("got bindings %+v, want none", b)
			}
			if evts := h.events(); !slices.Equal(evts, []string{"Warning FailedScheduling " + tt.wantMsg}) {
				t.Errorf("events = %q, want the rejection", evts)
			}
			if got := h.task(pod).Status; got != framework.TaskPending {
				t.Errorf("task = %s, want pending", got)
			}
			d := h.cache.Dump().Queue
			if d.Lengths != (schedulingqueue.Lengths{Unschedulable: 1}) {
				t.Fatalf("queue lengths = %+v, want the job unschedulable", d.Lengths)
			}
			if got := sorted(d.Unschedulable[0].Events); !slices.Equal(got, tt.wantEvents) {
				t.Errorf("job waits for %q, want %q", got, tt.wantEvents)
			}
			if tt.name == "reserve" {
				// A failed Reserve unreserves the pod itself; nothing else
				// was placed to undo.
				if got := h.hook.unreserveCount(pod); got != 1 {
					t.Errorf("p unreserved %d times, want 1", got)
				}
			}
		})
	}
}

// When the cache refuses an assumption (the pod changed under the cycle),
// what was assumed is forgotten and the job retried.
func TestAssumeFailureRollsBack(t *testing.T) {
	var h *harness
	w1 := gangPod("w-1", "g", "2", "1")
	hook := &hookPlugin{reserve: func(pod *v1.Pod, _ string) *framework.Status {
		if pod.Name == "w-1" {
			// The informer reports w-1 deleted during the cycle.
			if err := h.cache.RemovePendingPod(w1); err != nil {
				return framework.AsStatus(err)
			}
		}
		return nil
	}}
	h = newHarnessWith(t, harnessConfig{hook: hook})
	h.addNode("n1", "4")
	w0 := gangPod("w-0", "g", "2", "1")
	h.addPod(w0)
	h.addPod(w1)

	h.cycle()

	if b := h.bindings(); len(b) != 0 {
		t.Errorf("got bindings %+v, want none", b)
	}
	if got := h.task(w0).Status; got != framework.TaskPending {
		t.Errorf("w-0 = %s, want pending again", got)
	}
	if got := h.requestedCPU("n1"); got != 0 {
		t.Errorf("n1 requested %dm, want 0", got)
	}
	if got := hook.unreserveCount(w0); got != 1 {
		t.Errorf("w-0 unreserved %d times, want 1", got)
	}
	if got := h.attempts(resultError); got != 1 {
		t.Errorf("Attempts{error} = %v, want 1", got)
	}
	if got := h.attempts(resultScheduled); got != 0 {
		t.Errorf("Attempts{scheduled} = %v, want 0", got)
	}
	d := h.cache.Dump().Queue
	if d.Lengths != (schedulingqueue.Lengths{Backoff: 1}) {
		t.Fatalf("queue lengths = %+v, want the job backing off", d.Lengths)
	}
	if want := "assuming pod default/w-1"; !strings.Contains(d.Backoff[0].LastFailure, want) {
		t.Errorf("last failure = %q, want it to contain %q", d.Backoff[0].LastFailure, want)
	}
}

// A job popped again while all its pods are assumed has nothing to place.
func TestNothingLeftToPlace(t *testing.T) {
	h := newHarness(t)
	h.addNode("n1", "4")
	pod := st.MakePod().Name("p").Req(res{"cpu": "1"}).Obj()
	h.addPod(pod)
	h.cycle()
	if len(h.bindings()) != 1 {
		t.Fatalf("first cycle did not bind")
	}
	// A relevant change of the assumed pod requeues its job.
	changed := pod.DeepCopy()
	changed.Labels = map[string]string{"changed": "yes"}
	if err := h.cache.UpdatePendingPod(pod, changed); err != nil {
		t.Fatal(err)
	}

	h.cycle()

	if got := len(h.bindings()); got != 1 {
		t.Errorf("got %d bindings in all, want still 1", got)
	}
	if got := h.attempts(resultScheduled) + h.attempts(resultUnschedulable) + h.attempts(resultError); got != 1 {
		t.Errorf("attempts in all = %v, want 1: the empty cycle is not an attempt", got)
	}
	if got := h.cache.Queue().Lengths(); got != (schedulingqueue.Lengths{AwaitingBinding: 1}) {
		t.Errorf("queue lengths = %+v, want the job awaiting binding", got)
	}
}
