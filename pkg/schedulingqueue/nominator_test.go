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
	"slices"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/batch-scheduler/batch-scheduler/pkg/dialects"
	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
	st "github.com/batch-scheduler/batch-scheduler/pkg/testing"
)

// others lists the nominations a cycle must respect, in pod-name order,
// and follows every change of the nominations.
func TestNominatorOthers(t *testing.T) {
	pod := func(name string) *v1.Pod {
		return st.MakePod().Name(name).UID(name).Req(map[v1.ResourceName]string{v1.ResourceCPU: "2"}).Obj()
	}
	jobA := framework.JobID{Namespace: "default", Name: "a", Gang: true}
	jobB := framework.JobID{Namespace: "default", Name: "b", Gang: true}
	jobC := framework.JobID{Namespace: "default", Name: "c", Gang: true}
	a1, a2, a3, b1 := pod("a1"), pod("a2"), pod("a3"), pod("b1")
	n := NewNominator(nil)
	n.Nominate(jobA, 10, []*v1.Pod{a2, a1}, map[string]string{"a1": "n1", "a2": "n2"}, nil)
	n.Nominate(jobB, 5, []*v1.Pod{b1}, map[string]string{"b1": "n1"}, map[types.UID]string{"v": "n1"})
	names := func(noms []Nomination) []string {
		var out []string
		for _, nom := range noms {
			out = append(out, nom.Pod.Name)
		}
		return out
	}
	steps := []struct {
		what     string
		change   func()
		job      framework.JobID
		priority int32
		want     []string
	}{
		{what: "every other job", job: jobC, priority: 0, want: []string{"a1", "a2", "b1"}},
		{what: "not the cycle's own job", job: jobA, priority: 0, want: []string{"b1"}},
		{what: "only at least the priority", job: jobC, priority: 6, want: []string{"a1", "a2"}},
		{what: "after a drop", change: func() { n.Drop("a1") }, job: jobC, want: []string{"a2", "b1"}},
		{what: "after a renomination", change: func() {
			n.Nominate(jobA, 10, []*v1.Pod{a3}, map[string]string{"a3": "n3"}, nil)
		}, job: jobC, want: []string{"a3", "b1"}},
		{what: "after placing", change: func() { n.Placed(jobB, []*v1.Pod{b1}) }, job: jobC, want: []string{"a3"}},
		{what: "after clearing", change: func() { n.Clear(jobA) }, job: jobC, want: nil},
	}
	for _, s := range steps {
		if s.change != nil {
			s.change()
		}
		if got := names(n.Others(s.job, s.priority)); !slices.Equal(got, s.want) {
			t.Errorf("%s: others = %v, want %v", s.what, got, s.want)
		}
	}
	if _, waiting := n.victims[jobB]; waiting {
		t.Errorf("job b's victims are still awaited after its last nomination was placed")
	}
}

// A nomination carries its pod as assumed on its node, with its requests,
// for the snapshot.
func TestNominationTask(t *testing.T) {
	p := st.MakePod().Name("p").UID("p").Req(map[v1.ResourceName]string{v1.ResourceCPU: "1500m"}).Obj()
	n := NewNominator(nil)
	job := dialects.Resolver().JobID(p)
	n.Nominate(job, 0, []*v1.Pod{p}, map[string]string{"p": "n7"}, nil)
	noms := n.Others(framework.JobID{Name: "other"}, 0)
	if len(noms) != 1 {
		t.Fatalf("others = %d nominations, want 1", len(noms))
	}
	task := noms[0].Task
	if task == nil || task.Status != framework.TaskAssumed || task.NodeName != "n7" || task.PodObject().Spec.NodeName != "n7" ||
		task.Requests.MilliCPU != 1500 || task.Job != job || !task.Counted {
		t.Errorf("task = %+v, want p assumed on n7 with 1500m CPU, counted, of job %v", task, job)
	}
	if p.Spec.NodeName != "" {
		t.Errorf("the nomination changed the pending pod")
	}
}

// moves records the events a Nominator raises.
type moves struct{ pods []string }

func (m *moves) MoveAllToActiveOrBackoffQueue(event framework.ClusterEvent, oldObj, _ any) {
	if event != framework.EventAssignedPodDelete {
		return
	}
	pod := oldObj.(*v1.Pod)
	m.pods = append(m.pods, pod.Name+"@"+pod.Spec.NodeName)
}

// Giving up drops the job's nominations and victims, releases the room
// each held on its node (as if a pod there went away) and returns the
// pods whose nominatedNodeName is to be cleared; other jobs keep theirs.
func TestNominatorGiveUp(t *testing.T) {
	pod := func(name string) *v1.Pod { return st.MakePod().Name(name).UID(name).Obj() }
	jobA := framework.JobID{Namespace: "default", Name: "a", Gang: true}
	jobB := framework.JobID{Namespace: "default", Name: "b", Gang: true}
	m := &moves{}
	n := NewNominator(m)
	a1, a2, b1 := pod("a1"), pod("a2"), pod("b1")
	n.Nominate(jobA, 10, []*v1.Pod{a2, a1}, map[string]string{"a1": "n1", "a2": "n2"}, map[types.UID]string{"v": "n1"})
	n.Nominate(jobB, 10, []*v1.Pod{b1}, map[string]string{"b1": "n3"}, nil)
	pods := n.GiveUp(jobA)
	var got []string
	for _, p := range pods {
		got = append(got, p.Name)
	}
	if !slices.Equal(got, []string{"a1", "a2"}) {
		t.Errorf("GiveUp returned %v, want a1 and a2 by name", got)
	}
	if !slices.Equal(m.pods, []string{"a1@n1", "a2@n2"}) {
		t.Errorf("released %v, want the room of a1 on n1 and of a2 on n2", m.pods)
	}
	if n.Has(jobA) || n.NodeOf("a1") != "" {
		t.Errorf("job a still has nominations after giving up")
	}
	if _, waiting := n.victims[jobA]; waiting {
		t.Errorf("job a still waits for its victims after giving up")
	}
	if n.NodeOf("b1") != "n3" {
		t.Errorf("job b lost its nomination")
	}
	if pods := n.GiveUp(jobA); len(pods) != 0 || len(m.pods) != 2 {
		t.Errorf("a second GiveUp returned %v and released %v, want nothing more", pods, m.pods)
	}
}

// A re-reservation keeps, for each node it still holds, the time since
// when it has held it; a node newly held starts now, as does Made.
func TestReservationHeldSince(t *testing.T) {
	pod := func(name string) *v1.Pod { return st.MakePod().Name(name).UID(name).Obj() }
	job := framework.JobID{Namespace: "default", Name: "g", Gang: true}
	p1, p2 := pod("p1"), pod("p2")
	n := NewNominator(nil)
	n.Reserve(job, 0, []*v1.Pod{p1, p2}, map[string]string{"p1": "a", "p2": "b"}, framework.Reservation{Fits: true, Nodes: []string{"a", "b"}}, nil)
	first, ok := n.Reservation(job)
	if !ok || len(first.HeldSince) != 2 {
		t.Fatalf("Reservation = %+v, %v; want a and b held", first, ok)
	}
	time.Sleep(2 * time.Millisecond)
	n.Reserve(job, 0, []*v1.Pod{p1, p2}, map[string]string{"p1": "b", "p2": "c"}, framework.Reservation{Fits: true, Nodes: []string{"b", "c"}}, nil)
	second, _ := n.Reservation(job)
	if !second.HeldSince["b"].Equal(first.HeldSince["b"]) {
		t.Errorf("b held since %v, want %v: it was held without a break", second.HeldSince["b"], first.HeldSince["b"])
	}
	if _, ok := second.HeldSince["a"]; ok || !second.HeldSince["c"].After(first.HeldSince["b"]) {
		t.Errorf("HeldSince = %v, want b kept, c new, a gone", second.HeldSince)
	}
	// Made is the time of each reservation, not of the first.
	if first.Made.IsZero() || !second.Made.After(first.Made) || !second.Made.Equal(second.HeldSince["c"]) {
		t.Errorf("Made = %v then %v, want the time of each Reserve (c held since %v)", first.Made, second.Made, second.HeldSince["c"])
	}
	// Given up and reserved again: a break, so everything starts anew.
	n.Clear(job)
	n.Reserve(job, 0, []*v1.Pod{p1}, map[string]string{"p1": "b"}, framework.Reservation{Fits: true, Nodes: []string{"b"}}, nil)
	if third, _ := n.Reservation(job); !third.HeldSince["b"].After(first.HeldSince["b"]) {
		t.Errorf("b held since %v after a break, want a new time", third.HeldSince["b"])
	}
}

// GoingVictims reports the victims of every preemption still on their
// nodes, terminating or not, walks only the nodes with victims, and
// stops indexing victims once they are gone: nothing is left indexed when
// their preemptors no longer wait.
func TestNominatorGoingVictims(t *testing.T) {
	v1a, v2a, v3a, v4b, other := runningOn("v1", "n1"), runningOn("v2", "n1"), runningOn("v3", "n2"), runningOn("v4", "n2"), runningOn("x", "n2")
	terminating := metav1.Now()
	v2a.DeletionTimestamp = &terminating
	nodes := map[string]*framework.NodeInfo{
		"n1": framework.NewNodeInfo(st.MakeNode().Name("n1").Obj(), v1a, v2a),
		"n2": framework.NewNodeInfo(st.MakeNode().Name("n2").Obj(), v3a, v4b, other),
	}
	get := func(name string) (*framework.NodeInfo, bool) { ni, ok := nodes[name]; return ni, ok }
	jobA := framework.JobID{Namespace: "default", Name: "a", Gang: true}
	jobB := framework.JobID{Namespace: "default", Name: "b", Gang: true}
	jobC := framework.JobID{Namespace: "default", Name: "c", Gang: true}
	n := NewNominator(nil)
	n.Nominate(jobA, 10, nil, nil, map[types.UID]string{"v1": "n1", "v2": "n1", "v3": "n2"})
	n.Nominate(jobB, 10, nil, nil, map[types.UID]string{"v4": "n2"})
	// The same victim awaited by two preemptors stays indexed until both
	// are done with it.
	n.Nominate(jobC, 10, nil, nil, map[types.UID]string{"v3": "n2"})
	going := func() []string { return goingNames(n, get) }
	indexed := func() []string {
		var out []string
		for node, on := range n.onNode {
			for uid := range on {
				out = append(out, string(uid)+"@"+node)
			}
		}
		slices.Sort(out)
		return out
	}
	steps := []struct {
		what        string
		change      func()
		want, index []string
	}{
		{what: "every preemption's, the terminating one too", want: []string{"v1", "v2", "v3", "v4"},
			index: []string{"v1@n1", "v2@n1", "v3@n2", "v4@n2"}},
		{what: "a victim gone from its node", change: func() { nodes["n1"].RemovePod("v1") }, want: []string{"v2", "v3", "v4"},
			index: []string{"v2@n1", "v3@n2", "v4@n2"}},
		{what: "one of two preemptors waiting for the same victim done", change: func() { n.Clear(jobC) }, want: []string{"v2", "v3", "v4"},
			index: []string{"v2@n1", "v3@n2", "v4@n2"}},
		{what: "the other done too", change: func() { n.Clear(jobA) }, want: []string{"v4"}, index: []string{"v4@n2"}},
		{what: "a node gone", change: func() { delete(nodes, "n2") }, want: nil, index: nil},
		{what: "its preemptor placed", change: func() { n.Placed(jobB, nil) }, want: nil, index: nil},
	}
	for _, s := range steps {
		if s.change != nil {
			s.change()
		}
		if got := going(); !slices.Equal(got, s.want) {
			t.Errorf("%s: going %v, want %v", s.what, got, s.want)
		}
		if got := indexed(); !slices.Equal(got, s.index) {
			t.Errorf("%s: indexed %v, want %v", s.what, got, s.index)
		}
	}
	if len(n.victims) != 0 {
		t.Errorf("victims still awaited: %v", n.victims)
	}
}

// A job that borrows other preemptions' victims waits for them while they
// are still going: still some preemption's victims, or terminating. One
// whose preemption gave up (an eviction refused) and that keeps running
// is no longer waited for, nor is one gone from its node.
func TestNominatorBorrow(t *testing.T) {
	v1a, v2a, v3b := runningOn("v1", "n1"), runningOn("v2", "n1"), runningOn("v3", "n2")
	nodes := map[string]*framework.NodeInfo{
		"n1": framework.NewNodeInfo(st.MakeNode().Name("n1").Obj(), v1a, v2a),
		"n2": framework.NewNodeInfo(st.MakeNode().Name("n2").Obj(), v3b),
	}
	get := func(name string) (*framework.NodeInfo, bool) { ni, ok := nodes[name]; return ni, ok }
	// update replaces v2's task on n1, as the cache does on an update.
	update := func(deletion *metav1.Time) {
		v2 := v2a.DeepCopy()
		v2.DeletionTimestamp = deletion
		nodes["n1"].RemovePod("v2")
		nodes["n1"].AddPod(v2)
	}
	evictor := framework.JobID{Namespace: "default", Name: "evictor", Gang: true}
	borrower := framework.JobID{Namespace: "default", Name: "borrower", Gang: true}
	pending := st.MakePod().Name("p").UID("p").Obj()
	n := NewNominator(nil)
	n.Nominate(evictor, 10, nil, nil, map[types.UID]string{"v1": "n1", "v2": "n1", "v3": "n2"})
	n.Nominate(borrower, 10, []*v1.Pod{pending}, map[string]string{"p": "n1"}, nil)
	n.Borrow(borrower, map[types.UID]string{"v1": "n1", "v2": "n1"})
	if got := n.WaitingFor(borrower, get); got != 2 {
		t.Fatalf("waiting for %d borrowed victims, want 2", got)
	}
	if busy, noms, _ := n.VictimsLeft(borrower, get); !busy["n1"] || len(noms) != 1 {
		t.Errorf("victims left on %v with %d nominations, want n1 and 1", busy, len(noms))
	}
	// v1 goes; v2 starts terminating while its preemption gives up.
	nodes["n1"].RemovePod("v1")
	terminating := metav1.Now()
	update(&terminating)
	n.GiveUp(evictor)
	if got := n.WaitingFor(borrower, get); got != 1 {
		t.Errorf("after v1 went and v2 kept terminating: waiting for %d, want 1", got)
	}
	// v2's eviction did not happen after all: it runs on, no preemption
	// evicts it, so nothing is waited for.
	update(nil)
	if got := n.WaitingFor(borrower, get); got != 0 {
		t.Errorf("a borrowed victim nobody evicts: waiting for %d, want 0", got)
	}
	if busy, _, _ := n.VictimsLeft(borrower, get); len(busy) != 0 {
		t.Errorf("victims left on %v, want none", busy)
	}
	// Borrowed victims go with the job's nominations.
	n.Nominate(evictor, 10, nil, nil, map[types.UID]string{"v3": "n2"})
	n.Borrow(borrower, map[types.UID]string{"v3": "n2"})
	n.Clear(borrower)
	if got := n.WaitingFor(borrower, get); got != 0 || len(n.borrowed) != 0 {
		t.Errorf("cleared: waiting for %d, borrowed %v; want none", got, n.borrowed)
	}
}

// A preemptor placed no longer waits for its victims, but those still on
// their nodes stay going, and borrowable, until they are gone: their
// evictions were sent. Victims whose eviction was refused are no longer
// going, whoever chose them.
func TestNominatorPlacedKeepsVictimsGoing(t *testing.T) {
	v1a, v2b, v3b := runningOn("v1", "n1"), runningOn("v2", "n2"), runningOn("v3", "n2")
	nodes := map[string]*framework.NodeInfo{
		"n1": framework.NewNodeInfo(st.MakeNode().Name("n1").Obj(), v1a),
		"n2": framework.NewNodeInfo(st.MakeNode().Name("n2").Obj(), v2b, v3b),
	}
	get := func(name string) (*framework.NodeInfo, bool) { ni, ok := nodes[name]; return ni, ok }
	evictor := framework.JobID{Namespace: "default", Name: "evictor", Gang: true}
	borrower := framework.JobID{Namespace: "default", Name: "borrower", Gang: true}
	pre := st.MakePod().Name("pre").UID("pre").Obj()
	n := NewNominator(nil)
	n.Nominate(evictor, 10, []*v1.Pod{pre}, map[string]string{"pre": "n1"}, map[types.UID]string{"v1": "n1", "v2": "n2", "v3": "n2"})
	n.Borrow(borrower, map[types.UID]string{"v2": "n2", "v3": "n2"})
	names := func() []string { return goingNames(n, get) }
	// The evictor's own node is free: it is placed there.
	nodes["n1"].RemovePod("v1")
	n.Placed(evictor, []*v1.Pod{pre})
	if got := n.WaitingFor(evictor, get); got != 0 {
		t.Errorf("placed evictor waits for %d victims, want 0", got)
	}
	if got := names(); !slices.Equal(got, []string{"v2", "v3"}) {
		t.Errorf("going after the evictor was placed: %v, want [v2 v3]", got)
	}
	if got := n.WaitingFor(borrower, get); got != 2 {
		t.Errorf("borrower waits for %d victims, want 2", got)
	}
	// v3's eviction is refused after all.
	n.NotGoing(map[types.UID]string{"v3": "n2"})
	if got := names(); !slices.Equal(got, []string{"v2"}) {
		t.Errorf("going after v3's refusal: %v, want [v2]", got)
	}
	if got := n.WaitingFor(borrower, get); got != 1 {
		t.Errorf("borrower waits for %d victims after v3's refusal, want 1", got)
	}
	// v2 goes: nothing is left indexed.
	nodes["n2"].RemovePod("v2")
	if got := names(); len(got) != 0 || len(n.onNode) != 0 {
		t.Errorf("going %v, indexed %v after every victim went; want none", got, n.onNode)
	}
}

// runningOn returns a running pod bound to node, its UID its name.
func runningOn(name, node string) *v1.Pod {
	return st.MakePod().Name(name).UID(name).Node(node).Phase(v1.PodRunning).Obj()
}

// goingNames returns the names of n's going victims on nodes, sorted.
func goingNames(n *Nominator, nodes func(name string) (*framework.NodeInfo, bool)) []string {
	var out []string
	for _, task := range n.GoingVictims(nodes) {
		out = append(out, task.GetName())
	}
	slices.Sort(out)
	return out
}
