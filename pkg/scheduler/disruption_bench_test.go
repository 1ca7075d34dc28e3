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

	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
	"github.com/batch-scheduler/batch-scheduler/pkg/framework/preemption"
	"github.com/batch-scheduler/batch-scheduler/pkg/plugins"
	st "github.com/batch-scheduler/batch-scheduler/pkg/testing"
)

// BenchmarkVictimSearchGangs measures one preemptor's victim search
// (Engine.Simulate, without the evictions) in kube-scheduler's
// PreemptionPodGroupDisruptionMode workload: nodes of 4 CPUs, each running
// 10 pods of 300m, every pod a member of a gang of 10 whose members run
// on 10 different nodes; one pod of high priority that needs 3,970m, so
// that every pod of the node it takes goes, and with each its whole gang.
// going is the same search with 4 of the 10 gangs on every node
// already other preemptions' victims (passed as going, as the engine does
// while earlier evictions are under way): what a preemptor in the middle
// of the run searches. Their room counts as free, so the pod takes the 4
// pods' room and evicts the other 6 gangs. With -short (the smoke run), 100 nodes.
//
//	go test -run '^$' -bench BenchmarkVictimSearchGangs -benchtime 20x ./pkg/scheduler/
func BenchmarkVictimSearchGangs(b *testing.B) {
	sizes := []int{100, 1000}
	if testing.Short() {
		sizes = sizes[:1]
	}
	for _, nodes := range sizes {
		for _, variant := range []struct {
			name  string
			going bool
		}{{"fresh", false}, {"going", true}} {
			b.Run(fmt.Sprintf("%dNodes/%s", nodes, variant.name), func(b *testing.B) {
				benchGangVictimSearch(b, nodes, variant.going)
			})
		}
	}
}

func benchGangVictimSearch(b *testing.B, nodes int, withGoing bool) {
	const perNode, gangSize = 10, 10
	s, c, _, _ := newBenchSchedulerWith(b, plugins.NewInTreeRegistry())
	for i := range nodes {
		addPreemptionBenchNode(b, c, fmt.Sprintf("n%04d", i))
	}
	// Gang g's member j runs on node (g + j*nodes/gangSize) mod nodes:
	// each node holds perNode members of perNode different gangs.
	gangs := nodes * perNode / gangSize
	var goingTasks []*framework.TaskInfo
	for g := range gangs {
		for j := range gangSize {
			node := fmt.Sprintf("n%04d", (g+j*nodes/gangSize)%nodes)
			p := running(fmt.Sprintf("gang-%04d-%d", g, j), node, 1000, "300m", j).Namespace("gang-preempt-1").
				Group(fmt.Sprintf("gang-%04d", g)).MinAvailable(fmt.Sprint(gangSize)).Obj()
			if err := c.AddPod(p); err != nil {
				b.Fatal(err)
			}
		}
	}
	p := st.MakePod().Name("pod-high-priority").Namespace("gang-preempt-0").Priority(9999999).
		Req(res{v1.ResourceCPU: "3970m", v1.ResourceMemory: "500Mi"}).Obj()
	if err := c.AddPendingPod(p); err != nil {
		b.Fatal(err)
	}
	pc := startBenchPreemption(b, s, c)
	wantVictims, wantBorrowed := perNode*gangSize, 0
	if withGoing {
		// Gang g runs on the nodes congruent to g modulo stride, as the
		// k-th gang of each (k = g/stride): the going gangs are those of
		// k 0, 3, 6 and 9, 4 on every node.
		stride := nodes / gangSize
		wantVictims, wantBorrowed = (perNode-4)*gangSize, 4
		for g := range gangs {
			if (g/stride)%3 != 0 {
				continue
			}
			tasks, _, ok := c.JobTasks(framework.JobID{Namespace: "gang-preempt-1", Name: fmt.Sprintf("gang-%04d", g), Gang: true})
			if !ok || len(tasks) != gangSize {
				b.Fatalf("gang %d: %d tasks (found %v), want %d", g, len(tasks), ok, gangSize)
			}
			goingTasks = append(goingTasks, tasks...)
		}
	}
	// DefaultPreemption's policy: it reads the record's priority, never the pod.
	policy := func(t *framework.TaskInfo) bool { return t.Priority() < 9999999 }

	b.ResetTimer()
	for range b.N {
		res, err := s.preemption.Simulate(b.Context(), pc, preemption.SearchBounds{Victims: policy}, goingTasks)
		if err != nil {
			b.Fatal(err)
		}
		// The pods of one node go, each with its whole gang, but for
		// those going already.
		if !res.Fits || len(res.Victims) != wantVictims || len(res.Borrowed) != wantBorrowed || len(res.Placed) != 1 {
			b.Fatalf("simulation: fits %v with %d victims, %d borrowed and %d pods placed, want %d victims (whole gangs), %d borrowed and the pod placed",
				res.Fits, len(res.Victims), len(res.Borrowed), len(res.Placed), wantVictims, wantBorrowed)
		}
	}
}
