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

// addReplicas adds a multi-level gang of the project's own annotations:
// replicas sub-groups of size pods of cpu each, quorum size per
// sub-group, minSubGroups of them for the whole; extra annotations go on
// every pod. It returns the pods by sub-group.
func (h *harness) addReplicas(name string, replicas, size int, cpu string, minSubGroups int, extra map[string]string) [][]*v1.Pod {
	h.t.Helper()
	out := make([][]*v1.Pod, replicas)
	for r := range replicas {
		for i := range size {
			w := st.MakePod().Name(fmt.Sprintf("%s-%d-%d", name, r, i)).Group(name).MinAvailable(fmt.Sprint(size)).
				Annotation(framework.SubGroupAnnotation, fmt.Sprint(r)).
				Annotation(framework.SubGroupMinAvailableAnnotation, fmt.Sprint(size)).
				Annotation(framework.MinSubGroupsAnnotation, fmt.Sprint(minSubGroups)).
				Req(res{v1.ResourceCPU: cpu})
			for k, v := range extra {
				w = w.Annotation(k, v)
			}
			p := w.Obj()
			h.addPod(p)
			out[r] = append(out[r], p)
		}
	}
	return out
}

// boundPerGroup counts the bound pods of each sub-group.
func boundPerGroup(bound map[string]string, groups [][]*v1.Pod) []int {
	out := make([]int, len(groups))
	for r, pods := range groups {
		for _, p := range pods {
			if _, ok := bound[p.Name]; ok {
				out[r]++
			}
		}
	}
	return out
}

// Room for all but one pod of three replicas of 4: two replicas start
// whole, the third places none of its pods (never 3 of its 4), and the
// whole's quorum in replicas decides whether anything starts.
func TestSubGroupsBelowQuorumPlaceNothing(t *testing.T) {
	for _, tt := range []struct {
		name         string
		minSubGroups int
		want         []int
		wantMsg      string
	}{
		{name: "two of three replicas are enough", minSubGroups: 2, want: []int{4, 4, 0},
			wantMsg: `sub-group "2" of gang default/serve cannot reach its quorum`},
		{name: "three replicas are needed", minSubGroups: 3, want: []int{0, 0, 0},
			wantMsg: "gang default/serve: 2 of 3 sub-groups could reach their quorum, annotation " + framework.SubGroupAnnotation + " asks for 3"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			// 11 CPUs for 12 pods of 1 CPU.
			for i := range 5 {
				h.addNode(fmt.Sprintf("n%d", i), "2")
			}
			h.addNode("n5", "1")
			groups := h.addReplicas("serve", 3, 4, "1", tt.minSubGroups, nil)
			h.cycle()
			if got := boundPerGroup(h.boundTo(), groups); !slices.Equal(got, tt.want) {
				t.Fatalf("bound per replica = %v, want %v", got, tt.want)
			}
			evts := strings.Join(eventsWith(h.events(), "Warning FailedScheduling "), "\n")
			if !strings.Contains(evts, tt.wantMsg) {
				t.Errorf("FailedScheduling events\n%s\nlack %q", evts, tt.wantMsg)
			}
			// Nothing tentative is left on the snapshot's nodes beyond
			// what was assumed.
			placed := 0
			for _, ni := range h.sched.snapshot.NodeInfos() {
				placed += len(ni.Pods)
			}
			if want := tt.want[0] + tt.want[1] + tt.want[2]; placed != want {
				t.Errorf("snapshot holds %d pods, want the %d assumed", placed, want)
			}
		})
	}
}

// An elastic replica (more pods than its quorum) places its extra pods
// when they fit, and a replica whose quorum runs already takes more pods
// one at a time.
func TestSubGroupsAreElastic(t *testing.T) {
	h := newHarness(t)
	h.addNode("n0", "5")
	var pods []*v1.Pod
	for i := range 6 {
		p := st.MakePod().Name(fmt.Sprintf("e-%d", i)).Group("e").MinAvailable("3").
			Annotation(framework.SubGroupAnnotation, "workers").
			Annotation(framework.SubGroupMinAvailableAnnotation, "3").
			Req(res{v1.ResourceCPU: "1"}).Obj()
		h.addPod(p)
		pods = append(pods, p)
	}
	h.cycle()
	if got := len(h.boundTo()); got != 5 {
		t.Fatalf("bound %d pods, want 5: the quorum of 3 and 2 extra", got)
	}
}

// Each replica within one rack, the whole within one block: with racks of
// 4 CPUs in two blocks, replicas of 4 pods of 1 CPU each take one rack
// each, all in the block that holds them all.
func TestSubGroupTopologyNestedInTheWhole(t *testing.T) {
	h := newHarness(t)
	// Block b1: three racks of 2 nodes of 2 CPUs; block b2: two such
	// racks, the first with a node too small.
	h.addRack("b1", "r1", 2, "2")
	h.addRack("b1", "r2", 2, "2")
	h.addRack("b1", "r3", 2, "2")
	h.addRack("b2", "r4", 2, "2")
	h.addRack("b2", "r5", 2, "2")
	groups := h.addReplicas("serve", 3, 4, "1", 3, map[string]string{
		framework.TopologyRequiredAnnotation:         topologyaware.BlockLabel,
		framework.SubGroupTopologyRequiredAnnotation: rackKey,
	})
	h.cycle()
	bound := h.boundTo()
	if got := boundPerGroup(bound, groups); !slices.Equal(got, []int{4, 4, 4}) {
		t.Fatalf("bound per replica = %v, want all", got)
	}
	used := map[string]bool{}
	for r, pods := range groups {
		racks, _ := racksOf(bound, pods)
		if len(racks) != 1 {
			t.Errorf("replica %d spans racks %v, want one", r, racks)
		}
		for rack := range racks {
			if used[rack] {
				t.Errorf("replica %d shares rack %s with another replica", r, rack)
			}
			used[rack] = true
			if rack != "r1" && rack != "r2" && rack != "r3" {
				t.Errorf("replica %d in rack %s, outside block b1 that holds the whole", r, rack)
			}
		}
	}
}

// A replica that fits in no rack of its own is not placed, and its pods
// say which level holds it back.
func TestSubGroupTopologyNamesTheLevel(t *testing.T) {
	h := newHarness(t)
	h.addRack("b1", "r1", 2, "2")
	h.addRack("b1", "r2", 3, "1")
	groups := h.addReplicas("serve", 2, 4, "1", 1, map[string]string{framework.SubGroupTopologyRequiredAnnotation: rackKey})
	h.cycle()
	bound := h.boundTo()
	got := boundPerGroup(bound, groups)
	if got[0]+got[1] != 4 || (got[0] != 0 && got[0] != 4) {
		t.Fatalf("bound per replica = %v, want one whole replica", got)
	}
	evts := strings.Join(eventsWith(h.events(), "Warning FailedScheduling "), "\n")
	for _, want := range []string{"of gang default/serve must run within one " + rackKey + " domain", "annotation " + framework.SubGroupTopologyRequiredAnnotation} {
		if !strings.Contains(evts, want) {
			t.Errorf("FailedScheduling events\n%s\nlack %q", evts, want)
		}
	}
}

// A malformed sub-group quorum keeps the whole gang from starting, and its
// pods name the annotation and the pod.
func TestSubGroupBadQuorumIsReported(t *testing.T) {
	h := newHarness(t)
	h.addNode("n0", "8")
	for i := range 2 {
		h.addPod(st.MakePod().Name(fmt.Sprintf("b-%d", i)).Group("b").MinAvailable("2").
			Annotation(framework.SubGroupAnnotation, "x").
			Annotation(framework.SubGroupMinAvailableAnnotation, "two").
			Req(res{v1.ResourceCPU: "1"}).Obj())
	}
	h.cycle()
	if b := h.bindings(); len(b) != 0 {
		t.Fatalf("bound %v, want nothing", b)
	}
	evts := strings.Join(eventsWith(h.events(), "Warning FailedScheduling "), "\n")
	if want := `annotation ` + framework.SubGroupMinAvailableAnnotation + `="two" of pod default/b-0 must be an integer >= 1`; !strings.Contains(evts, want) {
		t.Errorf("FailedScheduling events\n%s\nlack %q", evts, want)
	}
}
