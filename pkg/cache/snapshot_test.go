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

package cache

import (
	"fmt"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
	st "github.com/batch-scheduler/batch-scheduler/pkg/testing"
)

func snapshotNames(s *Snapshot) string {
	var names []string
	for _, n := range s.NodeInfos() {
		names = append(names, n.Name())
	}
	return strings.Join(names, ",")
}

func TestUpdateSnapshotIsIncremental(t *testing.T) {
	c, _ := newTestCache(t, Options{})
	for i := range 10 {
		mustNoErr(t, "AddOrUpdateNode", c.AddOrUpdateNode(bigNode(fmt.Sprintf("n%d", i))))
	}
	s := NewSnapshot()
	mustNoErr(t, "UpdateSnapshot", c.UpdateSnapshot(s))
	if s.clones != 10 || len(s.NodeInfos()) != 10 {
		t.Fatalf("first update: %d clones, %d nodes; want 10, 10", s.clones, len(s.NodeInfos()))
	}
	n3Before, _ := s.Get("n3")
	n3Gen := n3Before.Generation

	// Nothing changed: nothing is cloned.
	mustNoErr(t, "UpdateSnapshot", c.UpdateSnapshot(s))
	if s.clones != 10 {
		t.Fatalf("no-op update cloned %d nodes", s.clones-10)
	}

	// Two nodes change: exactly those two are cloned.
	mustNoErr(t, "AddPod", c.AddPod(st.MakePod().Name("p").Node("n7").Req(res{v1.ResourceCPU: "1"}).Obj()))
	mustNoErr(t, "AddOrUpdateNode", c.AddOrUpdateNode(st.MakeNode().Name("n2").Capacity(res{v1.ResourceCPU: "2"}).Obj()))
	mustNoErr(t, "UpdateSnapshot", c.UpdateSnapshot(s))
	if got := s.clones - 10; got != 2 {
		t.Fatalf("update after 2 changes cloned %d nodes, want 2", got)
	}
	if n7, _ := s.Get("n7"); n7.Requested.MilliCPU != 1000 || len(n7.Pods) != 1 {
		t.Errorf("n7 in snapshot = %+v", n7)
	}
	if n2, _ := s.Get("n2"); n2.Schedulable.MilliCPU != 2000 {
		t.Errorf("n2 in snapshot = %+v", n2)
	}
	if n3, _ := s.Get("n3"); n3 != n3Before || n3.Generation != n3Gen {
		t.Error("unchanged node n3 was replaced")
	}
	if s.generation != c.generation {
		t.Errorf("snapshot generation %d, cache %d", s.generation, c.generation)
	}

	// The snapshot is a copy: later cache changes do not show through.
	mustNoErr(t, "AddPod", c.AddPod(st.MakePod().Name("q").UID("q").Node("n7").Req(res{v1.ResourceCPU: "1"}).Obj()))
	if n7, _ := s.Get("n7"); n7.Requested.MilliCPU != 1000 {
		t.Errorf("cache change leaked into the snapshot: %v", n7.Requested)
	}
}

func TestUpdateSnapshotMembership(t *testing.T) {
	c, _ := newTestCache(t, Options{})
	for _, n := range []string{"a", "b", "c"} {
		mustNoErr(t, "AddOrUpdateNode", c.AddOrUpdateNode(bigNode(n)))
	}
	mustNoErr(t, "AddPod", c.AddPod(st.MakePod().Name("p").Node("c").Obj()))
	// A placeholder is never in the snapshot.
	mustNoErr(t, "AddPod", c.AddPod(st.MakePod().Name("ghost").Node("x").Obj()))
	s := NewSnapshot()
	mustNoErr(t, "UpdateSnapshot", c.UpdateSnapshot(s))
	if got := snapshotNames(s); got != "a,b,c" {
		t.Fatalf("snapshot = %s, want a,b,c", got)
	}

	// b is deleted; c becomes a placeholder; x becomes a real node; d is
	// added, removed and added again.
	mustNoErr(t, "RemoveNode b", c.RemoveNode(bigNode("b")))
	mustNoErr(t, "RemoveNode c", c.RemoveNode(bigNode("c")))
	mustNoErr(t, "AddOrUpdateNode x", c.AddOrUpdateNode(bigNode("x")))
	mustNoErr(t, "AddOrUpdateNode d", c.AddOrUpdateNode(bigNode("d")))
	mustNoErr(t, "RemoveNode d", c.RemoveNode(bigNode("d")))
	mustNoErr(t, "AddOrUpdateNode d", c.AddOrUpdateNode(bigNode("d")))
	mustNoErr(t, "UpdateSnapshot", c.UpdateSnapshot(s))
	if got := snapshotNames(s); got != "a,d,x" {
		t.Fatalf("snapshot = %s, want a,d,x", got)
	}
	if _, ok := s.Get("c"); ok {
		t.Error("placeholder c is in the snapshot")
	}
}

func TestUpdateSnapshotAfterTrimmedRemovals(t *testing.T) {
	c, _ := newTestCache(t, Options{})
	mustNoErr(t, "AddOrUpdateNode", c.AddOrUpdateNode(bigNode("keep")))
	mustNoErr(t, "AddOrUpdateNode", c.AddOrUpdateNode(bigNode("gone")))
	s := NewSnapshot()
	mustNoErr(t, "UpdateSnapshot", c.UpdateSnapshot(s))
	mustNoErr(t, "RemoveNode", c.RemoveNode(bigNode("gone")))
	// Churn enough nodes to trim the log of removals past "gone".
	for i := range 2 * maxRemovedNodes {
		name := fmt.Sprintf("churn-%d", i)
		mustNoErr(t, "AddOrUpdateNode", c.AddOrUpdateNode(bigNode(name)))
		mustNoErr(t, "RemoveNode", c.RemoveNode(bigNode(name)))
	}
	if c.removedNodesFloor <= s.generation {
		t.Fatalf("the log was not trimmed past the snapshot (floor %d, snapshot %d)", c.removedNodesFloor, s.generation)
	}
	if len(c.removedNodes) > maxRemovedNodes {
		t.Errorf("removal log has %d entries, want at most %d", len(c.removedNodes), maxRemovedNodes)
	}
	mustNoErr(t, "UpdateSnapshot", c.UpdateSnapshot(s))
	if got := snapshotNames(s); got != "keep" {
		t.Fatalf("snapshot = %s, want keep", got)
	}
}

func TestUpdateSnapshotDetectsInconsistency(t *testing.T) {
	c, _ := newTestCache(t, Options{})
	mustNoErr(t, "AddOrUpdateNode", c.AddOrUpdateNode(bigNode("a")))
	s := NewSnapshot()
	mustNoErr(t, "UpdateSnapshot", c.UpdateSnapshot(s))
	// Corrupt the snapshot as only a bug could.
	s.nodeInfoMap["bogus"] = framework.NewPlaceholderNodeInfo("bogus")
	if err := c.UpdateSnapshot(s); err == nil || !strings.Contains(err.Error(), "2 nodes but the cache has 1") {
		t.Fatalf("UpdateSnapshot of a corrupt snapshot: got %v", err)
	}
	mustNoErr(t, "UpdateSnapshot after reset", c.UpdateSnapshot(s))
	if got := snapshotNames(s); got != "a" {
		t.Errorf("snapshot after reset = %s, want a", got)
	}
}

// fillCache adds nodes nodes with podsPerNode bound pods each.
func fillCache(b *testing.B, nodes, podsPerNode int) *SchedulerCache {
	c, err := New(Options{})
	if err != nil {
		b.Fatal(err)
	}
	for i := range nodes {
		name := fmt.Sprintf("node-%05d", i)
		if err := c.AddOrUpdateNode(st.MakeNode().Name(name).Capacity(res{v1.ResourceCPU: "64", v1.ResourceMemory: "256Gi", v1.ResourcePods: "110"}).Obj()); err != nil {
			b.Fatal(err)
		}
		for j := range podsPerNode {
			pod := st.MakePod().Name(fmt.Sprintf("pod-%05d-%02d", i, j)).Node(name).Phase(v1.PodRunning).
				Req(res{v1.ResourceCPU: "100m", v1.ResourceMemory: "128Mi"}).Obj()
			if err := c.AddPod(pod); err != nil {
				b.Fatal(err)
			}
		}
	}
	return c
}

// BenchmarkUpdateSnapshot compares an incremental update after 10 node
// changes with a full clone of every node, on 5,000 nodes and 150,000 pods.
func BenchmarkUpdateSnapshot(b *testing.B) {
	const nodes, podsPerNode, changed = 5000, 30, 10
	c := fillCache(b, nodes, podsPerNode)
	changeNodes := func(round int) {
		for k := range changed {
			node := st.MakeNode().Name(fmt.Sprintf("node-%05d", (round*changed+k)%nodes)).
				Capacity(res{v1.ResourceCPU: "64", v1.ResourceMemory: "256Gi", v1.ResourcePods: "110"}).
				Label("round", fmt.Sprint(round)).Obj()
			if err := c.AddOrUpdateNode(node); err != nil {
				b.Fatal(err)
			}
		}
	}

	b.Run("incremental-10-changed", func(b *testing.B) {
		s := NewSnapshot()
		if err := c.UpdateSnapshot(s); err != nil {
			b.Fatal(err)
		}
		round := 0
		for b.Loop() {
			b.StopTimer()
			changeNodes(round)
			round++
			b.StartTimer()
			if err := c.UpdateSnapshot(s); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("full-clone", func(b *testing.B) {
		round := 0
		for b.Loop() {
			b.StopTimer()
			changeNodes(round)
			round++
			b.StartTimer()
			s := NewSnapshot()
			if err := c.UpdateSnapshot(s); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// TestSnapshotTouched checks the record of touched nodes that lets a
// reused ranking refresh only what changed: every change a cycle sees is
// named, joins and leaves stand for every node, and so do too many
// changes.
func TestSnapshotTouched(t *testing.T) {
	c, _ := newTestCache(t, Options{})
	for i := range 10 {
		mustNoErr(t, "AddOrUpdateNode", c.AddOrUpdateNode(bigNode(fmt.Sprintf("n%d", i))))
	}
	s := NewSnapshot()
	if _, all := s.Touched(); !all {
		t.Fatal("a new snapshot does not report every node touched")
	}
	mustNoErr(t, "UpdateSnapshot", c.UpdateSnapshot(s))
	s.ResetTouched()
	want := func(step string, wantAll bool, names ...string) {
		t.Helper()
		got, all := s.Touched()
		if all != wantAll || len(got) != len(names) {
			t.Fatalf("%s: touched %v (all %v), want %v (all %v)", step, got, all, names, wantAll)
		}
		for _, n := range names {
			if !got[n] {
				t.Fatalf("%s: touched %v (all %v), want %v (all %v)", step, got, all, names, wantAll)
			}
		}
	}
	want("after reset", false)

	mustNoErr(t, "UpdateSnapshot", c.UpdateSnapshot(s))
	want("no-op update", false)

	// A cycle's tentative placement, and the update that undoes it.
	pod := st.MakePod().Name("p").UID("p").Req(res{v1.ResourceCPU: "1"}).Obj()
	s.AddPod("n1", pod)
	want("AddPod", false, "n1")
	s.ResetTouched()
	mustNoErr(t, "UpdateSnapshot", c.UpdateSnapshot(s))
	want("update undoing a placement", false, "n1")
	s.ResetTouched()

	// The cache's own changes.
	mustNoErr(t, "AddPod", c.AddPod(st.MakePod().Name("q").UID("q").Node("n7").Req(res{v1.ResourceCPU: "1"}).Obj()))
	mustNoErr(t, "AddOrUpdateNode", c.AddOrUpdateNode(st.MakeNode().Name("n2").Capacity(res{v1.ResourceCPU: "2"}).Obj()))
	mustNoErr(t, "UpdateSnapshot", c.UpdateSnapshot(s))
	want("cache changes", false, "n2", "n7")
	s.ResetTouched()

	// Preemption's simulation takes a pod off.
	s.RemovePod("n7", "q")
	want("RemovePod", false, "n7")
	s.ResetTouched()

	// A node leaves: every node may have.
	mustNoErr(t, "RemoveNode", c.RemoveNode(bigNode("n9")))
	mustNoErr(t, "UpdateSnapshot", c.UpdateSnapshot(s))
	want("node left", true)
	s.ResetTouched()
	mustNoErr(t, "AddOrUpdateNode", c.AddOrUpdateNode(bigNode("n9")))
	mustNoErr(t, "UpdateSnapshot", c.UpdateSnapshot(s))
	want("node joined", true)
	s.ResetTouched()

	// More changes than maxTouched stand for every node.
	for i := range maxTouched + 1 {
		s.AddPod(fmt.Sprintf("n%d", i%9), st.MakePod().Name(fmt.Sprintf("r%d", i)).UID(fmt.Sprintf("r%d", i)).Obj())
	}
	want("few nodes, many changes", false, "n0", "n1", "n2", "n3", "n4", "n5", "n6", "n7", "n8")
	s.ResetTouched()
	for i := range maxTouched + 1 {
		s.touch(fmt.Sprintf("x%d", i))
	}
	want("too many nodes", true)
}

// TestSnapshotAffinityCensus checks the census the snapshot gives plugins:
// exact after an update, raised by a placement, kept (not lowered) when a
// pod is taken off and put back directly, as preemption's simulation
// does, and exact again at the next update.
func TestSnapshotAffinityCensus(t *testing.T) {
	c, _ := newTestCache(t, Options{})
	for i := range 3 {
		mustNoErr(t, "AddOrUpdateNode", c.AddOrUpdateNode(bigNode(fmt.Sprintf("n%d", i))))
	}
	anti := func(name, node string) *v1.Pod {
		p := st.MakePod().Name(name).UID(name).Node(node).Req(res{v1.ResourceCPU: "1"}).Obj()
		p.Spec.Affinity = &v1.Affinity{PodAntiAffinity: &v1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []v1.PodAffinityTerm{{TopologyKey: v1.LabelHostname}}}}
		return p
	}
	s := NewSnapshot()
	want := func(step string, affinity, antiAffinity bool) {
		t.Helper()
		if s.MayHoldAffinity() != affinity || s.MayHoldRequiredAntiAffinity() != antiAffinity {
			t.Fatalf("%s: census affinity %v, anti-affinity %v; want %v, %v", step, s.MayHoldAffinity(), s.MayHoldRequiredAntiAffinity(), affinity, antiAffinity)
		}
	}
	mustNoErr(t, "UpdateSnapshot", c.UpdateSnapshot(s))
	want("no pods", false, false)

	bound := anti("a", "n1")
	mustNoErr(t, "AddPod", c.AddPod(bound))
	mustNoErr(t, "UpdateSnapshot", c.UpdateSnapshot(s))
	want("a bound pod with anti-affinity", true, true)

	// Preemption's simulation takes it off and puts it back directly.
	task := func() *framework.TaskInfo {
		n, _ := s.Get("n1")
		return n.Pods[0]
	}()
	s.RemovePod("n1", "a")
	want("taken off: may still hold", true, true)
	n1, _ := s.Get("n1")
	n1.AddTask(task)
	want("put back", true, true)

	_, err := c.DeletePod(bound)
	mustNoErr(t, "DeletePod", err)
	mustNoErr(t, "UpdateSnapshot", c.UpdateSnapshot(s))
	want("deleted", false, false)

	// A cycle's tentative placement raises it; the next update undoes it.
	s.AddPod("n2", anti("b", ""))
	want("placed in the cycle", true, true)
	mustNoErr(t, "UpdateSnapshot", c.UpdateSnapshot(s))
	want("after the update", false, false)

	// A node that leaves takes its pods out of the census.
	mustNoErr(t, "AddPod", c.AddPod(anti("c", "n0")))
	mustNoErr(t, "UpdateSnapshot", c.UpdateSnapshot(s))
	want("bound on n0", true, true)
	mustNoErr(t, "RemoveNode", c.RemoveNode(bigNode("n0")))
	mustNoErr(t, "UpdateSnapshot", c.UpdateSnapshot(s))
	want("n0 left (a placeholder now)", false, false)
}
