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

	v1 "k8s.io/api/core/v1"

	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
	"github.com/batch-scheduler/batch-scheduler/pkg/plugins/topologyaware"
	st "github.com/batch-scheduler/batch-scheduler/pkg/testing"
)

const rackKey = topologyaware.RackLabel

// addRack adds n nodes of cpu each, labelled with rack and block, named
// <rack>-<i>.
func (h *harness) addRack(block, rack string, n int, cpu string) {
	h.t.Helper()
	for i := range n {
		name := fmt.Sprintf("%s-%d", rack, i)
		h.addNodeObj(st.MakeNode().Name(name).Label(rackKey, rack).Label(topologyaware.BlockLabel, block).
			Label(topologyaware.HostnameLabel, name).Capacity(res{v1.ResourceCPU: cpu, v1.ResourcePods: "110"}).Obj())
	}
}

// addTopologyGang adds a gang of n pods of cpu each whose pods carry the
// topology annotation ann=key, and returns them.
func (h *harness) addTopologyGang(name string, n int, cpu, ann, key string) []*v1.Pod {
	h.t.Helper()
	var pods []*v1.Pod
	for i := range n {
		p := st.MakePod().Name(fmt.Sprintf("%s-%d", name, i)).Group(name).MinAvailable(fmt.Sprint(n)).
			Annotation(ann, key).Req(res{v1.ResourceCPU: cpu}).Obj()
		h.addPod(p)
		pods = append(pods, p)
	}
	return pods
}

// racksOf returns the racks the pods are bound in (rack = node name up to
// its last dash), and how many are bound.
func racksOf(boundTo map[string]string, pods []*v1.Pod) (map[string]int, int) {
	racks, bound := map[string]int{}, 0
	for _, p := range pods {
		node, ok := boundTo[p.Name]
		if !ok {
			continue
		}
		bound++
		racks[node[:strings.LastIndex(node, "-")]]++
	}
	return racks, bound
}

func TestRequiredTopologyGangWaitsWithoutAWholeRack(t *testing.T) {
	h := newHarness(t)
	h.addRack("b1", "rack-a", 4, "1")
	h.addRack("b1", "rack-b", 4, "1")
	pods := h.addTopologyGang("train", 8, "1", framework.TopologyRequiredAnnotation, rackKey)
	h.cycle()
	if n := len(h.bindings()); n != 0 {
		t.Fatalf("%d pods bound; a gang of 8 must not be split over two racks of 4", n)
	}
	cond := podScheduledCondition(h.apiPod(pods[0]))
	if cond == nil {
		t.Fatal("no PodScheduled condition written")
	}
	for _, want := range []string{"must run within one " + rackKey + " domain", "annotation " + framework.TopologyRequiredAnnotation,
		"its quorum needs cpu 8, pods 8; the largest free", "has cpu 4, pods 440 free"} {
		if !strings.Contains(cond.Message, want) {
			t.Errorf("message %q does not say %q", cond.Message, want)
		}
	}
}

func TestRequiredTopologyGangLandsInTheRackThatFitsBest(t *testing.T) {
	h := newHarness(t)
	h.addRack("b1", "rack-small", 4, "1")  // too small
	h.addRack("b1", "rack-big", 16, "1")   // fits, with room to spare
	h.addRack("b2", "rack-tight", 10, "1") // fits, least left over
	pods := h.addTopologyGang("train", 8, "1", framework.TopologyRequiredAnnotation, rackKey)
	h.cycle()
	racks, bound := racksOf(h.boundTo(), pods)
	if bound != 8 || len(racks) != 1 || racks["rack-tight"] != 8 {
		t.Fatalf("bound %d pods in racks %v; want all 8 in rack-tight (the best fit)", bound, racks)
	}
}

func TestRequiredTopologyTriesTheNextDomainWhenFiltersRefuseOne(t *testing.T) {
	h := newHarness(t)
	// rack-tight is the best fit by free cpu, but its nodes are tainted:
	// the placement there fails at Filter and the next rack is tried.
	for i := range 8 {
		name := fmt.Sprintf("rack-tight-%d", i)
		h.addNodeObj(st.MakeNode().Name(name).Label(rackKey, "rack-tight").Taint("dedicated", "x", v1.TaintEffectNoSchedule).
			Capacity(res{v1.ResourceCPU: "1", v1.ResourcePods: "110"}).Obj())
	}
	h.addRack("b1", "rack-big", 12, "1")
	h.addRack("b1", "rack-c", 4, "1") // too small on its own
	pods := h.addTopologyGang("train", 8, "1", framework.TopologyRequiredAnnotation, rackKey)
	h.cycle()
	racks, bound := racksOf(h.boundTo(), pods)
	if bound != 8 || racks["rack-big"] != 8 {
		t.Fatalf("bound %d pods in racks %v; want all 8 in rack-big", bound, racks)
	}
}

func TestRequiredBlockPrefersOneRackOfIt(t *testing.T) {
	h := newHarness(t)
	h.addRack("b1", "rack-a", 4, "1")
	h.addRack("b1", "rack-b", 6, "1")
	pods := h.addTopologyGang("train", 4, "1", framework.TopologyRequiredAnnotation, topologyaware.BlockLabel)
	h.cycle()
	racks, bound := racksOf(h.boundTo(), pods)
	if bound != 4 || len(racks) != 1 {
		t.Fatalf("bound %d pods in racks %v; a gang of 4 that fits one rack of its block must get one rack", bound, racks)
	}
	if racks["rack-a"] != 4 {
		t.Errorf("racks %v; want rack-a, which the gang fills", racks)
	}
}

func TestPreferredTopologyGangSpreadsWhenNoRackFits(t *testing.T) {
	h := newHarness(t)
	h.addRack("b1", "rack-a", 4, "1")
	h.addRack("b2", "rack-b", 4, "1")
	pods := h.addTopologyGang("train", 8, "1", framework.TopologyPreferredAnnotation, rackKey)
	h.cycle()
	if _, bound := racksOf(h.boundTo(), pods); bound != 8 {
		t.Fatalf("bound %d of 8; a preferred constraint must not keep the gang waiting", bound)
	}
}

func TestKueueTopologyAnnotationIsRead(t *testing.T) {
	h := newHarness(t)
	h.addRack("b1", "rack-a", 4, "1")
	h.addRack("b1", "rack-b", 4, "1")
	h.addTopologyGang("train", 6, "1", framework.KueueRequiredTopologyAnnotation, rackKey)
	h.cycle()
	if n := len(h.bindings()); n != 0 {
		t.Fatalf("%d pods bound; Kueue's required-topology annotation was not honoured", n)
	}
}

func TestBadTopologyAnnotationIsReported(t *testing.T) {
	h := newHarness(t)
	h.addRack("b1", "rack-a", 4, "1")
	pods := h.addTopologyGang("train", 2, "1", framework.TopologyRequiredAnnotation, "not a label key!")
	h.cycle()
	if n := len(h.bindings()); n != 0 {
		t.Fatalf("%d pods bound despite an unreadable constraint", n)
	}
	cond := podScheduledCondition(h.apiPod(pods[0]))
	if cond == nil || !strings.Contains(cond.Message, "annotation "+framework.TopologyRequiredAnnotation+`="not a label key!"`) {
		t.Fatalf("condition %+v does not name the bad annotation", cond)
	}
}

// A high-priority gang that must share a rack preempts within one rack:
// the rack with the most free room (the fewest victims), never a victim
// in a rack the gang does not go to.
func TestRequiredTopologyPreemptsWithinOneRack(t *testing.T) {
	h := newHarness(t)
	ev := newEvictions(h)
	h.addRack("b1", "rack-a", 4, "1")
	h.addRack("b1", "rack-b", 4, "1")
	for i := range 4 {
		h.addPod(running(fmt.Sprintf("low-a%d", i), fmt.Sprintf("rack-a-%d", i), 10, "1", i).Obj())
	}
	// rack-b has two free nodes: two victims make room there.
	for i := range 2 {
		h.addPod(running(fmt.Sprintf("low-b%d", i), fmt.Sprintf("rack-b-%d", i), 10, "1", i).Obj())
	}
	gang := gangPods("high", 4, "4", 100, "1")
	for _, p := range gang {
		p.Annotations[framework.TopologyRequiredAnnotation] = rackKey
		h.addPod(p)
	}
	h.cycle()
	if got, want := ev.evicted(), []string{"low-b0", "low-b1"}; !slices.Equal(got, want) {
		t.Fatalf("evicted %v, want %v (the two pods of rack-b)", got, want)
	}
	for _, p := range gang {
		if n := h.apiPod(p).Status.NominatedNodeName; !strings.HasPrefix(n, "rack-b-") {
			t.Errorf("pod %s nominated to %q, want a node of rack-b", p.Name, n)
		}
	}
}
