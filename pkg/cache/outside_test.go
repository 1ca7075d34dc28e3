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
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/batch-scheduler/batch-scheduler/pkg/resources"
	st "github.com/batch-scheduler/batch-scheduler/pkg/testing"
)

// Usage on a node outside the node selector (pods bound there, external
// usage) creates no placeholder and never reaches a snapshot, but is
// counted at once if the node starts matching, and becomes an ordinary
// placeholder if the node is deleted.
func TestUsageOnNodesOutsideTheSelector(t *testing.T) {
	c, _ := newTestCache(t, Options{NodeSelector: labels.SelectorFromSet(labels.Set{"pool": "batch"})})
	sel := &nodeSelectorHandler{selector: c.opts.NodeSelector, cache: c, next: &eventLog{}}
	web := st.MakeNode().Name("web").Label("pool", "web").Capacity(res{v1.ResourceCPU: "8", v1.ResourcePods: "10"}).Obj()
	batch := st.MakeNode().Name("web").Label("pool", "batch").Capacity(res{v1.ResourceCPU: "8", v1.ResourcePods: "10"}).Obj()
	pod := st.MakePod().Name("p").Node("web").Req(res{v1.ResourceCPU: "2"}).Obj()
	checkPlaceholders := func(when string, want int) {
		t.Helper()
		d := c.Dump()
		got := 0
		for _, n := range d.Nodes {
			if n.Placeholder {
				got++
			}
		}
		if got != want || c.numPlaceholders != want {
			t.Errorf("%s: %d placeholders (counter %d), want %d; nodes %+v", when, got, c.numPlaceholders, want, d.Nodes)
		}
	}

	// The informer reports the node, which does not match.
	sel.OnAdd(web, true)
	mustNoErr(t, "AddPod", c.AddPod(pod))
	mustNoErr(t, "SetExternalUsage", c.SetExternalUsage("vm/a", "web", resources.Resource{MilliCPU: 3000}))
	checkPlaceholders("usage on a node outside the selector", 0)
	if d := c.Dump(); len(d.OutsideSelector) != 1 || d.OutsideSelector[0].Requested.MilliCPU != 2000 || d.OutsideSelector[0].External.MilliCPU != 3000 {
		t.Errorf("kept aside = %+v, want the pod and the VM on web", d.OutsideSelector)
	}
	s := NewSnapshot()
	mustNoErr(t, "UpdateSnapshot", c.UpdateSnapshot(s))
	if len(s.NodeInfos()) != 0 {
		t.Errorf("snapshot has %s, want nothing", snapshotNames(s))
	}
	checkInvariants(t, c)

	// It is relabelled into the pool: delivered as an add, with what was
	// kept aside counted on it.
	sel.OnUpdate(web, batch)
	mustNoErr(t, "AddOrUpdateNode", c.AddOrUpdateNode(batch)) // what the handler does with the add
	if idle, ok := nodeIdle(c, "web"); !ok || idle.MilliCPU != 3000 {
		t.Errorf("idle on web = %v, %v; want 3000m (8 - pod 2 - VM 3)", idle, ok)
	}
	checkPlaceholders("after the node matches", 0)
	if d := c.Dump(); len(d.OutsideSelector) != 0 {
		t.Errorf("still kept aside: %+v", d.OutsideSelector)
	}
	mustNoErr(t, "UpdateSnapshot", c.UpdateSnapshot(s))
	if got := snapshotNames(s); got != "web" {
		t.Errorf("snapshot = %s, want web", got)
	}
	checkInvariants(t, c)

	// Relabelled out again: delivered as a delete; the usage goes aside.
	sel.OnUpdate(batch, web)
	mustNoErr(t, "RemoveNode", c.RemoveNode(batch))
	checkPlaceholders("after the node stops matching", 0)
	if d := c.Dump(); len(d.OutsideSelector) != 1 {
		t.Errorf("kept aside = %+v, want web", d.OutsideSelector)
	}
	mustNoErr(t, "UpdateSnapshot", c.UpdateSnapshot(s))
	if len(s.NodeInfos()) != 0 {
		t.Errorf("snapshot has %s, want nothing", snapshotNames(s))
	}
	checkInvariants(t, c)

	// The node is deleted while usage is still accounted to it: that usage
	// is on an unknown node now, which is what placeholders are for.
	sel.OnDelete(web)
	checkPlaceholders("after the excluded node is deleted", 1)
	checkInvariants(t, c)
	mustNoErr(t, "DeletePod", deletePod(c, pod))
	mustNoErr(t, "RemoveExternalUsage", c.RemoveExternalUsage("vm/a"))
	checkPlaceholders("after its usage left", 0)
	if d := c.Dump(); len(d.Nodes) != 0 || len(d.OutsideSelector) != 0 {
		t.Errorf("nodes %+v, aside %+v; want nothing", d.Nodes, d.OutsideSelector)
	}
	checkInvariants(t, c)
}

// A placeholder created for a pod that arrived before its node moves aside
// when the node turns out to be outside the selector, and is dropped once
// its last pod is deleted there.
func TestPlaceholderOfAnExcludedNodeMovesAside(t *testing.T) {
	c, _ := newTestCache(t, Options{NodeSelector: labels.SelectorFromSet(labels.Set{"pool": "batch"})})
	sel := &nodeSelectorHandler{selector: c.opts.NodeSelector, cache: c, next: &eventLog{}}
	pod := st.MakePod().Name("p").Node("web").Req(res{v1.ResourceCPU: "1"}).Obj()
	mustNoErr(t, "AddPod", c.AddPod(pod))
	if c.numPlaceholders != 1 {
		t.Fatalf("%d placeholders, want 1 for a pod on an unknown node", c.numPlaceholders)
	}
	sel.OnAdd(st.MakeNode().Name("web").Label("pool", "web").Obj(), true)
	if c.numPlaceholders != 0 || len(c.outside) != 1 {
		t.Errorf("placeholders %d, aside %d; want 0 and 1", c.numPlaceholders, len(c.outside))
	}
	checkInvariants(t, c)
	mustNoErr(t, "DeletePod", deletePod(c, pod))
	if len(c.outside) != 0 || len(c.nodes) != 0 {
		t.Errorf("aside %d, nodes %d after the last pod left; want none", len(c.outside), len(c.nodes))
	}
	checkInvariants(t, c)
}
