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
	"errors"
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
	"github.com/batch-scheduler/batch-scheduler/pkg/resources"
	st "github.com/batch-scheduler/batch-scheduler/pkg/testing"
)

func cpuMem(cpu, mem string) resources.Resource {
	return resources.FromList(st.MakeNode().Capacity(res{v1.ResourceCPU: cpu, v1.ResourceMemory: mem}).Obj().Status.Allocatable)
}

func TestExternalUsageAccounting(t *testing.T) {
	type step struct {
		set    string // key to set, or ""
		node   string
		usage  resources.Resource
		remove string // key to remove, or ""
		// addNode / removeNode change nodes.
		addNode, removeNode string
		wantErr             error
	}
	type nodeWant struct {
		cpu         int64 // idle milliCPU, when known
		known       bool  // NodeIdle ok
		placeholder bool
		present     bool // in the cache at all
		keys        []string
	}
	tests := []struct {
		name  string
		steps []step
		want  map[string]nodeWant
	}{
		{
			name:  "usage shrinks idle",
			steps: []step{{addNode: "n1"}, {set: "a", node: "n1", usage: cpuMem("3", "1Gi")}},
			want:  map[string]nodeWant{"n1": {cpu: 7000, known: true, present: true, keys: []string{"a"}}},
		},
		{
			name: "set again replaces",
			steps: []step{{addNode: "n1"}, {set: "a", node: "n1", usage: cpuMem("3", "1Gi")},
				{set: "a", node: "n1", usage: cpuMem("1", "1Gi")}},
			want: map[string]nodeWant{"n1": {cpu: 9000, known: true, present: true, keys: []string{"a"}}},
		},
		{
			name: "set on another node moves",
			steps: []step{{addNode: "n1"}, {addNode: "n2"}, {set: "a", node: "n1", usage: cpuMem("3", "1Gi")},
				{set: "b", node: "n1", usage: cpuMem("1", "1Gi")},
				{set: "a", node: "n2", usage: cpuMem("2", "1Gi")}},
			want: map[string]nodeWant{
				"n1": {cpu: 9000, known: true, present: true, keys: []string{"b"}},
				"n2": {cpu: 8000, known: true, present: true, keys: []string{"a"}},
			},
		},
		{
			name: "removal frees",
			steps: []step{{addNode: "n1"}, {set: "a", node: "n1", usage: cpuMem("3", "1Gi")},
				{remove: "a"}},
			want: map[string]nodeWant{"n1": {cpu: 10000, known: true, present: true}},
		},
		{
			name:  "removing an unknown key fails",
			steps: []step{{remove: "nope", wantErr: ErrNotFound}},
		},
		{
			name:  "unknown node gets a placeholder",
			steps: []step{{set: "a", node: "n1", usage: cpuMem("3", "1Gi")}},
			want:  map[string]nodeWant{"n1": {placeholder: true, present: true, keys: []string{"a"}}},
		},
		{
			name:  "placeholder filled by the real node",
			steps: []step{{set: "a", node: "n1", usage: cpuMem("3", "1Gi")}, {addNode: "n1"}},
			want:  map[string]nodeWant{"n1": {cpu: 7000, known: true, present: true, keys: []string{"a"}}},
		},
		{
			name:  "placeholder deleted when its usage goes",
			steps: []step{{set: "a", node: "n1", usage: cpuMem("3", "1Gi")}, {remove: "a"}},
			want:  map[string]nodeWant{"n1": {}},
		},
		{
			name:  "placeholder deleted when its usage moves",
			steps: []step{{addNode: "n2"}, {set: "a", node: "n1", usage: cpuMem("3", "1Gi")}, {set: "a", node: "n2", usage: cpuMem("3", "1Gi")}},
			want: map[string]nodeWant{"n1": {},
				"n2": {cpu: 7000, known: true, present: true, keys: []string{"a"}}},
		},
		{
			name:  "node delete keeps usage on a placeholder",
			steps: []step{{addNode: "n1"}, {set: "a", node: "n1", usage: cpuMem("3", "1Gi")}, {removeNode: "n1"}},
			want:  map[string]nodeWant{"n1": {placeholder: true, present: true, keys: []string{"a"}}},
		},
		{
			name: "node delete then usage removal deletes the placeholder",
			steps: []step{{addNode: "n1"}, {set: "a", node: "n1", usage: cpuMem("3", "1Gi")}, {removeNode: "n1"},
				{remove: "a"}},
			want: map[string]nodeWant{"n1": {}},
		},
		{
			name: "keys sorted per node",
			steps: []step{{addNode: "n1"}, {set: "c", node: "n1", usage: cpuMem("1", "1Gi")},
				{set: "a", node: "n1", usage: cpuMem("1", "1Gi")}, {set: "b", node: "n1", usage: cpuMem("1", "1Gi")}},
			want: map[string]nodeWant{"n1": {cpu: 7000, known: true, present: true, keys: []string{"a", "b", "c"}}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, _ := newTestCache(t, Options{})
			for i, s := range tt.steps {
				var err error
				switch {
				case s.addNode != "":
					err = c.AddOrUpdateNode(bigNode(s.addNode))
				case s.removeNode != "":
					err = c.RemoveNode(bigNode(s.removeNode))
				case s.set != "":
					err = c.SetExternalUsage(s.set, s.node, s.usage)
				case s.remove != "":
					err = c.RemoveExternalUsage(s.remove)
				}
				if !errors.Is(err, s.wantErr) || (err != nil) != (s.wantErr != nil) {
					t.Fatalf("step %d: err %v, want %v", i, err, s.wantErr)
				}
			}
			for name, w := range tt.want {
				idle, ok := nodeIdle(c, name)
				if ok != w.known || (ok && idle.MilliCPU != w.cpu) {
					t.Errorf("NodeIdle(%s) = %v, %v; want cpu %d, %v", name, idle.MilliCPU, ok, w.cpu, w.known)
				}
				ni, present := c.NodeInfo(name)
				if present != w.present {
					t.Fatalf("node %s present = %v, want %v", name, present, w.present)
				}
				if !present {
					continue
				}
				if ni.Placeholder != w.placeholder {
					t.Errorf("node %s placeholder = %v, want %v", name, ni.Placeholder, w.placeholder)
				}
				if !slices.Equal(ni.ExternalKeys, w.keys) {
					t.Errorf("node %s keys = %q, want %q", name, ni.ExternalKeys, w.keys)
				}
			}
			// The placeholder gauge matches the nodes.
			c.mu.RLock()
			n := 0
			for _, item := range c.nodes {
				if item.info.Placeholder {
					n++
				}
			}
			if n != c.numPlaceholders {
				t.Errorf("numPlaceholders = %d, counted %d", c.numPlaceholders, n)
			}
			c.mu.RUnlock()
		})
	}
}

func TestExternalUsageWithPods(t *testing.T) {
	c, _ := newTestCache(t, Options{})
	mustNoErr(t, "SetExternalUsage", c.SetExternalUsage("a", "n1", cpuMem("2", "1Gi")))
	mustNoErr(t, "AddPod", c.AddPod(st.MakePod().Name("p").UID("p").Node("n1").Req(res{v1.ResourceCPU: "1"}).Obj()))
	mustNoErr(t, "RemoveExternalUsage", c.RemoveExternalUsage("a"))
	// The pod still holds the placeholder.
	if ni, ok := c.NodeInfo("n1"); !ok || !ni.Placeholder || !ni.External.IsZero() {
		t.Fatalf("n1 = %+v, %v; want an empty-external placeholder", ni, ok)
	}
	mustNoErr(t, "SetExternalUsage", c.SetExternalUsage("a", "n1", cpuMem("2", "1Gi")))
	mustNoErr(t, "RemovePod", deletePod(c, st.MakePod().Name("p").UID("p").Node("n1").Obj()))
	// The usage still holds the placeholder.
	if ni, ok := c.NodeInfo("n1"); !ok || !ni.Placeholder || ni.External.MilliCPU != 2000 {
		t.Fatalf("n1 = %+v, %v; want a placeholder with 2 CPUs external", ni, ok)
	}
	mustNoErr(t, "AddOrUpdateNode", c.AddOrUpdateNode(bigNode("n1")))
	mustNoErr(t, "AddPod", c.AddPod(st.MakePod().Name("q").UID("q").Node("n1").Req(res{v1.ResourceCPU: "1"}).Obj()))
	idle, _ := nodeIdle(c, "n1")
	if idle.MilliCPU != 7000 {
		t.Errorf("idle cpu = %d, want 10000-1000-2000", idle.MilliCPU)
	}
}

// TestIdleIncludesExternal: framework.NodeInfo.Idle, which NodeResourcesFit uses,
// subtracts external usage, also in snapshots and clones.
func TestIdleIncludesExternal(t *testing.T) {
	n := framework.NewNodeInfo(bigNode("n1"), st.MakePod().Name("p").Node("n1").Req(res{v1.ResourceCPU: "1"}).Obj())
	n.External = cpuMem("4", "2Gi")
	idle := n.Idle()
	if idle.MilliCPU != 5000 || idle.Memory != 8<<30 {
		t.Errorf("Idle = %v, want cpu=5000m memory=8Gi", idle)
	}
	if idle.Fits(cpuMem("6", "1Gi")) {
		t.Error("6 CPUs fit in 5 idle")
	}
	c := n.Clone()
	n.External.Add(cpuMem("1", "0"))
	if c.External.MilliCPU != 4000 {
		t.Errorf("clone shares External: %v", c.External)
	}
}

func TestSnapshotSeesExternalUsage(t *testing.T) {
	c, _ := newTestCache(t, Options{})
	for _, n := range []string{"n1", "n2", "n3"} {
		mustNoErr(t, "AddOrUpdateNode", c.AddOrUpdateNode(bigNode(n)))
	}
	s := NewSnapshot()
	mustNoErr(t, "UpdateSnapshot", c.UpdateSnapshot(s))
	base := s.clones

	mustNoErr(t, "SetExternalUsage", c.SetExternalUsage("a", "n2", cpuMem("3", "1Gi")))
	mustNoErr(t, "UpdateSnapshot", c.UpdateSnapshot(s))
	if got := s.clones - base; got != 1 {
		t.Errorf("set cloned %d nodes, want 1", got)
	}
	n2, _ := s.Get("n2")
	if idle := n2.Idle(); idle.MilliCPU != 7000 {
		t.Errorf("snapshot n2 idle = %v", idle)
	}

	// Changing the usage in place is seen too, and does not leak into the
	// old clone.
	old := n2
	mustNoErr(t, "SetExternalUsage", c.SetExternalUsage("a", "n2", cpuMem("5", "1Gi")))
	if old.External.MilliCPU != 3000 {
		t.Errorf("cache change leaked into the snapshot: %v", old.External)
	}
	mustNoErr(t, "UpdateSnapshot", c.UpdateSnapshot(s))
	if n2, _ := s.Get("n2"); n2.Idle().MilliCPU != 5000 {
		t.Errorf("snapshot n2 idle after update = %v", n2.Idle())
	}

	base = s.clones
	mustNoErr(t, "RemoveExternalUsage", c.RemoveExternalUsage("a"))
	mustNoErr(t, "UpdateSnapshot", c.UpdateSnapshot(s))
	if got := s.clones - base; got != 1 {
		t.Errorf("remove cloned %d nodes, want 1", got)
	}
	if n2, _ := s.Get("n2"); n2.Idle().MilliCPU != 10000 {
		t.Errorf("snapshot n2 idle after removal = %v", n2.Idle())
	}
}

func TestDumpShowsExternalUsage(t *testing.T) {
	c, _ := newTestCache(t, Options{})
	mustNoErr(t, "AddOrUpdateNode", c.AddOrUpdateNode(bigNode("n1")))
	mustNoErr(t, "SetExternalUsage", c.SetExternalUsage("externalworkload/b", "n1", cpuMem("1", "1Gi")))
	mustNoErr(t, "SetExternalUsage", c.SetExternalUsage("externalworkload/a", "n1", cpuMem("2", "1Gi")))
	d := c.Dump()
	if len(d.Nodes) != 1 {
		t.Fatalf("nodes = %+v", d.Nodes)
	}
	n := d.Nodes[0]
	if n.External.MilliCPU != 3000 || n.Idle.MilliCPU != 7000 {
		t.Errorf("dump external %v idle %v", n.External, n.Idle)
	}
	if want := []string{"externalworkload/a", "externalworkload/b"}; !slices.Equal(n.ExternalKeys, want) {
		t.Errorf("dump keys = %q, want %q", n.ExternalKeys, want)
	}
}
