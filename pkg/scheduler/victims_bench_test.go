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
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/batch-scheduler/batch-scheduler/pkg/cache"
	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
	"github.com/batch-scheduler/batch-scheduler/pkg/framework/preemption"
	frameworkruntime "github.com/batch-scheduler/batch-scheduler/pkg/framework/runtime"
	"github.com/batch-scheduler/batch-scheduler/pkg/plugins"
	st "github.com/batch-scheduler/batch-scheduler/pkg/testing"
)

// BenchmarkVictimSearchAffinity measures the victim search (the
// preemption library's simulation, Engine.Simulate, without the
// evictions) of kube-scheduler's
// GangPreemptionAffinity workload: on each node one anchor pod of high
// priority and 10 low-priority pods, all matching the gang's required pod
// affinity (hostname); a gang as large as the cluster whose pods each
// need a whole node, so that every low-priority pod goes. updates is the
// default profile, where InterPodAffinity and PodTopologySpread update
// the PreFilter state per victim; rerun is the same profile with their
// PodPreFilterExtensions hidden, so that every check runs PreFilterPod
// over the whole cluster again (the search before the extensions): the
// baseline. With -short (hack/test-benchmarks.sh's smoke run) only the
// 20-node cluster: rerun at 100 nodes takes half a minute.
//
//	go test -run '^$' -bench BenchmarkVictimSearchAffinity -benchtime 3x ./pkg/scheduler/
func BenchmarkVictimSearchAffinity(b *testing.B) {
	sizes := []int{20, 100}
	if testing.Short() {
		sizes = sizes[:1]
	}
	for _, nodes := range sizes {
		for _, variant := range []struct {
			name     string
			registry func(testing.TB) *frameworkruntime.Registry
		}{
			{"updates", func(testing.TB) *frameworkruntime.Registry { return plugins.NewInTreeRegistry() }},
			{"rerun", rerunRegistry},
		} {
			b.Run(fmt.Sprintf("%dNodes_%dPodsPerNode/%s", nodes, 10, variant.name), func(b *testing.B) {
				benchVictimSearch(b, variant.registry(b), nodes, 10)
			})
		}
	}
}

// gangAffinityLabels are the labels of the workload's anchor and
// low-priority pods, which the gang's affinity term selects.
var gangAffinityLabels = map[string]string{"app": "blue", "label1": "value1", "label2": "value2", "label3": "value3", "label4": "value4"}

func benchVictimSearch(b *testing.B, registry *frameworkruntime.Registry, nodes, podsPerNode int) {
	s, c, _, _ := newBenchSchedulerWith(b, registry)
	labelled := func(w *st.PodWrapper) *v1.Pod {
		for k, v := range gangAffinityLabels {
			w = w.Label(k, v)
		}
		return w.Obj()
	}
	for i := range nodes {
		name := fmt.Sprintf("n%03d", i)
		addPreemptionBenchNode(b, c, name)
		pods := []*v1.Pod{labelled(running(fmt.Sprintf("anchor-%03d", i), name, 9999999, "10m", 0).Namespace("gang-preempt-2"))}
		for j := range podsPerNode {
			pods = append(pods, labelled(running(fmt.Sprintf("low-%03d-%02d", i, j), name, 0, "40m", j).Namespace("gang-preempt-1")))
		}
		for _, p := range pods {
			if err := c.AddPod(p); err != nil {
				b.Fatal(err)
			}
		}
	}
	for i := range nodes {
		p := st.MakePod().Name(fmt.Sprintf("pod-gang-%03d", i)).Namespace("gang-preempt-0").Group("gang").MinAvailable(fmt.Sprint(nodes)).
			Priority(8888888).Req(res{v1.ResourceCPU: "3970m", v1.ResourceMemory: "500Mi"}).Obj()
		p.Spec.Affinity = &v1.Affinity{PodAffinity: &v1.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []v1.PodAffinityTerm{{
			LabelSelector:     &metav1.LabelSelector{MatchLabels: gangAffinityLabels},
			TopologyKey:       v1.LabelHostname,
			NamespaceSelector: &metav1.LabelSelector{},
		}}}}
		if err := c.AddPendingPod(p); err != nil {
			b.Fatal(err)
		}
	}
	pc := startBenchPreemption(b, s, c)
	// DefaultPreemption's policy: it reads the record's priority, never the pod.
	policy := func(t *framework.TaskInfo) bool { return t.Priority() < 8888888 }

	b.ResetTimer()
	for range b.N {
		res, err := s.preemption.Simulate(b.Context(), pc, preemption.SearchBounds{Victims: policy}, nil)
		if err != nil {
			b.Fatal(err)
		}
		if !res.Fits || len(res.Victims) != nodes*podsPerNode || len(res.Placed) != nodes {
			b.Fatalf("simulation: fits %v with %d victims and %d pods placed, want every low-priority pod (%d) gone and the gang (%d) placed",
				res.Fits, len(res.Victims), len(res.Placed), nodes*podsPerNode, nodes)
		}
	}
}

// addPreemptionBenchNode adds to c a node of the perf suite's preemption
// workloads: 4 CPUs, 32Gi, 110 pods, labelled with its hostname.
func addPreemptionBenchNode(b *testing.B, c *cache.SchedulerCache, name string) {
	node := st.MakeNode().Name(name).Label(v1.LabelHostname, name).
		Capacity(res{v1.ResourceCPU: "4", v1.ResourceMemory: "32Gi", v1.ResourcePods: "110"}).Obj()
	if err := c.AddOrUpdateNode(node); err != nil {
		b.Fatal(err)
	}
}

// startBenchPreemption starts the cycle of the one job c's queue holds,
// as scheduleOne does, up to the placement that fails, and returns what
// the preemption library's simulation is given of it.
func startBenchPreemption(b *testing.B, s *Scheduler, c *cache.SchedulerCache) *preemption.Cycle {
	if n := c.Queue().Lengths().Active; n != 1 {
		b.Fatalf("%d active jobs, want the preemptor's alone", n)
	}
	qj, err := c.Queue().Pop(b.Context())
	if err != nil {
		b.Fatal(err)
	}
	cy, err := s.newCycle(qj)
	if err != nil || cy == nil {
		b.Fatalf("newCycle: %v, %v", cy, err)
	}
	if err := c.UpdateSnapshot(s.snapshot); err != nil {
		b.Fatal(err)
	}
	fwk := s.opts.Profiles[testSchedulerName]
	if st := fwk.RunPreFilterPlugins(b.Context(), cy.state, cy.job); !st.IsSuccess() {
		b.Fatalf("PreFilter: %v", st)
	}
	return &preemption.Cycle{Framework: fwk, State: cy.state, Job: cy.job, Placements: cy.roomPlacements()}
}
