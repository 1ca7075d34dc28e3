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
	"context"
	"fmt"
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
	st "github.com/batch-scheduler/batch-scheduler/pkg/testing"
)

// cpuBudget puts the borrowed pods in one group that may lose pods while
// what they took is below max milli-CPUs.
type cpuBudget struct{ max int64 }

func (b cpuBudget) Group(t *framework.TaskInfo) string {
	if borrowed(t) {
		return "borrowed"
	}
	return ""
}

func (b cpuBudget) Allows(_ string, taken framework.ResourceAmounts) bool {
	return taken[v1.ResourceCPU] < b.max
}

// budgetPlugin makes room for borrowed pods' eviction within budget (nil:
// none).
type budgetPlugin struct {
	budget framework.VictimBudget
	out    framework.RoomOutcome
}

func (*budgetPlugin) Name() string                                       { return "Budget" }
func (*budgetPlugin) EventsToRegister() []framework.ClusterEventWithHint { return nil }

func (p *budgetPlugin) PostFilter(ctx context.Context, _ *framework.CycleState, _ *framework.Job, room framework.RoomMaker) (*framework.PostFilterResult, *framework.Status) {
	out, err := room.MakeRoomWithin(ctx, borrowed, p.budget)
	p.out = out
	if err != nil {
		return nil, framework.AsStatus(err)
	}
	if !out.Fits {
		return nil, framework.NewStatus(framework.Unschedulable, "nothing to take back within the budget")
	}
	return &framework.PostFilterResult{}, nil
}

// borrowedNodes adds n nodes of 2 CPUs, each running a borrowed pod of 2
// CPUs: b-0, b-1, ...; with gang set, the pods are one gang of quorum n.
func borrowedNodes(h *harness, n int, gang bool) {
	for i := range n {
		node := fmt.Sprintf("n%d", i)
		h.addNode(node, "2")
		p := running(fmt.Sprintf("b-%d", i), node, 0, "2", i).Label("borrowed", "true")
		if gang {
			p = p.Group("b").MinAvailable(fmt.Sprint(n))
		}
		h.addPod(p.Obj())
	}
}

// A victim budget bounds what one MakeRoom takes from a group: a group
// loses pods while its budget allows more, a victim gang counting as one
// job; a job that needs more than that evicts nothing.
func TestVictimBudgetBoundsTheVictims(t *testing.T) {
	for _, tt := range []struct {
		name        string
		budget      framework.VictimBudget
		gangVictims bool
		incoming    []*v1.Pod
		wantEvicted []string
	}{{
		name:        "no budget: the gang of 3 takes 3 pods",
		incoming:    gangPods("g", 3, "3", 0, "2"),
		wantEvicted: []string{"b-0", "b-1", "b-2"},
	}, {
		name:        "a budget the third pod would cross: nothing is evicted",
		budget:      cpuBudget{max: 4000},
		incoming:    gangPods("g", 3, "3", 0, "2"),
		wantEvicted: nil,
	}, {
		name:        "a budget that allows a third pod",
		budget:      cpuBudget{max: 4001},
		incoming:    gangPods("g", 3, "3", 0, "2"),
		wantEvicted: []string{"b-0", "b-1", "b-2"},
	}, {
		name:        "a victim gang goes whole as one job",
		budget:      cpuBudget{max: 1},
		gangVictims: true,
		incoming:    []*v1.Pod{st.MakePod().Name("single").Req(res{v1.ResourceCPU: "2"}).Obj()},
		wantEvicted: []string{"b-0", "b-1", "b-2"},
	}} {
		t.Run(tt.name, func(t *testing.T) {
			pl := &budgetPlugin{budget: tt.budget}
			h := newHarnessWith(t, harnessConfig{postFilter: []string{"Budget"}, extra: []framework.Plugin{pl}})
			ev := newEvictions(h)
			borrowedNodes(h, 3, tt.gangVictims)
			for _, p := range tt.incoming {
				h.addPod(p)
			}
			h.cycle()
			if got := ev.evicted(); !slices.Equal(got, tt.wantEvicted) {
				t.Errorf("evicted %v, want %v (outcome %+v)", got, tt.wantEvicted, pl.out)
			}
		})
	}
}

// What earlier evictions are taking counts against the budget, and their
// victims, terminating or about to, are not chosen again: a second job
// waiting in the same group's budget evicts nothing more.
func TestVictimBudgetCountsEvictionsUnderWay(t *testing.T) {
	pl := &budgetPlugin{budget: cpuBudget{max: 2000}}
	h := newHarnessWith(t, harnessConfig{postFilter: []string{"Budget"}, extra: []framework.Plugin{pl}})
	ev := newEvictions(h)
	borrowedNodes(h, 2, false)
	h.addPod(st.MakePod().Name("first").Req(res{v1.ResourceCPU: "2"}).Obj())
	h.cycle()
	if got := ev.evicted(); len(got) != 1 {
		t.Fatalf("the first job evicted %v, want one pod", got)
	}
	// The victim is still on its node: the harness's cache has not seen
	// the eviction.
	h.addPod(st.MakePod().Name("second").Req(res{v1.ResourceCPU: "2"}).Obj())
	h.cycle()
	if got := ev.attempted(); len(got) != 1 {
		t.Errorf("evictions asked for %v; want only the first job's victim", got)
	}
	if pl.out.Victims != 0 {
		t.Errorf("the second job's MakeRoom = %+v, want no victims", pl.out)
	}
}

// A pod that is already terminating is no victim: evicting it again frees
// nothing sooner.
func TestTerminatingPodsAreNoVictims(t *testing.T) {
	pl := &budgetPlugin{}
	h := newHarnessWith(t, harnessConfig{postFilter: []string{"Budget"}, extra: []framework.Plugin{pl}})
	ev := newEvictions(h)
	h.addNode("n0", "2")
	h.addPod(running("b-0", "n0", 0, "2", 0).Label("borrowed", "true").Terminating().Obj())
	h.addPod(st.MakePod().Name("incoming").Req(res{v1.ResourceCPU: "2"}).Obj())
	h.cycle()
	if got := ev.attempted(); len(got) != 0 {
		t.Errorf("evictions asked for %v, want none", got)
	}
	if pl.out.Fits {
		t.Errorf("MakeRoom = %+v, want no room", pl.out)
	}
}
