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

package preemption

import (
	"maps"
	"slices"
	"strconv"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
	st "github.com/batch-scheduler/batch-scheduler/pkg/testing"
)

// multiLevelPreemptor returns the pending job "preemptor" of priority 100
// and quorum minAvailable, split into sub-groups by the project's own
// annotations: quorums[s] is the quorum of sub-group "s" and sizes[s]
// its pods (p<s>-0, p<s>-1, …), one of which must hold its quorum; loose
// pods (launcher-<i>) are in no sub-group. Every pod asks for 1 cpu.
func multiLevelPreemptor(t *testing.T, minAvailable int32, loose int, quorums, sizes []int) *framework.Job {
	t.Helper()
	var pods []*v1.Pod
	for s, n := range sizes {
		for i := range n {
			pods = append(pods, st.MakePod().Name("p"+strconv.Itoa(s)+"-"+strconv.Itoa(i)).Priority(100).
				Req(map[v1.ResourceName]string{v1.ResourceCPU: "1"}).
				Annotation(framework.SubGroupAnnotation, strconv.Itoa(s)).
				Annotation(framework.SubGroupMinAvailableAnnotation, strconv.Itoa(quorums[s])).
				Annotation(framework.MinSubGroupsAnnotation, "1").Obj())
		}
	}
	for i := range loose {
		pods = append(pods, st.MakePod().Name("launcher-"+strconv.Itoa(i)).Priority(100).
			Req(map[v1.ResourceName]string{v1.ResourceCPU: "1"}).Obj())
	}
	job := &framework.Job{ID: framework.JobID{Namespace: "default", Name: "preemptor", Gang: true}, MinAvailable: minAvailable, Pending: pods, Priority: 100}
	rules := []framework.SubGroupRule{{KeyAnnotation: framework.SubGroupAnnotation, Source: "test"}}
	if err := framework.SplitSubGroups(job, rules, nil, nil); err != nil {
		t.Fatal(err)
	}
	if len(job.SubGroups) != len(sizes) {
		t.Fatalf("job has %d sub-groups, want %d", len(job.SubGroups), len(sizes))
	}
	return job
}

// simulateJob runs the victim search for job over nodes of the given
// cpus, each running plain pods of priority 10 and 1 cpu (victims[node]
// of them, named <node>-<i>), with every pod of a lower priority than
// 100 a possible victim, or as a reservation's wait when wait is set
// (every pod of another job may be waited for). It returns the result,
// and checks the snapshot is as it was afterwards.
func simulateJob(t *testing.T, nodeCPU map[string]string, victims map[string]int, job *framework.Job, wait bool) SimulationResult {
	t.Helper()
	ctx := t.Context()
	fwk := testFramework(t)
	jobs := jobList{}
	var nodes []*framework.NodeInfo
	for _, name := range slices.Sorted(maps.Keys(nodeCPU)) {
		node := st.MakeNode().Name(name).Capacity(map[v1.ResourceName]string{v1.ResourceCPU: nodeCPU[name], v1.ResourcePods: "110"}).Obj()
		ni := framework.NewNodeInfo(node)
		for i := range victims[name] {
			info, byName := newJob(t, []*v1.Pod{running(name+"-"+strconv.Itoa(i), name, 10, "1", i).Obj()})
			jobs[info.ID] = info
			for _, task := range byName {
				ni.AddTask(task)
			}
		}
		nodes = append(nodes, ni)
	}
	state := framework.NewCycleState()
	if s := fwk.RunPreFilterPlugins(ctx, state, job); !s.IsSuccess() {
		t.Fatalf("PreFilter: %v", s)
	}
	e := &Engine{opts: Options{Snapshot: newTestSnapshot(nodes...), Jobs: jobs}}
	c := &Cycle{Framework: fwk, State: state, Job: job, Placements: [][]*framework.NodeInfo{nil}}
	b := SearchBounds{Victims: func(t *framework.TaskInfo) bool { return t.Priority() < 100 }}
	var mode *waitMode
	if wait {
		b, mode = SearchBounds{}, &waitMode{policy: framework.ReservePolicy{Now: t0.Time}, ends: map[types.UID]expectedEnd{}, held: map[string]bool{}}
	}
	res, err := e.simulate(ctx, c, b, goingSet{}, mode)
	if err != nil {
		t.Fatal(err)
	}
	for _, ni := range nodes {
		if got, want := len(ni.Pods), victims[ni.Name()]; got != want {
			t.Errorf("node %s runs %d pods after the simulation, want %d as before", ni.Name(), got, want)
		}
	}
	return res
}

// placedNames returns the names of the pods res places, sorted, checking
// they are those of res.Placements.
func placedNames(t *testing.T, res SimulationResult) []string {
	t.Helper()
	var out []string
	for _, pod := range res.Placed {
		if _, ok := res.Placements[string(pod.UID)]; !ok {
			t.Errorf("pod %s is placed but has no placement", pod.Name)
		}
		out = append(out, pod.Name)
	}
	if len(res.Placements) != len(res.Placed) {
		t.Errorf("%d placements for %d placed pods", len(res.Placements), len(res.Placed))
	}
	slices.Sort(out)
	return out
}

// TestSimulateMultiLevelPreemptor: a multi-level preemptor keeps no
// placement of a sub-group that does not reach its quorum, nor the
// victims chosen for them, and its room goes to the next sub-groups, as
// the scheduler's cycle trims such a sub-group.
func TestSimulateMultiLevelPreemptor(t *testing.T) {
	tests := []struct {
		name    string
		nodeCPU map[string]string
		victims map[string]int
		job     func(*testing.T) *framework.Job
		wait    bool
		// wantPlaced are the pods placed; wantVictims is, per preemptor
		// pod, how many victims make room for it.
		wantPlaced  []string
		wantVictims map[string]int
	}{{
		// Three victims make room for three pods: the first sub-group
		// whole, one pod of the second, which is trimmed with its victim.
		name:    "no victim for a sub-group below its quorum",
		nodeCPU: map[string]string{"a": "2", "b": "1"},
		victims: map[string]int{"a": 2, "b": 1},
		job: func(t *testing.T) *framework.Job {
			return multiLevelPreemptor(t, 2, 0, []int{2, 2}, []int{2, 2})
		},
		wantPlaced:  []string{"p0-0", "p0-1"},
		wantVictims: map[string]int{"p0-0": 1, "p0-1": 1},
	}, {
		// The room of the trimmed pod of the second sub-group goes to the
		// pod in no sub-group.
		name:    "the room of a trimmed sub-group goes to the pods in none",
		nodeCPU: map[string]string{"a": "2", "b": "1"},
		victims: map[string]int{"a": 2, "b": 1},
		job: func(t *testing.T) *framework.Job {
			return multiLevelPreemptor(t, 2, 1, []int{2, 2}, []int{2, 2})
		},
		wantPlaced:  []string{"launcher-0", "p0-0", "p0-1"},
		wantVictims: map[string]int{"p0-0": 1, "p0-1": 1, "launcher-0": 1},
	}, {
		// Free room for two pods: the first sub-group (quorum 3) cannot
		// reach its quorum, the second (quorum 2) takes the room.
		name:    "the room of a trimmed sub-group goes to the next",
		nodeCPU: map[string]string{"a": "2"},
		job: func(t *testing.T) *framework.Job {
			return multiLevelPreemptor(t, 2, 0, []int{3, 2}, []int{3, 2})
		},
		wantPlaced: []string{"p1-0", "p1-1"},
	}, {
		// A wait stops once the Permit plugins (none here) accept, but
		// not within a sub-group: the first one whole.
		name:    "a wait stops after a whole sub-group",
		nodeCPU: map[string]string{"a": "2", "b": "2"},
		victims: map[string]int{"a": 2, "b": 2},
		job: func(t *testing.T) *framework.Job {
			return multiLevelPreemptor(t, 2, 0, []int{2, 2}, []int{2, 2})
		},
		wait:        true,
		wantPlaced:  []string{"p0-0", "p0-1"},
		wantVictims: map[string]int{"p0-0": 1, "p0-1": 1},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res := simulateJob(t, tc.nodeCPU, tc.victims, tc.job(t), tc.wait)
			if !res.Fits {
				t.Errorf("the preemptor does not fit")
			}
			if got := placedNames(t, res); !slices.Equal(got, tc.wantPlaced) {
				t.Errorf("placed %v, want %v", got, tc.wantPlaced)
			}
			got := map[string]int{}
			for _, v := range res.Victims {
				got[v.Preemptor.Name]++
			}
			if !maps.Equal(got, tc.wantVictims) && len(got)+len(tc.wantVictims) > 0 {
				t.Errorf("victims per preemptor pod %v, want %v", got, tc.wantVictims)
			}
		})
	}
}

// A sub-group that must run within one rack is simulated within one
// rack: its first pod takes the cheapest victim, on node a of rack r1,
// whose other node runs a pod that may not be evicted; the second pod
// cannot follow it there, so the simulation undoes r1 and evicts for
// both pods in r2 instead, never across racks. Once the sub-group runs
// in a rack, its next pod is kept to that rack.
func TestSimulateSubGroupWithinOneDomain(t *testing.T) {
	const rack = "example.com/rack"
	type victim struct {
		node     string
		priority int32
	}
	build := func(t *testing.T, bound string, pending int) (*framework.Job, []*framework.NodeInfo, jobList) {
		t.Helper()
		jobs := jobList{}
		var nodes []*framework.NodeInfo
		for _, n := range []struct{ name, rack string }{{"a", "r1"}, {"x", "r1"}, {"c", "r2"}, {"d", "r2"}} {
			node := st.MakeNode().Name(n.name).Label(rack, n.rack).
				Capacity(map[v1.ResourceName]string{v1.ResourceCPU: "1", v1.ResourcePods: "110"}).Obj()
			nodes = append(nodes, framework.NewNodeInfo(node))
		}
		victims := []victim{{"a", 5}, {"x", 200}, {"c", 10}, {"d", 10}}
		if bound != "" {
			victims[slices.IndexFunc(victims, func(v victim) bool { return v.node == bound })].priority = -1
		}
		for i, v := range victims {
			if v.priority < 0 {
				continue
			}
			info, byName := newJob(t, []*v1.Pod{running(v.node+"-0", v.node, v.priority, "1", i).Obj()})
			jobs[info.ID] = info
			for _, task := range byName {
				nodes[i].AddTask(task)
			}
		}
		var pods, running []*v1.Pod
		var onNodes []string
		sub := func(name string) *st.PodWrapper {
			return st.MakePod().Name(name).Priority(100).Req(map[v1.ResourceName]string{v1.ResourceCPU: "1"}).
				Annotation(framework.SubGroupAnnotation, "0").Annotation(framework.SubGroupMinAvailableAnnotation, "2").
				Annotation(framework.SubGroupTopologyRequiredAnnotation, rack)
		}
		if bound != "" {
			p := sub("p0-bound").Node(bound).Obj()
			running, onNodes = append(running, p), append(onNodes, bound)
			nodes[slices.IndexFunc(nodes, func(n *framework.NodeInfo) bool { return n.Name() == bound })].AddTask(
				framework.NewTaskInfo(p, framework.GroupResolver{}))
		}
		for i := range pending {
			pods = append(pods, sub("p0-"+strconv.Itoa(i)).Obj())
		}
		job := &framework.Job{ID: framework.JobID{Namespace: "default", Name: "preemptor", Gang: true}, MinAvailable: 1, Pending: pods, Priority: 100}
		if err := framework.SplitSubGroups(job, []framework.SubGroupRule{{KeyAnnotation: framework.SubGroupAnnotation, Source: "test"}}, running, onNodes); err != nil {
			t.Fatal(err)
		}
		return job, nodes, jobs
	}
	simulate := func(t *testing.T, job *framework.Job, nodes []*framework.NodeInfo, jobs jobList) SimulationResult {
		t.Helper()
		fwk := testFramework(t)
		state := framework.NewCycleState()
		if s := fwk.RunPreFilterPlugins(t.Context(), state, job); !s.IsSuccess() {
			t.Fatalf("PreFilter: %v", s)
		}
		e := &Engine{opts: Options{Snapshot: newTestSnapshot(nodes...), Jobs: jobs}}
		c := &Cycle{Framework: fwk, State: state, Job: job, Placements: [][]*framework.NodeInfo{nil}}
		res, err := e.Simulate(t.Context(), c, SearchBounds{Victims: func(t *framework.TaskInfo) bool { return t.Priority() < 100 }}, nil)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	victimNodes := func(res SimulationResult) []string {
		var out []string
		for _, v := range res.Victims {
			out = append(out, v.Task.PodObject().Spec.NodeName)
		}
		slices.Sort(out)
		return out
	}

	t.Run("pending", func(t *testing.T) {
		job, nodes, jobs := build(t, "", 2)
		res := simulate(t, job, nodes, jobs)
		if !res.Fits {
			t.Fatal("the preemptor does not fit")
		}
		got := []string{res.Placements[string(job.Pending[0].UID)], res.Placements[string(job.Pending[1].UID)]}
		slices.Sort(got)
		if !slices.Equal(got, []string{"c", "d"}) {
			t.Errorf("placed on %v, want c and d, both in rack r2", got)
		}
		if v := victimNodes(res); !slices.Equal(v, []string{"c", "d"}) {
			t.Errorf("victims on %v, want c and d only (none on a, in the rack the sub-group does not use)", v)
		}
	})
	t.Run("running", func(t *testing.T) {
		// One pod of the sub-group runs on d (rack r2): the next goes to
		// c, evicting there, though a's victim is cheaper.
		job, nodes, jobs := build(t, "d", 1)
		res := simulate(t, job, nodes, jobs)
		if got := res.Placements[string(job.Pending[0].UID)]; !res.Fits || got != "c" {
			t.Errorf("placed on %q (fits %v), want c, in the rack the sub-group runs in", got, res.Fits)
		}
	})
}
