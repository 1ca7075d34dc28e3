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

	st "github.com/batch-scheduler/batch-scheduler/pkg/testing"
)

// A gang whose preemption's victims are still terminating is not placed
// again while they hold the room its quorum needs and no other node has
// that room: its retries would place the pods whose room is free and
// undo them when the quorum fails, once per victim that goes. The pods'
// conditions keep what the preemption said. Once room frees elsewhere
// the retries run whole again, and the gang starts there without the
// last victim.
func TestGangWaitsForItsVictimsUnplaced(t *testing.T) {
	h := newHarness(t)
	ev := newEvictions(h)
	var victims []*v1.Pod
	for i := range 3 {
		node := fmt.Sprintf("n%d", i)
		h.addNode(node, "1")
		p := running("low-"+node, node, 10, "1", i).Obj()
		victims = append(victims, p)
		h.addPod(p)
	}
	gang := gangPods("high", 2, "2", 100, "1")
	for _, p := range gang {
		h.addPod(p)
	}
	h.cycle()
	evicted := ev.evicted()
	if len(evicted) != 2 {
		t.Fatalf("evicted %v, want 2 low pods", evicted)
	}
	var chosen []*v1.Pod
	var other *v1.Pod
	for _, p := range victims {
		if slices.Contains(evicted, p.Name) {
			chosen = append(chosen, p)
		} else {
			other = p
		}
	}
	before := len(h.statusPatches())
	msg := podScheduledCondition(h.apiPod(gang[0])).Message
	queueReason := func() string {
		d := h.cache.Queue().Dump()
		for _, j := range append(append(d.Unschedulable, d.Backoff...), d.Active...) {
			if j.ID == "default/high" {
				return j.LastFailure
			}
		}
		return ""
	}
	// The victims are still in the cache (terminating).
	for range 3 {
		h.requeueAll()
		h.cycle()
	}
	if got := queueReason(); !strings.Contains(got, "2 nominated pods wait for their victims to go") {
		t.Errorf("queue reason %q, want the wait for both victims", got)
	}
	// One victim goes: the other still holds a nominated pod's room, and
	// no other node is free.
	if _, err := h.cache.DeletePod(chosen[0]); err != nil {
		t.Fatal(err)
	}
	h.requeueAll()
	h.cycle()
	if got := h.boundTo(); len(got) != 0 {
		t.Fatalf("bound %v with a victim still running and no other room", got)
	}
	if got := queueReason(); !strings.Contains(got, "1 nominated pods wait for their victims to go") {
		t.Errorf("queue reason %q, want the wait for the last victim", got)
	}
	if got := ev.attempted(); len(got) != 2 {
		t.Errorf("evictions asked %v, want no more while the victims terminate", got)
	}
	if n := len(h.statusPatches()); n != before {
		t.Errorf("%d status writes while waiting for the victims, want none", n-before)
	}
	if got := podScheduledCondition(h.apiPod(gang[0])).Message; got != msg {
		t.Errorf("condition %q while waiting, want the preemption's %q kept", got, msg)
	}
	// The pod that was not chosen ends: its node and the victim's that
	// went hold the gang, which starts without waiting for the last one.
	if _, err := h.cache.DeletePod(other); err != nil {
		t.Fatal(err)
	}
	h.requeueAll()
	h.cycle()
	got := h.boundTo()
	if len(got) != 2 {
		t.Fatalf("bound %v once room freed elsewhere, want the whole gang", got)
	}
	for _, n := range got {
		if n == chosen[1].Spec.NodeName {
			t.Errorf("gang bound %v, onto the node its last victim still runs on", got)
		}
	}
}

// With victimWait spent, the retries run whole again, and say so: a
// victim stuck terminating keeps the pod's condition current. A pod that
// is no gang waits as a gang does.
func TestVictimWaitEnds(t *testing.T) {
	h := newHarness(t)
	ev := newEvictions(h)
	h.addNode("n1", "1")
	h.addPod(running("low", "n1", 10, "1", 1).Obj())
	high := st.MakePod().Name("high").Priority(100).Req(res{v1.ResourceCPU: "1"}).Obj()
	h.addPod(high)
	h.cycle()
	if got := ev.evicted(); len(got) != 1 {
		t.Fatalf("evicted %v, want low", got)
	}
	before := len(h.statusPatches())
	h.requeueAll()
	h.cycle()
	if n := len(h.statusPatches()); n != before {
		t.Fatalf("%d status writes while the wait lasts, want none", n-before)
	}
	h.sched.victimWait = time.Nanosecond
	h.requeueAll()
	h.cycle()
	want := "preemption: waiting for 1 preempted pods to terminate"
	if cond := podScheduledCondition(h.apiPod(high)); cond == nil || !strings.Contains(cond.Message, want) {
		t.Fatalf("condition %+v once the wait ended, want %q from a whole retry", cond, want)
	}
	if got := ev.attempted(); len(got) != 1 {
		t.Errorf("evictions asked %v, want only the first", got)
	}
}

// A victim that has ended but whose pod object stays (a Job's pod kept by
// its tracking finalizer after the eviction) holds no room: the job does
// not wait for it to be deleted.
func TestEndedVictimsDoNotHoldTheWait(t *testing.T) {
	h := newHarness(t)
	ev := newEvictions(h)
	var victims []*v1.Pod
	for i := range 2 {
		node := fmt.Sprintf("n%d", i)
		h.addNode(node, "1")
		p := running("low-"+node, node, 10, "1", i).Obj()
		victims = append(victims, p)
		h.addPod(p)
	}
	gang := gangPods("high", 2, "2", 100, "1")
	for _, p := range gang {
		h.addPod(p)
	}
	h.cycle()
	if got := ev.evicted(); len(got) != 2 {
		t.Fatalf("evicted %v, want both low pods", got)
	}
	for _, p := range victims {
		ended := p.DeepCopy()
		ended.Status.Phase = v1.PodFailed
		if err := h.cache.UpdatePod(p, ended); err != nil {
			t.Fatal(err)
		}
	}
	h.requeueAll()
	h.cycle()
	if got := h.boundTo(); len(got) != 2 {
		t.Fatalf("bound %v once the victims ended (their pods still there), want the whole gang", got)
	}
}
