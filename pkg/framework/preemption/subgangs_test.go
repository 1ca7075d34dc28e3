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
	"fmt"
	"maps"
	"slices"
	"strconv"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/events"

	"github.com/batch-scheduler/batch-scheduler/pkg/dialects"
	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
	frameworkruntime "github.com/batch-scheduler/batch-scheduler/pkg/framework/runtime"
	"github.com/batch-scheduler/batch-scheduler/pkg/plugins/defaultbinder"
	"github.com/batch-scheduler/batch-scheduler/pkg/plugins/noderesources"
	"github.com/batch-scheduler/batch-scheduler/pkg/plugins/prioritysort"
	st "github.com/batch-scheduler/batch-scheduler/pkg/testing"
)

// jobList is a JobLister over fixed JobInfos.
type jobList map[framework.JobID]*framework.JobInfo

func (l jobList) Job(id framework.JobID) (*framework.JobInfo, bool) {
	j, ok := l[id]
	return j, ok
}

// newJob returns the JobInfo of pods (all of one job) and its tasks by
// pod name.
func newJob(t testing.TB, pods []*v1.Pod) (*framework.JobInfo, map[string]*framework.TaskInfo) {
	t.Helper()
	byName := map[string]*framework.TaskInfo{}
	var info *framework.JobInfo
	for _, pod := range pods {
		task := framework.NewTaskInfo(pod, dialects.Resolver())
		if info == nil {
			info = framework.NewJobInfo(task.Job)
		}
		info.SetTask(task)
		byName[pod.Name] = task
	}
	if err := info.ValidationError(); err != nil {
		t.Fatalf("job %s: %v", info.ID, err)
	}
	return info, byName
}

// victimSim returns a simulation over jobs that has chosen no victim
// yet, to try the victim rules on their own.
func victimSim(jobs ...*framework.JobInfo) *simulation {
	l := jobList{}
	for _, j := range jobs {
		l[j.ID] = j
	}
	return &simulation{
		e:           &Engine{opts: Options{Jobs: l}},
		c:           &Cycle{Job: &framework.Job{ID: framework.JobID{Namespace: "default", Name: "preemptor"}}},
		policy:      func(*framework.TaskInfo) bool { return true },
		jobs:        map[framework.JobID]*framework.JobInfo{},
		victims:     map[types.UID]*Victim{},
		gangVictims: map[framework.JobID]int{},
	}
}

// choose records ts as victims sim chose before (for an earlier pod of
// its job).
func choose(sim *simulation, ts ...*framework.TaskInfo) {
	for _, t := range ts {
		sim.victims[t.GetUID()] = &Victim{Task: t}
		if t.Job.Gang {
			sim.gangVictims[t.Job]++
		}
	}
}

// replicaPod returns running pod r<replica>-<i> of gang "lws" on node,
// with 1 cpu, created minutes after t0.
func replicaPod(replica, i int, node string, minutes int) *st.PodWrapper {
	return running(fmt.Sprintf("r%d-%d", replica, i), node, 10, "1", minutes).Group("lws")
}

// annotatedReplicas returns gang "lws" of quorum minAvailable, declared by
// the project's own annotations: sizes[r] running pods in sub-group "r"
// (pods r<r>-0, r<r>-1, …) of quorum 4, minSubGroups of which must hold
// theirs, all on node n.
func annotatedReplicas(minAvailable, minSubGroups int, sizes ...int) []*v1.Pod {
	var pods []*v1.Pod
	for r, n := range sizes {
		for i := range n {
			pods = append(pods, replicaPod(r, i, "n", 0).MinAvailable(strconv.Itoa(minAvailable)).
				Annotation(framework.SubGroupAnnotation, strconv.Itoa(r)).
				Annotation(framework.SubGroupMinAvailableAnnotation, "4").
				Annotation(framework.MinSubGroupsAnnotation, strconv.Itoa(minSubGroups)).Obj())
		}
	}
	return pods
}

// policyReplicas is annotatedReplicas with the sub-groups declared by the
// gang's group object (a rule "replica" keyed by label "replica", of
// quorum 4 and min-sub-groups 2; the gang's quorum minAvailable) and
// extra running pods in no sub-group (launcher-<i>).
func policyReplicas(t testing.TB, minAvailable int32, loose int, sizes ...int) (*framework.JobInfo, map[string]*framework.TaskInfo) {
	t.Helper()
	var pods []*v1.Pod
	for r, n := range sizes {
		for i := range n {
			pods = append(pods, replicaPod(r, i, "n", 0).Label("replica", strconv.Itoa(r)).Obj())
		}
	}
	for i := range loose {
		pods = append(pods, running(fmt.Sprintf("launcher-%d", i), "n", 10, "1", 0).Group("lws").Obj())
	}
	byName := map[string]*framework.TaskInfo{}
	var info *framework.JobInfo
	for _, pod := range pods {
		task := framework.NewTaskInfo(pod, dialects.Resolver())
		if info == nil {
			// The policy first, so that no task is without a quorum.
			info = framework.NewJobInfo(task.Job)
			info.SetGroupPolicy(task.GroupKind(), &framework.GroupPolicy{MinMember: minAvailable, Source: "test policy",
				SubGroups: []framework.SubGroupRule{{Name: "replica", KeyLabels: []string{"replica"}, MinMember: 4, MinSubGroups: 2, Source: "test policy"}}})
		}
		info.SetTask(task)
		byName[pod.Name] = task
	}
	if err := info.ValidationError(); err != nil {
		t.Fatalf("job %s: %v", info.ID, err)
	}
	if len(info.SubGroupRules()) != 1 {
		t.Fatalf("job %s has sub-group rules %v, want the policy's", info.ID, info.SubGroupRules())
	}
	return info, byName
}

// names returns the pod names of ts, sorted.
func names(ts []*framework.TaskInfo) []string {
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = t.GetName()
	}
	slices.Sort(out)
	return out
}

// replicaNames returns the names of pods r<replica>-0 … r<replica>-<n-1>.
func replicaNames(replica, n int) []string {
	var out []string
	for i := range n {
		out = append(out, fmt.Sprintf("r%d-%d", replica, i))
	}
	return out
}

// TestExpandSubGangs: a victim taken out of a sub-gang that it would
// leave below its quorum takes the whole sub-gang, and a gang left with
// fewer sub-gangs at quorum than its min-sub-groups (or fewer pods than
// its quorum) goes whole; an extra pod goes alone.
func TestExpandSubGangs(t *testing.T) {
	// Three replicas of quorum 4, two of which must hold theirs; replica 0
	// runs an extra pod. 13 pods, quorum 8.
	annotated := func(t *testing.T) (*framework.JobInfo, map[string]*framework.TaskInfo) {
		return newJob(t, annotatedReplicas(8, 2, 5, 4, 4))
	}
	policy := func(t *testing.T) (*framework.JobInfo, map[string]*framework.TaskInfo) {
		return policyReplicas(t, 8, 0, 5, 4, 4)
	}
	all := slices.Concat(replicaNames(0, 5), replicaNames(1, 4), replicaNames(2, 4))
	tests := []struct {
		name string
		job  func(*testing.T) (*framework.JobInfo, map[string]*framework.TaskInfo)
		// before are the victims chosen for earlier pods; take is the
		// candidate's.
		before, take []string
		want         []string
	}{
		{name: "an extra pod goes alone", job: annotated, take: []string{"r0-4"}, want: []string{"r0-4"}},
		{name: "a pod of a replica at quorum takes the replica", job: annotated, take: []string{"r1-2"}, want: replicaNames(1, 4)},
		{name: "the same by the group's rule", job: policy, take: []string{"r1-2"}, want: replicaNames(1, 4)},
		{name: "two pods of the replica with an extra take it", job: annotated, take: []string{"r0-1", "r0-3"}, want: replicaNames(0, 5)},
		{name: "two replicas leave one of the two needed: the gang goes", job: annotated, take: []string{"r1-0", "r2-3"}, want: all},
		{name: "the same by the group's rule", job: policy, take: []string{"r1-0", "r2-3"}, want: all},
		{name: "a replica gone already counts", job: annotated, before: replicaNames(2, 4), take: []string{"r1-1"}, want: all},
		{name: "an extra taken already makes the next pod of its replica take it", job: annotated, before: []string{"r0-4"},
			take: []string{"r0-0"}, want: replicaNames(0, 4)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			info, byName := tt.job(t)
			sim := victimSim(info)
			for _, n := range tt.before {
				choose(sim, byName[n])
			}
			c := &candidate{}
			for _, n := range tt.take {
				c.victims = append(c.victims, byName[n])
			}
			sim.expandGangs(c)
			want := slices.Clone(tt.want)
			for _, n := range tt.before {
				want = slices.DeleteFunc(want, func(s string) bool { return s == n })
			}
			slices.Sort(want)
			if got := names(c.victims); !slices.Equal(got, want) {
				t.Errorf("victims %v, want %v", got, want)
			}
			if len(c.victims) != len(slices.Compact(names(c.victims))) {
				t.Errorf("a victim is listed twice: %v", names(c.victims))
			}
		})
	}
}

// TestExpandSubGangsLoosePods: pods of a multi-level gang in no
// sub-group keep the whole-gang rule.
func TestExpandSubGangsLoosePods(t *testing.T) {
	// Two replicas of 4 and two launchers; quorum 10: every pod.
	info, byName := policyReplicas(t, 10, 2, 4, 4)
	sim := victimSim(info)
	c := &candidate{victims: []*framework.TaskInfo{byName["launcher-1"]}}
	sim.expandGangs(c)
	if got, want := len(c.victims), 10; got != want {
		t.Errorf("%d victims %v, want the whole gang (%d)", got, names(c.victims), want)
	}
	// Quorum 8: a launcher may go alone.
	info, byName = policyReplicas(t, 8, 2, 4, 4)
	sim = victimSim(info)
	c = &candidate{victims: []*framework.TaskInfo{byName["launcher-1"]}}
	sim.expandGangs(c)
	if got := names(c.victims); !slices.Equal(got, []string{"launcher-1"}) {
		t.Errorf("victims %v, want the launcher alone", got)
	}
}

// TestAboveQuorumSubGangs: a pod of a multi-level gang is an elastic
// extra only when its sub-gang and the whole keep their quorums without
// it, counting the victims chosen so far.
func TestAboveQuorumSubGangs(t *testing.T) {
	tests := []struct {
		name   string
		pods   []*v1.Pod
		before []string
		pod    string
		want   bool
	}{
		{name: "a pod of a replica of 5 with quorum 4", pods: annotatedReplicas(8, 2, 5, 4, 4), pod: "r0-2", want: true},
		{name: "a pod of a replica at exactly 4", pods: annotatedReplicas(8, 2, 5, 4, 4), pod: "r1-2", want: false},
		{name: "the extra is taken already", pods: annotatedReplicas(8, 2, 5, 4, 4), before: []string{"r0-4"}, pod: "r0-2", want: false},
		{name: "a replica gone leaves the gang at its min-sub-groups", pods: annotatedReplicas(8, 2, 5, 4, 4),
			before: replicaNames(2, 4), pod: "r0-2", want: true},
		{name: "the whole at its quorum in pods", pods: annotatedReplicas(13, 2, 5, 4, 4), pod: "r0-2", want: false},
		{name: "the whole below its min-sub-groups", pods: annotatedReplicas(8, 3, 5, 4, 4),
			before: replicaNames(2, 4), pod: "r0-2", want: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			info, byName := newJob(t, tt.pods)
			sim := victimSim(info)
			for _, n := range tt.before {
				choose(sim, byName[n])
			}
			if got := sim.aboveQuorum(byName[tt.pod]); got != tt.want {
				t.Errorf("aboveQuorum(%s) = %v, want %v", tt.pod, got, tt.want)
			}
		})
	}

	t.Run("a pod in no sub-group keeps the whole-gang rule", func(t *testing.T) {
		info, byName := policyReplicas(t, 8, 1, 4, 4)
		if !victimSim(info).aboveQuorum(byName["launcher-0"]) {
			t.Errorf("the launcher of a gang of 9 with quorum 8 is not above quorum")
		}
		info, byName = policyReplicas(t, 9, 1, 4, 4)
		if victimSim(info).aboveQuorum(byName["launcher-0"]) {
			t.Errorf("the launcher of a gang of 9 with quorum 9 is above quorum")
		}
	})
}

// testSnapshot is a Snapshot over fixed NodeInfos.
type testSnapshot struct {
	list   []*framework.NodeInfo
	byName map[string]*framework.NodeInfo
}

func newTestSnapshot(nodes ...*framework.NodeInfo) *testSnapshot {
	s := &testSnapshot{list: nodes, byName: map[string]*framework.NodeInfo{}}
	for _, n := range nodes {
		s.byName[n.Name()] = n
	}
	return s
}

func (s *testSnapshot) NodeInfos() []*framework.NodeInfo { return s.list }

func (s *testSnapshot) Get(name string) (*framework.NodeInfo, bool) {
	n, ok := s.byName[name]
	return n, ok
}

func (s *testSnapshot) AddTask(node string, t *framework.TaskInfo) bool {
	n, ok := s.byName[node]
	if ok {
		n.AddTask(t)
	}
	return ok
}

func (s *testSnapshot) RemovePod(node string, uid types.UID) bool {
	n, ok := s.byName[node]
	return ok && n.RemovePod(uid)
}

// testHandle is the framework.Handle of the simulations' profile.
type testHandle struct{ client kubernetes.Interface }

func (h testHandle) ClientSet() kubernetes.Interface { return h.client }
func (h testHandle) EventRecorder() events.EventRecorder {
	return events.NewFakeRecorder(16)
}
func (h testHandle) SharedInformerFactory() informers.SharedInformerFactory {
	return informers.NewSharedInformerFactory(h.client, 0)
}

// simulateFor runs the victim search for one pending pod of 1 cpu of
// priority 100 over nodes holding pods (of job and others), with every
// pod of a lower priority a possible victim, and returns the victims.
func simulateFor(t *testing.T, nodeCPU map[string]string, job *framework.JobInfo) []*framework.TaskInfo {
	t.Helper()
	ctx := t.Context()
	fwk := testFramework(t)
	byNode := map[string][]*v1.Pod{}
	for _, task := range job.Tasks {
		byNode[task.NodeName] = append(byNode[task.NodeName], task.PodObject())
	}
	var nodes []*framework.NodeInfo
	for _, name := range slices.Sorted(maps.Keys(nodeCPU)) {
		node := st.MakeNode().Name(name).Capacity(map[v1.ResourceName]string{v1.ResourceCPU: nodeCPU[name], v1.ResourcePods: "110"}).Obj()
		ni := framework.NewNodeInfo(node)
		for _, task := range job.Tasks {
			if task.NodeName == name {
				ni.AddTask(task)
			}
		}
		nodes = append(nodes, ni)
	}
	preemptor := st.MakePod().Name("preemptor").Priority(100).Req(map[v1.ResourceName]string{v1.ResourceCPU: "1"}).Obj()
	pj := &framework.Job{ID: framework.JobID{Namespace: "default", Name: "preemptor"}, MinAvailable: 1, Pending: []*v1.Pod{preemptor}, Priority: 100}
	state := framework.NewCycleState()
	if s := fwk.RunPreFilterPlugins(ctx, state, pj); !s.IsSuccess() {
		t.Fatalf("PreFilter: %v", s)
	}
	e := &Engine{opts: Options{Snapshot: newTestSnapshot(nodes...), Jobs: jobList{job.ID: job}}}
	c := &Cycle{Framework: fwk, State: state, Job: pj, Placements: [][]*framework.NodeInfo{nil}}
	res, err := e.Simulate(ctx, c, SearchBounds{Victims: func(t *framework.TaskInfo) bool { return t.Priority() < 100 }}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Fits {
		t.Fatalf("the preemptor does not fit even with victims")
	}
	return victimTasks(res.Victims)
}

// testFramework returns the simulations' profile: PrioritySort,
// NodeResourcesFit and DefaultBinder, no Permit plugin.
func testFramework(t *testing.T) *frameworkruntime.Framework {
	t.Helper()
	ctx := t.Context()
	reg := frameworkruntime.NewRegistry()
	for name, factory := range map[string]framework.PluginFactory{
		prioritysort.Name: prioritysort.New, noderesources.Name: noderesources.New, defaultbinder.Name: defaultbinder.New,
	} {
		if err := reg.Register(name, factory); err != nil {
			t.Fatal(err)
		}
	}
	fwk, err := frameworkruntime.NewFramework(ctx, reg, frameworkruntime.ProfileSpec{SchedulerName: "batch-scheduler",
		Plugins: map[frameworkruntime.ExtensionPoint]frameworkruntime.PluginSet{
			frameworkruntime.QueueSortPoint: {{Name: prioritysort.Name}},
			frameworkruntime.PreFilterPoint: {{Name: noderesources.Name}},
			frameworkruntime.FilterPoint:    {{Name: noderesources.Name}},
			frameworkruntime.BindPoint:      {{Name: defaultbinder.Name}},
		}}, testHandle{client: fake.NewClientset()})
	if err != nil {
		t.Fatal(err)
	}
	return fwk
}

// checkLevels fails t when victims leave a sub-group of job running but
// below its quorum of 4, or the gang running with fewer than minSubGroups
// sub-groups at quorum or fewer than minAvailable pods.
func checkLevels(t *testing.T, job *framework.JobInfo, victims []*framework.TaskInfo, minSubGroups, minAvailable int) {
	t.Helper()
	gone := map[types.UID]bool{}
	for _, v := range victims {
		gone[v.GetUID()] = true
	}
	left := map[string]int{}
	total := 0
	for _, task := range job.Tasks {
		if gone[task.GetUID()] {
			continue
		}
		total++
		left[task.GetAnnotations()[framework.SubGroupAnnotation]]++
	}
	if total == 0 {
		return
	}
	holding := 0
	for g, n := range left {
		if n < 4 {
			t.Errorf("victims %v leave sub-group %s with %d pods, below its quorum of 4", names(victims), g, n)
		} else {
			holding++
		}
	}
	if holding < minSubGroups || total < minAvailable {
		t.Errorf("victims %v leave the gang with %d pods, %d sub-groups at quorum; want at least %d and %d, or nothing",
			names(victims), total, holding, minAvailable, minSubGroups)
	}
}

// TestSimulateSubGangs: a preemptor that needs one pod's room, on nodes
// full of a multi-level gang's pods (three replicas of quorum 4, two of
// which must hold theirs, spread over three nodes).
func TestSimulateSubGangs(t *testing.T) {
	// layout places pod r<replica>-<i> on node layout[replica][i],
	// created minutes[replica] after t0.
	build := func(t *testing.T, layout [][]string, minutes []int) *framework.JobInfo {
		var pods []*v1.Pod
		for r, nodes := range layout {
			for i, node := range nodes {
				pods = append(pods, replicaPod(r, i, node, minutes[r]).MinAvailable("8").
					Annotation(framework.SubGroupAnnotation, strconv.Itoa(r)).
					Annotation(framework.SubGroupMinAvailableAnnotation, "4").
					Annotation(framework.MinSubGroupsAnnotation, "2").Obj())
			}
		}
		info, _ := newJob(t, pods)
		return info
	}

	t.Run("an extra pod goes alone", func(t *testing.T) {
		// Replica 0 runs 5 pods; the others, started later (less important
		// by start time), 4.
		job := build(t, [][]string{{"a", "a", "a", "b", "c"}, {"a", "b", "b", "c"}, {"a", "b", "c", "c"}}, []int{0, 10, 10})
		victims := simulateFor(t, map[string]string{"a": "5", "b": "4", "c": "4"}, job)
		if len(victims) != 1 || victims[0].GetAnnotations()[framework.SubGroupAnnotation] != "0" {
			t.Errorf("victims %v, want one pod of replica 0", names(victims))
		}
		checkLevels(t, job, victims, 2, 8)
	})

	t.Run("without an extra pod a whole replica goes", func(t *testing.T) {
		job := build(t, [][]string{{"a", "a", "b", "c"}, {"a", "b", "b", "c"}, {"a", "b", "c", "c"}}, []int{0, 10, 20})
		victims := simulateFor(t, map[string]string{"a": "4", "b": "4", "c": "4"}, job)
		if len(victims) != 4 {
			t.Errorf("victims %v, want one whole replica", names(victims))
		}
		checkLevels(t, job, victims, 2, 8)
	})
}

// BenchmarkGangVictims measures the victim rules of gangs (aboveQuorum
// over every pod of a victim gang, then expandGangs of a candidate that
// takes one of them): plain pods, a single-level elastic gang of 64 pods
// with quorum 48, and a multi-level one of 16 replicas of 4 pods
// (quorum 4, 12 of them needed).
//
//	go test -run '^$' -bench BenchmarkGangVictims -benchmem ./pkg/framework/preemption/
func BenchmarkGangVictims(b *testing.B) {
	var plain, single, multi []*v1.Pod
	for i := range 64 {
		plain = append(plain, running(fmt.Sprintf("plain-%d", i), "n", 10, "1", 0).Obj())
		single = append(single, running(fmt.Sprintf("p-%d", i), "n", 10, "1", 0).Group("elastic").MinAvailable("48").Obj())
		multi = append(multi, replicaPod(i/4, i%4, "n", 0).MinAvailable("48").
			Annotation(framework.SubGroupAnnotation, strconv.Itoa(i/4)).
			Annotation(framework.SubGroupMinAvailableAnnotation, "4").
			Annotation(framework.MinSubGroupsAnnotation, "12").Obj())
	}
	for _, bc := range []struct {
		name string
		pods []*v1.Pod
	}{{"plain", plain}, {"singleLevel", single}, {"multiLevel", multi}} {
		b.Run(bc.name, func(b *testing.B) {
			var tasks []*framework.TaskInfo
			var jobs []*framework.JobInfo
			if bc.name == "plain" {
				for _, pod := range bc.pods {
					task := framework.NewTaskInfo(pod, dialects.Resolver())
					j := framework.NewJobInfo(task.Job)
					j.SetTask(task)
					tasks, jobs = append(tasks, task), append(jobs, j)
				}
			} else {
				j, byName := newJob(b, bc.pods)
				for _, pod := range bc.pods {
					tasks = append(tasks, byName[pod.Name])
				}
				jobs = append(jobs, j)
			}
			sim := victimSim(jobs...)
			b.ReportAllocs()
			for b.Loop() {
				// Each simulation looks its jobs up afresh.
				sim.jobs, sim.subGangs, sim.gangs = map[framework.JobID]*framework.JobInfo{}, nil, nil
				spare := 0
				for _, task := range tasks {
					if sim.aboveQuorum(task) {
						spare++
					}
				}
				sim.expandGangs(&candidate{victims: tasks[5:6:6]})
			}
		})
	}
}
