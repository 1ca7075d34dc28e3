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
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	st "github.com/batch-scheduler/batch-scheduler/pkg/testing"
)

// spreadGangPod returns a 1-cpu member of gang "spread" (min-available 4)
// labelled app=spread, spread over zones with maxSkew 1.
func spreadGangPod(name string) *v1.Pod {
	p := st.MakePod().Name(name).Group("spread").MinAvailable("4").Label("app", "spread").Req(res{"cpu": "1"}).Obj()
	p.Spec.TopologySpreadConstraints = []v1.TopologySpreadConstraint{{
		MaxSkew:           1,
		TopologyKey:       v1.LabelTopologyZone,
		WhenUnsatisfiable: v1.DoNotSchedule,
		LabelSelector:     &metav1.LabelSelector{MatchLabels: map[string]string{"app": "spread"}},
	}}
	return p
}

// A gang of 4 spread over two zones with maxSkew 1 lands 2+2 in one
// cycle, although scoring alone would put all four in the roomy zone a:
// each member sees those placed before it.
func TestGangTopologySpreadOneCycle(t *testing.T) {
	h := newHarness(t)
	for _, n := range []struct{ name, zone, cpu string }{{"a1", "a", "64"}, {"a2", "a", "64"}, {"b1", "b", "2"}, {"b2", "b", "2"}} {
		h.addNodeObj(st.MakeNode().Name(n.name).Label(v1.LabelTopologyZone, n.zone).Label(v1.LabelHostname, n.name).
			Capacity(res{v1.ResourceCPU: n.cpu, v1.ResourcePods: "110"}).Obj())
	}
	for i := range 4 {
		h.addPod(spreadGangPod(fmt.Sprintf("s-%d", i)))
	}

	h.cycle()

	bound := h.boundTo()
	if len(bound) != 4 {
		t.Fatalf("bound %v, want all 4 pods in one cycle", bound)
	}
	zones := map[byte]int{}
	for _, node := range bound {
		zones[node[0]]++
	}
	if zones['a'] != 2 || zones['b'] != 2 {
		t.Errorf("pods per zone = a:%d b:%d, want 2+2 (bindings %v)", zones['a'], zones['b'], bound)
	}
}

// antiGangPod returns a 1-cpu member of gang "anti" (min-available 4)
// that may not share a node with another member.
func antiGangPod(name string) *v1.Pod {
	p := st.MakePod().Name(name).Group("anti").MinAvailable("4").Label("app", "anti").Req(res{"cpu": "1"}).Obj()
	p.Spec.Affinity = &v1.Affinity{PodAntiAffinity: &v1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []v1.PodAffinityTerm{{
		LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "anti"}},
		TopologyKey:   v1.LabelHostname,
	}}}}
	return p
}

// A gang whose members repel each other by hostname lands on 4 distinct
// nodes in one cycle; with only 3 nodes, nothing is bound (all or
// nothing) and the reason is kube-scheduler's.
func TestGangRequiredAntiAffinityOneCycle(t *testing.T) {
	for _, nodes := range []int{5, 3} {
		t.Run(fmt.Sprintf("%d nodes", nodes), func(t *testing.T) {
			h := newHarness(t)
			for i := range nodes {
				name := fmt.Sprintf("n%d", i)
				// n0 is far roomier: scoring alone would stack the gang there.
				cpu := "8"
				if i == 0 {
					cpu = "64"
				}
				h.addNodeObj(st.MakeNode().Name(name).Label(v1.LabelHostname, name).
					Capacity(res{v1.ResourceCPU: cpu, v1.ResourcePods: "110"}).Obj())
			}
			for i := range 4 {
				h.addPod(antiGangPod(fmt.Sprintf("a-%d", i)))
			}

			h.cycle()

			bound := h.boundTo()
			if nodes < 4 {
				if len(bound) != 0 {
					t.Fatalf("bound %v, want nothing: the gang does not fit", bound)
				}
				evts := eventsWith(h.events(), "Warning FailedScheduling ")
				if len(evts) == 0 || !strings.Contains(strings.Join(evts, "\n"), "node(s) didn't match pod anti-affinity rules") {
					t.Errorf("FailedScheduling events %q do not give the anti-affinity reason", evts)
				}
				return
			}
			used := map[string]bool{}
			for _, node := range bound {
				used[node] = true
			}
			if len(bound) != 4 || len(used) != 4 {
				t.Errorf("bindings %v, want 4 pods on 4 distinct nodes", bound)
			}
		})
	}
}
