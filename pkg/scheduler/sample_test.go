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
	"sync/atomic"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
	st "github.com/batch-scheduler/batch-scheduler/pkg/testing"
)

func TestNumNodesToFind(t *testing.T) {
	tests := []struct {
		all, percentage, want int
	}{
		{all: 0, want: 0},
		{all: 50, want: 50},
		{all: 100, want: 100},
		{all: 101, want: 100},   // 50% is 50: at least 100
		{all: 500, want: 230},   // 46%
		{all: 1000, want: 420},  // 42%
		{all: 5000, want: 500},  // 10%
		{all: 15000, want: 750}, // at least 5%
		{all: 5000, percentage: 100, want: 5000},
		{all: 5000, percentage: 150, want: 5000},
		{all: 5000, percentage: 20, want: 1000},
		{all: 5000, percentage: 1, want: 100},
		{all: 50, percentage: 1, want: 50},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%d nodes, %d%%", tt.all, tt.percentage), func(t *testing.T) {
			if got := numNodesToFind(tt.all, tt.percentage); got != tt.want {
				t.Errorf("numNodesToFind(%d, %d) = %d, want %d", tt.all, tt.percentage, got, tt.want)
			}
		})
	}
}

// In a large cluster each pod's Filter looks at a window of the nodes, and
// successive windows cover every node.
func TestFilterLooksAtAWindowOfTheNodes(t *testing.T) {
	const nodes, pods = 1000, 5
	var calls atomic.Int32
	seen := map[string]int{}
	hook := &hookPlugin{filter: func(_ *v1.Pod, n *framework.NodeInfo) *framework.Status {
		calls.Add(1)
		return nil
	}}
	h := newHarnessWith(t, harnessConfig{hook: hook})
	for i := range nodes {
		h.addNode(fmt.Sprintf("n-%04d", i), "10")
	}
	for i := range pods {
		h.addPod(st.MakePod().Name(fmt.Sprintf("p-%d", i)).Req(res{"cpu": "1"}).Obj())
	}
	for i := range pods {
		calls.Store(0)
		h.sched.scheduleOne(t.Context())
		if got, want := int(calls.Load()), numNodesToFind(nodes, 0); got != want {
			t.Errorf("pod %d: Filter ran on %d nodes, want a window of %d", i, got, want)
		}
	}
	h.sched.bindWG.Wait()
	for _, node := range h.boundTo() {
		seen[node]++
	}
	if len(seen) != pods {
		t.Errorf("pods bound to %v, want %d pods on %d nodes", seen, pods, pods)
	}
	if got, want := h.sched.nextStartNode, pods*numNodesToFind(nodes, 0)%nodes; got != want {
		t.Errorf("next window starts at %d, want %d", got, want)
	}
}

// A pod that fits on no node of its window is tried on every node: it
// lands on the one node with room, wherever that is.
func TestFilterFallsBackToEveryNode(t *testing.T) {
	const nodes = 300
	h := newHarnessWith(t, harnessConfig{opts: func(o *Options) { o.PercentageOfNodesToScore = 1 }})
	for i := range nodes {
		cpu := "1"
		if i == nodes-1 {
			cpu = "8"
		}
		h.addNode(fmt.Sprintf("n-%04d", i), cpu)
	}
	for i := range 3 {
		h.addPod(st.MakePod().Name(fmt.Sprintf("p-%d", i)).Req(res{"cpu": "2"}).Obj())
	}
	for range 3 {
		h.sched.scheduleOne(t.Context())
	}
	h.sched.bindWG.Wait()
	want := fmt.Sprintf("n-%04d", nodes-1)
	bound := h.boundTo()
	if len(bound) != 3 {
		t.Fatalf("bound %v, want 3 pods on %s", bound, want)
	}
	for pod, node := range bound {
		if node != want {
			t.Errorf("pod %s bound to %s, want %s", pod, node, want)
		}
	}
}

// A profile's own percentageOfNodesToScore overrides the scheduler's.
func TestPercentageOfNodesToScoreByProfile(t *testing.T) {
	s := &Scheduler{opts: Options{PercentageOfNodesToScore: 10, ProfilePercentageOfNodesToScore: map[string]int{"all": 100, "adaptive": 0}}}
	for profile, want := range map[string]int{"all": 100, "adaptive": 0, "other": 10} {
		if got := s.percentageOfNodesToScore(profile); got != want {
			t.Errorf("profile %q: %d, want %d", profile, got, want)
		}
	}
	if got := numNodesToFind(1000, s.percentageOfNodesToScore("all")); got != 1000 {
		t.Errorf("a profile at 100 looks at %d of 1000 nodes", got)
	}
	if got := numNodesToFind(5000, s.percentageOfNodesToScore("other")); got != 500 {
		t.Errorf("10 %% of 5000 nodes is a window of %d", got)
	}
}

// A pod nominated to a node (preemption made room there) is filtered on
// that node alone when it fits there, as kube-scheduler tries a nominated
// node first, and on every node when it does not (yet).
func TestNominatedNodeIsTriedAlone(t *testing.T) {
	const nodes = 1000
	var calls atomic.Int32
	hook := &hookPlugin{filter: func(_ *v1.Pod, n *framework.NodeInfo) *framework.Status {
		calls.Add(1)
		return nil
	}}
	h := newHarnessWith(t, harnessConfig{hook: hook})
	for i := range nodes {
		cpu := "10"
		if i == 7 {
			cpu = "1"
		}
		h.addNode(fmt.Sprintf("n-%04d", i), cpu)
	}
	fits := st.MakePod().Name("fits").Req(res{"cpu": "1"}).Obj()
	fits.Status.NominatedNodeName = "n-0500"
	h.addPod(fits)
	h.sched.scheduleOne(t.Context())
	if got := calls.Load(); got != 1 {
		t.Errorf("Filter ran on %d nodes for a pod that fits on its nominated node, want 1", got)
	}
	calls.Store(0)
	full := st.MakePod().Name("full").Req(res{"cpu": "2"}).Obj()
	full.Status.NominatedNodeName = "n-0007"
	h.addPod(full)
	h.sched.scheduleOne(t.Context())
	// The hook runs after NodeResourcesFit, which turns n-0007 away.
	if got := calls.Load(); got < nodes-1 {
		t.Errorf("Filter ran on %d nodes for a pod whose nominated node has no room, want every other node", got)
	}
	h.sched.bindWG.Wait()
	bound := h.boundTo()
	if bound["fits"] != "n-0500" || bound["full"] == "" || bound["full"] == "n-0007" {
		t.Errorf("bound %v, want fits on n-0500 and full elsewhere than n-0007", bound)
	}
}

// A pod whose required node affinity names its node, as a DaemonSet's
// does, is filtered on that node alone, wherever the window is; when that
// node is full, its message counts every other node as left out.
func TestPodOfNamedNodeFilteredThereAlone(t *testing.T) {
	const nodes = 1000
	var calls atomic.Int32
	hook := &hookPlugin{filter: func(*v1.Pod, *framework.NodeInfo) *framework.Status {
		calls.Add(1)
		return nil
	}}
	h := newHarnessWith(t, harnessConfig{hook: hook, postFilter: []string{}})
	for i := range nodes {
		h.addNode(fmt.Sprintf("n-%04d", i), "2")
	}
	daemon := func(name, cpu string) *v1.Pod {
		p := st.MakePod().Name(name).Req(res{"cpu": cpu}).Obj()
		p.Spec.Affinity = &v1.Affinity{NodeAffinity: &v1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &v1.NodeSelector{
			NodeSelectorTerms: []v1.NodeSelectorTerm{{MatchFields: []v1.NodeSelectorRequirement{{Key: "metadata.name", Operator: v1.NodeSelectorOpIn, Values: []string{"n-0777"}}}}}}}}
		return p
	}
	h.addPod(daemon("ds-0", "1"))
	h.cycle()
	if got := calls.Load(); got != 1 {
		t.Errorf("Filter ran on %d nodes, want 1", got)
	}
	h.sched.bindWG.Wait()
	if got := h.boundTo()["ds-0"]; got != "n-0777" {
		t.Errorf("ds-0 bound to %q, want n-0777", got)
	}
	h.addPod(daemon("ds-1", "3"))
	h.cycle()
	const want = "Warning FailedScheduling 0/1000 nodes are available: 999 node(s) didn't satisfy plugin(s) [NodeAffinity], 1 Insufficient cpu."
	if evts := eventsWith(h.events(), "Warning FailedScheduling "); !slices.Contains(evts, want) {
		t.Errorf("events %q lack %q", evts, want)
	}
}
