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
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/batch-scheduler/batch-scheduler/pkg/dialects"
	"github.com/batch-scheduler/batch-scheduler/pkg/framework/preemption"
	st "github.com/batch-scheduler/batch-scheduler/pkg/testing"
)

// A victim gang that goes whole frees room on every node it ran on, far
// beyond what its preemptor needs. A second preemptor racing the first
// takes that room, waiting for the first preemption's victims, rather
// than evicting another gang; a third of lower priority cannot take the
// room the second holds. Once the victims are gone both bind, on the
// nodes the gang left, and the other gang still runs.
func TestPreemptionBorrowsRoomOtherVictimsLeave(t *testing.T) {
	h := newHarness(t)
	ev := newEvictions(h)
	pods := map[string]*v1.Pod{}
	nodeOf := map[string]string{}
	for i := range 4 {
		node := fmt.Sprintf("n%d", i)
		h.addNode(node, "1")
		gang := "a"
		if i >= 2 {
			gang = "b"
		}
		p := running(fmt.Sprintf("%s-%d", gang, i), node, 10, "1", i).Group(gang).MinAvailable("2").Obj()
		pods[p.Name], nodeOf[p.Name] = p, node
		h.addPod(p)
	}
	first := st.MakePod().Name("first").Priority(100).Req(res{v1.ResourceCPU: "1"}).Obj()
	h.addPod(first)
	h.cycle()
	gone := ev.evicted()
	if !slices.Equal(gone, []string{"a-0", "a-1"}) && !slices.Equal(gone, []string{"b-2", "b-3"}) {
		t.Fatalf("first preemption evicted %v, want one gang whole", gone)
	}
	firstNode := h.sched.nominated.NodeOf(first.UID)
	// The evictions are done, but the cache has not seen the pods go.
	second := st.MakePod().Name("second").Priority(100).Req(res{v1.ResourceCPU: "1"}).Obj()
	h.addPod(second)
	h.cycle()
	if got := ev.evicted(); !slices.Equal(got, gone) {
		t.Fatalf("second preemption evicted more: %v, want only %v", got, gone)
	}
	secondNode := h.sched.nominated.NodeOf(second.UID)
	if secondNode == "" || secondNode == firstNode || secondNode != nodeOf[gone[0]] && secondNode != nodeOf[gone[1]] {
		t.Fatalf("second nominated to %q (first to %q), want the other node gang a leaves", secondNode, firstNode)
	}
	if got := h.preemptionAttempts(preemption.ResultBorrowed); got != 1 {
		t.Errorf("borrowed attempts %v, want 1", got)
	}
	if n := h.sched.nominated.WaitingFor(dialects.Resolver().JobID(second), h.sched.snapshot.Get); n != 1 {
		t.Errorf("second waits for %d victims, want the 1 on its node", n)
	}
	// A lower-priority preemptor finds the room held: it evicts the
	// other gang.
	third := st.MakePod().Name("third").Priority(50).Req(res{v1.ResourceCPU: "1"}).Obj()
	h.addPod(third)
	h.cycle()
	if got, want := ev.evicted(), []string{"a-0", "a-1", "b-2", "b-3"}; !slices.Equal(got, want) {
		t.Fatalf("third preemption evicted %v, want %v", got, want)
	}
	if n := h.sched.nominated.NodeOf(third.UID); n == "" || n == nodeOf[gone[0]] || n == nodeOf[gone[1]] {
		t.Fatalf("third nominated to %q, want a node of the other gang", n)
	}
	ev.gone(pods[gone[0]], pods[gone[1]])
	for range 2 {
		h.cycle()
	}
	bound := h.boundTo()
	if bound["first"] != firstNode || bound["second"] != secondNode {
		t.Errorf("bound %v, want first on %s and second on %s", bound, firstNode, secondNode)
	}
}
