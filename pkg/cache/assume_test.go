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
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/batch-scheduler/batch-scheduler/pkg/dialects"
	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
	"github.com/batch-scheduler/batch-scheduler/pkg/metrics"
	"github.com/batch-scheduler/batch-scheduler/pkg/metrics/metricstest"
	"github.com/batch-scheduler/batch-scheduler/pkg/resources"
	"github.com/batch-scheduler/batch-scheduler/pkg/schedulingqueue"
	"github.com/batch-scheduler/batch-scheduler/pkg/tenancy"
	st "github.com/batch-scheduler/batch-scheduler/pkg/testing"
)

// checkInvariants verifies the cache's bookkeeping: every task on a node is
// the cache's current task of its pod and on exactly one node, Requested is
// the sum of the counted tasks, the assumed map matches the assumed tasks,
// jobs hold exactly the tasks that keep a job record and the index of
// the others exactly those (KeepsJobRecord), and the scheduling queue holds exactly the
// pods the informer reports pending (pending tasks, and assumed ones still
// reported pending).
func checkInvariants(t *testing.T, c *SchedulerCache) {
	t.Helper()
	c.mu.RLock()
	defer c.mu.RUnlock()
	onNode := map[types.UID]string{}
	infos := map[string]*framework.NodeInfo{}
	for name, item := range c.nodes {
		infos[name] = item.info
	}
	for name, info := range c.outside {
		if _, dup := infos[name]; dup {
			t.Errorf("node %s is both listed and kept aside", name)
		}
		if !c.excluded[name] {
			t.Errorf("node %s is kept aside but not excluded", name)
		}
		if info.Unused() {
			t.Errorf("unused node %s kept aside", name)
		}
		infos[name] = info
	}
	for name, info := range infos {
		item := &nodeItem{info: info}
		var req resources.Resource
		for _, task := range item.info.Pods {
			uid := task.GetUID()
			if other, dup := onNode[uid]; dup {
				t.Errorf("pod %s is on nodes %s and %s", task.Key(), other, name)
			}
			onNode[uid] = name
			if c.tasks[uid] != task {
				t.Errorf("node %s holds a task of %s that is not the cache's", name, task.Key())
			}
			if task.Counted {
				req.Add(task.Requests)
			}
		}
		got := item.info.Requested
		if req.MilliCPU != got.MilliCPU || req.Memory != got.Memory || req.Pods != got.Pods || req.EphemeralStorage != got.EphemeralStorage {
			t.Errorf("node %s: Requested %v, but its counted pods request %v", name, got, req)
		}
		if item.info.Placeholder && item.info.Unused() {
			t.Errorf("unused placeholder %s", name)
		}
	}
	pending, assumed := 0, 0
	queued := map[framework.JobID]map[types.UID]bool{}
	addQueued := func(id framework.JobID, uid types.UID) {
		if queued[id] == nil {
			queued[id] = map[types.UID]bool{}
		}
		queued[id][uid] = true
	}
	for uid, task := range c.tasks {
		a, isAssumed := c.assumed[uid]
		switch task.Status {
		case framework.TaskPending:
			pending++
			addQueued(task.Job, uid)
			if _, ok := onNode[uid]; ok {
				t.Errorf("pending pod %s is on a node", task.Key())
			}
		case framework.TaskAssumed:
			assumed++
			if !isAssumed {
				t.Errorf("assumed pod %s has no assumed state", task.Key())
				continue
			}
			if a.pending != nil {
				addQueued(task.Job, uid)
			}
			fallthrough
		case framework.TaskBound:
			if onNode[uid] != task.NodeName {
				t.Errorf("pod %s (%s) is on node %q, want %q", task.Key(), task.Status, onNode[uid], task.NodeName)
			}
		}
		if task.Status != framework.TaskAssumed && isAssumed {
			t.Errorf("%s pod %s has assumed state", task.Status, task.Key())
		}
		switch {
		case !KeepsJobRecord(task):
			if got, _ := c.jobless.get(task.Job.Namespace, task.Job.Name); got != task {
				t.Errorf("task of %s, kept without a job record, is not indexed under its job %s", task.Key(), task.Job)
			}
			if _, ok := c.jobs[task.Job]; ok {
				t.Errorf("another scheduler's bound pod %s outside any gang has a job record", task.Key())
			}
		default:
			if j, ok := c.jobs[task.Job]; !ok || j.Tasks[uid] != task {
				t.Errorf("job %s does not hold the task of %s", task.Job, task.Key())
			}
		}
	}
	indexed := 0
	for task := range c.jobless.all() {
		indexed++
		if got, _ := c.jobless.get(task.Job.Namespace, task.Job.Name); c.tasks[task.GetUID()] != task || KeepsJobRecord(task) || got != task {
			t.Errorf("the index of tasks without a job record holds %s under %s, not a current task without one", task.Key(), task.Job)
		}
	}
	if indexed != c.jobless.len() {
		t.Errorf("the index of tasks without a job record yields %d tasks, says it has %d", indexed, c.jobless.len())
	}
	if pending != c.numPending || assumed != len(c.assumed) {
		t.Errorf("pending %d (counter %d), assumed %d (map %d)", pending, c.numPending, assumed, len(c.assumed))
	}
	for id, j := range c.jobs {
		if len(j.Tasks) == 0 {
			t.Errorf("empty job %s", id)
		}
		for uid := range j.Tasks {
			if _, ok := c.tasks[uid]; !ok {
				t.Errorf("job %s holds unknown pod %s", id, uid)
			}
		}
	}
	checkQueueUsage(t, c)
	d := c.queue.Dump()
	dumped := map[string]int{}
	for _, jobs := range [][]schedulingqueue.JobDump{d.Active, d.Backoff, d.Unschedulable, d.InFlight, d.AwaitingBinding} {
		for _, jd := range jobs {
			dumped[jd.ID] = jd.PendingPods
		}
	}
	for id, uids := range queued {
		if got := dumped[id.String()]; got != len(uids) {
			t.Errorf("queue entry %s holds %d pods, want %d", id, got, len(uids))
		}
		delete(dumped, id.String())
	}
	for id := range dumped {
		t.Errorf("job %s is queued but has no pending pods", id)
	}
}

func idleCPU(t *testing.T, c *SchedulerCache, node string) int64 {
	t.Helper()
	idle, ok := nodeIdle(c, node)
	if !ok {
		t.Fatalf("node %s is not schedulable in the cache", node)
	}
	return idle.MilliCPU
}

func taskOf(t *testing.T, c *SchedulerCache, pod *v1.Pod) *framework.TaskInfo {
	t.Helper()
	j, ok := c.Job(dialects.Resolver().JobID(pod))
	if !ok {
		t.Fatalf("no job for pod %s", pod.Name)
	}
	task, ok := j.Tasks[pod.UID]
	if !ok {
		t.Fatalf("job %s has no task for pod %s", j.ID, pod.Name)
	}
	return task
}

// gangFixture is a cache with nodes n1 and n2 (10 CPUs each) and a gang g
// of two pending pods a and b (1 CPU each) that has been popped and placed
// (Done): the state in which the scheduler assumes.
func gangFixture(t *testing.T, opts Options) (*SchedulerCache, *testingclock.FakeClock, []*v1.Pod) {
	t.Helper()
	c, clk := newTestCache(t, opts)
	mustNoErr(t, "AddOrUpdateNode", c.AddOrUpdateNode(bigNode("n1")))
	mustNoErr(t, "AddOrUpdateNode", c.AddOrUpdateNode(bigNode("n2")))
	pods := []*v1.Pod{
		st.MakePod().Name("a").Group("g").Req(res{v1.ResourceCPU: "1"}).Obj(),
		st.MakePod().Name("b").Group("g").Req(res{v1.ResourceCPU: "1"}).Obj(),
	}
	for _, p := range pods {
		mustNoErr(t, "AddPendingPod", c.AddPendingPod(p))
	}
	mustPop(t, c.Queue(), "default/g")
	return c, clk, pods
}

func bound(pod *v1.Pod, node string) *v1.Pod {
	b := pod.DeepCopy()
	b.Spec.NodeName = node
	b.ResourceVersion = "2"
	return b
}

func TestAssumePodAccountsAtOnce(t *testing.T) {
	c, _, pods := gangFixture(t, Options{})
	s := NewSnapshot()
	mustNoErr(t, "UpdateSnapshot", c.UpdateSnapshot(s))
	gen := s.generation

	mustNoErr(t, "AssumePod", c.AssumePod(pods[0], "n1"))
	checkInvariants(t, c)
	if got := idleCPU(t, c, "n1"); got != 9000 {
		t.Errorf("idle CPU of n1 = %dm, want 9000m", got)
	}
	task := taskOf(t, c, pods[0])
	if task.Status != framework.TaskAssumed || task.NodeName != "n1" || !task.Counted || task.PodObject().Spec.NodeName != "n1" {
		t.Errorf("task = %+v, want counted, assumed on n1, with spec.nodeName n1", task)
	}
	if pods[0].Spec.NodeName != "" {
		t.Error("AssumePod modified the caller's pod")
	}
	j, _ := c.Job(dialects.Resolver().JobID(pods[0]))
	if p, b := countTasks(j); p != 1 || b != 1 {
		t.Errorf("Count = %d pending, %d bound; want 1, 1", p, b)
	}
	if got := j.Counts(); got != (framework.TaskCounts{Pending: 1, Assumed: 1}) || got.Running() != 1 {
		t.Errorf("Counts = %+v (running %d), want 1 pending, 1 assumed", got, got.Running())
	}

	// The next snapshot sees it: only n1 is cloned again.
	clones := s.clones
	mustNoErr(t, "UpdateSnapshot", c.UpdateSnapshot(s))
	if s.generation <= gen || s.clones != clones+1 {
		t.Errorf("snapshot generation %d -> %d, %d clones; want a newer generation and one clone", gen, s.generation, s.clones-clones)
	}
	n1, _ := s.Get("n1")
	if n1.Requested.MilliCPU != 1000 || len(n1.Pods) != 1 || n1.Pods[0].Status != framework.TaskAssumed {
		t.Errorf("n1 in the snapshot = %+v, want the assumed pod", n1)
	}
	// The pod stays queued, with its job, awaiting binding.
	c.Queue().Done(dialects.Resolver().JobID(pods[0]))
	if l := c.Queue().Lengths(); l.AwaitingBinding != 1 {
		t.Errorf("queue = %+v, want the job awaiting binding", l)
	}
	if got := metricstest.GaugeValue(t, c.metrics.CacheSize.WithLabelValues(metrics.CacheAssumedPods)); got != 1 {
		t.Errorf("assumed_pods gauge = %v, want 1", got)
	}
	if got := metricstest.GaugeValue(t, c.metrics.CacheSize.WithLabelValues(metrics.CacheAssignedPods)); got != 0 {
		t.Errorf("assigned_pods gauge = %v, want 0", got)
	}
}

// TaskState says what Job says of one task, through pending, assumed and
// gone.
func TestTaskState(t *testing.T) {
	c, _, pods := gangFixture(t, Options{})
	id := dialects.Resolver().JobID(pods[0])
	check := func(when string, wantStatus framework.TaskStatus, wantOK bool) {
		t.Helper()
		job, status, ok := c.TaskState(pods[0].UID)
		if ok != wantOK || status != wantStatus || (ok && job != id) {
			t.Errorf("%s: TaskState = %v, %q, %v; want %v, %q, %v", when, job, status, ok, id, wantStatus, wantOK)
		}
		if ok {
			j, _ := c.Job(id)
			if got := j.Tasks[pods[0].UID]; got == nil || got.Status != status {
				t.Errorf("%s: TaskState says %q, Job says %+v", when, status, got)
			}
		}
	}
	check("pending", framework.TaskPending, true)
	mustNoErr(t, "AssumePod", c.AssumePod(pods[0], "n1"))
	check("assumed", framework.TaskAssumed, true)
	mustNoErr(t, "ForgetPod", c.ForgetPod(pods[0]))
	check("forgotten", framework.TaskPending, true)
	mustNoErr(t, "RemovePendingPod", c.RemovePendingPod(pods[0]))
	check("removed", 0, false)
}

// JobTasks lists the tasks Job has, without the copy, through an assume.
func TestJobTasks(t *testing.T) {
	c, _, pods := gangFixture(t, Options{})
	id := dialects.Resolver().JobID(pods[0])
	mustNoErr(t, "AssumePod", c.AssumePod(pods[0], "n1"))
	tasks, facts, ok := c.JobTasks(id)
	j, _ := c.Job(id)
	if want := j.VictimFacts(); facts != want {
		t.Errorf("JobTasks says %+v of the gang, Job %+v", facts, want)
	}
	if !ok || len(tasks) != len(j.Tasks) || len(tasks) != len(pods) {
		t.Fatalf("JobTasks = %d tasks, %v; Job has %d, the fixture %d pods", len(tasks), ok, len(j.Tasks), len(pods))
	}
	for _, task := range tasks {
		if j.Tasks[task.GetUID()] != task {
			t.Errorf("task of %s is not the one Job holds", task.GetName())
		}
	}
	if _, _, ok := c.JobTasks(framework.JobID{Namespace: "default", Name: "nobody", Gang: true}); ok {
		t.Error("JobTasks found a gang that does not exist")
	}
}

func TestAssumePodErrors(t *testing.T) {
	tests := []struct {
		name    string
		prepare func(t *testing.T, c *SchedulerCache, pods []*v1.Pod)
		pod     func(pods []*v1.Pod) *v1.Pod
		node    string
		wantErr error
		want    string
	}{
		{
			name: "unknown pod", node: "n1", wantErr: ErrNotFound,
			pod: func([]*v1.Pod) *v1.Pod { return st.MakePod().Name("ghost").Obj() },
		},
		{
			name: "already assumed", node: "n2", wantErr: ErrWrongState, want: `already assumed on node "n1"`,
			prepare: func(t *testing.T, c *SchedulerCache, pods []*v1.Pod) {
				mustNoErr(t, "AssumePod", c.AssumePod(pods[0], "n1"))
			},
		},
		{
			name: "bound", node: "n1", wantErr: ErrWrongState, want: `bound to node "n2"`,
			prepare: func(t *testing.T, c *SchedulerCache, pods []*v1.Pod) {
				mustNoErr(t, "AddPod", c.AddPod(bound(pods[0], "n2")))
			},
		},
		{name: "unknown node", node: "n9", wantErr: ErrNotFound, want: "node not found"},
		{
			name: "placeholder node", node: "gone", wantErr: ErrNotFound, want: "placeholder",
			prepare: func(t *testing.T, c *SchedulerCache, _ []*v1.Pod) {
				mustNoErr(t, "AddPod", c.AddPod(st.MakePod().Name("x").Node("gone").Obj()))
			},
		},
		{name: "empty node name", node: "", want: "empty node name"},
		{name: "nil pod", node: "n1", pod: func([]*v1.Pod) *v1.Pod { return nil }, want: "nil pod"},
		{
			name: "pod names another node", node: "n1", wantErr: ErrWrongState, want: `spec.nodeName is "n2"`,
			pod: func(pods []*v1.Pod) *v1.Pod { return bound(pods[0], "n2") },
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, _, pods := gangFixture(t, Options{})
			if tt.prepare != nil {
				tt.prepare(t, c, pods)
			}
			pod := pods[0]
			if tt.pod != nil {
				pod = tt.pod(pods)
			}
			before := c.Dump()
			err := c.AssumePod(pod, tt.node)
			if err == nil || (tt.wantErr != nil && !errors.Is(err, tt.wantErr)) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("AssumePod: got %v, want %v containing %q", err, tt.wantErr, tt.want)
			}
			if after := c.Dump(); !equality.Semantic.DeepEqual(before.Nodes, after.Nodes) || !equality.Semantic.DeepEqual(before.Jobs, after.Jobs) {
				t.Errorf("a failed AssumePod changed the cache:\nbefore %+v\nafter  %+v", before, after)
			}
			checkInvariants(t, c)
		})
	}
	// A pod may name the node it is assumed on.
	c, _, pods := gangFixture(t, Options{})
	mustNoErr(t, "AssumePod", c.AssumePod(bound(pods[0], "n1"), "n1"))
}

// The informer confirms an assumed pod: the task is bound, accounted once,
// on the node the informer reports, and leaves the queue.
func TestAssumedPodConfirmed(t *testing.T) {
	tests := []struct {
		name string
		// confirm reports pod bound to node as the informer would.
		confirm  func(c *SchedulerCache, pod *v1.Pod, node string) error
		node     string
		finish   bool // FinishBinding before the confirmation
		wantIdle map[string]int64
	}{
		{
			name: "AddPod after FinishBinding", finish: true, node: "n1",
			confirm:  func(c *SchedulerCache, pod *v1.Pod, node string) error { return c.AddPod(bound(pod, node)) },
			wantIdle: map[string]int64{"n1": 9000, "n2": 10000},
		},
		{
			name: "AddPod before FinishBinding", node: "n1",
			confirm:  func(c *SchedulerCache, pod *v1.Pod, node string) error { return c.AddPod(bound(pod, node)) },
			wantIdle: map[string]int64{"n1": 9000, "n2": 10000},
		},
		{
			name: "UpdatePod", finish: true, node: "n1",
			confirm:  func(c *SchedulerCache, pod *v1.Pod, node string) error { return c.UpdatePod(pod, bound(pod, node)) },
			wantIdle: map[string]int64{"n1": 9000, "n2": 10000},
		},
		{
			name: "the default handler's sequence", finish: true, node: "n1",
			confirm: func(c *SchedulerCache, pod *v1.Pod, node string) error {
				if err := c.RemovePendingPod(pod); err != nil {
					return err
				}
				if idle, _ := nodeIdle(c, node); idle.MilliCPU != 9000 {
					return errors.New("the node looks free between RemovePendingPod and AddPod")
				}
				return c.AddPod(bound(pod, node))
			},
			wantIdle: map[string]int64{"n1": 9000, "n2": 10000},
		},
		{
			name: "on a different node", finish: true, node: "n2",
			confirm:  func(c *SchedulerCache, pod *v1.Pod, node string) error { return c.AddPod(bound(pod, node)) },
			wantIdle: map[string]int64{"n1": 10000, "n2": 9000},
		},
		{
			name: "on a node the cache does not know", finish: true, node: "elsewhere",
			confirm:  func(c *SchedulerCache, pod *v1.Pod, node string) error { return c.AddPod(bound(pod, node)) },
			wantIdle: map[string]int64{"n1": 10000, "n2": 10000},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, clk, pods := gangFixture(t, Options{})
			a := pods[0]
			mustNoErr(t, "AssumePod", c.AssumePod(a, "n1"))
			c.Queue().Done(dialects.Resolver().JobID(a))
			if tt.finish {
				mustNoErr(t, "FinishBinding", c.FinishBinding(a))
			}
			mustNoErr(t, "confirm", tt.confirm(c, a, tt.node))
			checkInvariants(t, c)
			task := taskOf(t, c, a)
			if task.Status != framework.TaskBound || task.NodeName != tt.node {
				t.Fatalf("task = %s on %q, want Bound on %q", task.Status, task.NodeName, tt.node)
			}
			for node, want := range tt.wantIdle {
				if got := idleCPU(t, c, node); got != want {
					t.Errorf("idle CPU of %s = %dm, want %dm", node, got, want)
				}
			}
			if ni, ok := c.NodeInfo(tt.node); !ok || len(ni.Pods) != 1 || ni.Requested.MilliCPU != 1000 {
				t.Errorf("node %s = %+v, want the pod counted once", tt.node, ni)
			}
			// The job stays queued for b, awaiting binding as after Done.
			if l := c.Queue().Lengths(); l.AwaitingBinding != 1 {
				t.Errorf("queue = %+v", l)
			}
			if err := c.FinishBinding(a); err != nil {
				t.Errorf("FinishBinding of a confirmed pod: %v", err)
			}
			if err := c.ForgetPod(a); !errors.Is(err, ErrWrongState) {
				t.Errorf("ForgetPod of a confirmed pod: got %v, want ErrWrongState", err)
			}
			// Nothing expires any more.
			clk.Step(time.Hour)
			c.cleanupAssumedPods()
			if task := taskOf(t, c, a); task.Status != framework.TaskBound {
				t.Errorf("after the TTL the task is %s", task.Status)
			}
			checkInvariants(t, c)
		})
	}
}

func TestForgetPod(t *testing.T) {
	c, _, pods := gangFixture(t, Options{})
	q := c.Queue()
	id := dialects.Resolver().JobID(pods[0])
	for _, p := range pods {
		mustNoErr(t, "AssumePod", c.AssumePod(p, "n1"))
	}
	q.Done(id)
	qj := &framework.QueuedJob{ID: id, Cycle: 1}
	if got := idleCPU(t, c, "n1"); got != 8000 {
		t.Fatalf("idle CPU = %dm, want 8000m", got)
	}

	// The bind of a fails: it is pending again, off the node.
	mustNoErr(t, "ForgetPod", c.ForgetPod(pods[0]))
	checkInvariants(t, c)
	if got := idleCPU(t, c, "n1"); got != 9000 {
		t.Errorf("idle CPU = %dm, want 9000m", got)
	}
	task := taskOf(t, c, pods[0])
	if task.Status != framework.TaskPending || task.NodeName != "" || task.PodObject() != pods[0] {
		t.Errorf("forgotten task = %+v, want pending with the informer's object", task)
	}
	if p, b := func() (int, int) { j, _ := c.Job(id); return countTasks(j) }(); p != 1 || b != 1 {
		t.Errorf("Count = %d, %d; want 1 pending, 1 assumed", p, b)
	}
	// The job waits for the scheduler to report the failed attempt, then
	// backs off and is retried with both pods.
	if l := q.Lengths(); l.AwaitingBinding != 1 {
		t.Fatalf("queue = %+v, want awaiting binding", l)
	}
	mustNoErr(t, "AddUnschedulable", q.AddUnschedulable(qj, schedulingqueue.Attempt{Reason: "binding failed", Err: errors.New("conflict")}))
	if l := q.Lengths(); l.Backoff != 1 {
		t.Fatalf("queue = %+v, want backoff", l)
	}

	errTests := []struct {
		pod  *v1.Pod
		want error
	}{
		{pods[0], ErrWrongState},                        // pending again
		{st.MakePod().Name("ghost").Obj(), ErrNotFound}, // unknown
		{nil, nil},
	}
	for _, tt := range errTests {
		err := c.ForgetPod(tt.pod)
		if err == nil || (tt.want != nil && !errors.Is(err, tt.want)) {
			t.Errorf("ForgetPod(%v): got %v, want %v", tt.pod, err, tt.want)
		}
	}
	if err := c.AssumePod(pods[0], "n2"); err != nil {
		t.Errorf("a forgotten pod cannot be assumed again: %v", err)
	}
	checkInvariants(t, c)
}

func TestFinishBindingErrors(t *testing.T) {
	c, _, pods := gangFixture(t, Options{})
	if err := c.FinishBinding(pods[0]); !errors.Is(err, ErrWrongState) {
		t.Errorf("FinishBinding of a pending pod: got %v, want ErrWrongState", err)
	}
	if err := c.FinishBinding(nil); err == nil {
		t.Error("FinishBinding(nil): no error")
	}
	if err := c.FinishBinding(st.MakePod().Name("ghost").Obj()); err != nil {
		t.Errorf("FinishBinding of a pod that is gone: %v", err)
	}
}

func TestAssumedPodExpires(t *testing.T) {
	tests := []struct {
		name string
		ttl  time.Duration
		// gone: the informer stopped reporting the pod pending before the
		// assumption expired.
		gone bool
	}{
		{name: "default TTL"},
		{name: "configured TTL", ttl: 5 * time.Second},
		{name: "pod no longer pending", gone: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, clk, pods := gangFixture(t, Options{AssumedPodTTL: tt.ttl})
			ttl := tt.ttl
			if ttl == 0 {
				ttl = DefaultAssumedPodTTL
			}
			a := pods[0]
			id := dialects.Resolver().JobID(a)
			mustNoErr(t, "AssumePod", c.AssumePod(a, "n1"))
			c.Queue().Done(id)
			// Before FinishBinding nothing expires, however long the bind.
			clk.Step(time.Hour)
			c.cleanupAssumedPods()
			if task := taskOf(t, c, a); task.Status != framework.TaskAssumed {
				t.Fatalf("expired before FinishBinding: %s", task.Status)
			}
			mustNoErr(t, "FinishBinding", c.FinishBinding(a))
			if tt.gone {
				mustNoErr(t, "RemovePendingPod", c.RemovePendingPod(a))
			}
			clk.Step(ttl - time.Nanosecond)
			c.cleanupAssumedPods()
			if task := taskOf(t, c, a); task.Status != framework.TaskAssumed {
				t.Fatalf("expired before the TTL: %s", task.Status)
			}
			if d := c.Dump(); d.Jobs[0].Tasks[0].Assumed == nil || !d.Jobs[0].Tasks[0].Assumed.Expires.Equal(clk.Now().Add(time.Nanosecond)) {
				t.Errorf("dump of the assumed task = %+v", d.Jobs[0].Tasks[0])
			}
			clk.Step(time.Nanosecond)
			c.cleanupAssumedPods()
			checkInvariants(t, c)
			if got := idleCPU(t, c, "n1"); got != 10000 {
				t.Errorf("idle CPU = %dm after expiry, want 10000m", got)
			}
			if got := metricstest.CounterValue(t, c.metrics.AssumedPodsExpired); got != 1 {
				t.Errorf("expired counter = %v, want 1", got)
			}
			j, _ := c.Job(id)
			if tt.gone {
				if _, ok := j.Tasks[a.UID]; ok {
					t.Errorf("a pod the informer no longer reports pending came back: %+v", j.Tasks[a.UID])
				}
				return
			}
			if task := j.Tasks[a.UID]; task.Status != framework.TaskPending {
				t.Fatalf("after expiry the task is %s, want pending", task.Status)
			}
			// The job is retried after backoff, with the reason.
			d := c.Queue().Dump()
			if len(d.Backoff) != 1 || !strings.Contains(d.Backoff[0].LastFailure, "not reported bound") {
				t.Fatalf("queue = %+v, want the job in backoff", d)
			}
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			go c.Queue().Run(ctx)
			waitFor(t, "the job to leave backoff", func() bool {
				clk.Step(schedulingqueue.DefaultInitialBackoff)
				return c.Queue().Lengths().Active == 1
			})
			qj := mustPop(t, c.Queue(), "default/g")
			if len(qj.Pods) != 2 {
				t.Errorf("retried job has pods %v", podNames(qj.Pods))
			}
		})
	}
}

// An assumption that expires while its job is elsewhere in the queue.
func TestAssumptionExpiredQueueStates(t *testing.T) {
	tests := []struct {
		name  string
		setup func(t *testing.T, q *schedulingqueue.SchedulingQueue, id framework.JobID, pods []*v1.Pod)
		check func(t *testing.T, q *schedulingqueue.SchedulingQueue, id framework.JobID)
	}{
		{
			name: "in flight again: retried when its cycle ends",
			setup: func(t *testing.T, q *schedulingqueue.SchedulingQueue, id framework.JobID, pods []*v1.Pod) {
				q.Done(id)
				// A relevant change of a pending pod retries the job.
				q.PodChanged(id, pods[1], true)
				mustPop(t, q, "default/g")
			},
			check: func(t *testing.T, q *schedulingqueue.SchedulingQueue, id framework.JobID) {
				q.Done(id)
				if l := q.Lengths(); l.Active != 1 {
					t.Errorf("after Done: %+v, want active", l)
				}
			},
		},
		{
			name: "unschedulable: requeued",
			setup: func(t *testing.T, q *schedulingqueue.SchedulingQueue, id framework.JobID, _ []*v1.Pod) {
				mustNoErr(t, "AddUnschedulable", q.AddUnschedulable(&framework.QueuedJob{ID: id, Cycle: 1}, schedulingqueue.Attempt{Reason: "no fit"}))
			},
			check: func(t *testing.T, q *schedulingqueue.SchedulingQueue, id framework.JobID) {
				if l := q.Lengths(); l.Unschedulable != 0 || l.Backoff+l.Active != 1 {
					t.Errorf("queue = %+v, want the job requeued", l)
				}
			},
		},
		{
			name: "in backoff: stays",
			setup: func(t *testing.T, q *schedulingqueue.SchedulingQueue, id framework.JobID, _ []*v1.Pod) {
				mustNoErr(t, "AddUnschedulable", q.AddUnschedulable(&framework.QueuedJob{ID: id, Cycle: 1}, schedulingqueue.Attempt{Err: errors.New("boom")}))
			},
			check: func(t *testing.T, q *schedulingqueue.SchedulingQueue, id framework.JobID) {
				if l := q.Lengths(); l.Backoff != 1 {
					t.Errorf("queue = %+v, want backoff", l)
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, clk, pods := gangFixture(t, Options{})
			id := dialects.Resolver().JobID(pods[0])
			mustNoErr(t, "AssumePod", c.AssumePod(pods[0], "n1"))
			mustNoErr(t, "FinishBinding", c.FinishBinding(pods[0]))
			tt.setup(t, c.Queue(), id, pods)
			clk.Step(DefaultAssumedPodTTL)
			c.cleanupAssumedPods()
			checkInvariants(t, c)
			if task := taskOf(t, c, pods[0]); task.Status != framework.TaskPending {
				t.Fatalf("task is %s, want pending", task.Status)
			}
			tt.check(t, c.Queue(), id)
		})
	}
}

// The informer reports an assumed pod gone while its bind is in flight.
func TestAssumedPodDeletedInFlight(t *testing.T) {
	tests := []struct {
		name string
		// del reports a deleted, as the informer and handler would.
		del func(t *testing.T, c *SchedulerCache, a *v1.Pod)
		// forget: the bind then fails and the scheduler forgets the pod.
		forget bool
	}{
		{
			name: "DeletePod",
			del: func(t *testing.T, c *SchedulerCache, a *v1.Pod) {
				freed, err := c.DeletePod(a)
				mustNoErr(t, "DeletePod", err)
				if !freed {
					t.Error("DeletePod of an assumed pod freed nothing")
				}
			},
		},
		{
			name: "RemovePendingPod, then DeletePod",
			del: func(t *testing.T, c *SchedulerCache, a *v1.Pod) {
				mustNoErr(t, "RemovePendingPod", c.RemovePendingPod(a))
				freed, err := c.DeletePod(a)
				mustNoErr(t, "DeletePod", err)
				if !freed {
					t.Error("DeletePod of an assumed pod freed nothing")
				}
			},
		},
		{
			name: "only RemovePendingPod, then the bind fails",
			del: func(t *testing.T, c *SchedulerCache, a *v1.Pod) {
				mustNoErr(t, "RemovePendingPod", c.RemovePendingPod(a))
			},
			forget: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, _, pods := gangFixture(t, Options{})
			a := pods[0]
			mustNoErr(t, "AssumePod", c.AssumePod(a, "n1"))
			c.Queue().Done(dialects.Resolver().JobID(a))
			tt.del(t, c, a)
			checkInvariants(t, c)
			if tt.forget {
				// Until then the room stays taken.
				if got := idleCPU(t, c, "n1"); got != 9000 {
					t.Errorf("idle CPU = %dm before the bind failed, want 9000m", got)
				}
				mustNoErr(t, "ForgetPod", c.ForgetPod(a))
				checkInvariants(t, c)
			}
			if got := idleCPU(t, c, "n1"); got != 10000 {
				t.Errorf("idle CPU = %dm, want 10000m", got)
			}
			j, _ := c.Job(dialects.Resolver().JobID(a))
			if _, ok := j.Tasks[a.UID]; ok || len(j.Tasks) != 1 {
				t.Errorf("job tasks = %v, want only b", j.Tasks)
			}
			if err := c.FinishBinding(a); err != nil {
				t.Errorf("FinishBinding of a deleted pod: %v", err)
			}
			if err := c.ForgetPod(a); !errors.Is(err, ErrNotFound) {
				t.Errorf("ForgetPod of a deleted pod: got %v, want ErrNotFound", err)
			}
		})
	}
	// Deleting a pending pod frees nothing.
	c, _, pods := gangFixture(t, Options{})
	freed, err := c.DeletePod(pods[0])
	mustNoErr(t, "DeletePod", err)
	if freed {
		t.Error("DeletePod of a pending pod freed resources")
	}
	if _, err := c.DeletePod(pods[0]); !errors.Is(err, ErrNotFound) {
		t.Errorf("second DeletePod: got %v, want ErrNotFound", err)
	}
	checkInvariants(t, c)
}

func TestUpdatePendingPodOfAssumedPod(t *testing.T) {
	c, _, pods := gangFixture(t, Options{})
	a := pods[0]
	id := dialects.Resolver().JobID(a)
	q := c.Queue()
	mustNoErr(t, "AssumePod", c.AssumePod(a, "n1"))
	q.Done(id)

	// A status update: the new object, still assumed, nothing moves.
	withStatus := a.DeepCopy()
	withStatus.ResourceVersion = "2"
	withStatus.Status.Message = "binding"
	mustNoErr(t, "UpdatePendingPod", c.UpdatePendingPod(a, withStatus))
	checkInvariants(t, c)
	task := taskOf(t, c, a)
	if task.Status != framework.TaskAssumed || task.NodeName != "n1" || task.PodObject().Status.Message != "binding" || task.PodObject().Spec.NodeName != "n1" {
		t.Errorf("task = %+v", task)
	}
	if l := q.Lengths(); l.AwaitingBinding != 1 {
		t.Errorf("queue = %+v, want awaiting binding", l)
	}
	if got := idleCPU(t, c, "n1"); got != 9000 {
		t.Errorf("idle CPU = %dm, want 9000m", got)
	}

	// A label change: the job is looked at again.
	labelled := withStatus.DeepCopy()
	labelled.Labels = map[string]string{"tier": "gold"}
	mustNoErr(t, "UpdatePendingPod", c.UpdatePendingPod(withStatus, labelled))
	if l := q.Lengths(); l.Active != 1 {
		t.Errorf("queue = %+v, want active", l)
	}

	// Leaving the gang: the pod stays assumed, in its new job.
	solo := labelled.DeepCopy()
	delete(solo.Annotations, framework.GroupNameAnnotation)
	mustNoErr(t, "UpdatePendingPod", c.UpdatePendingPod(labelled, solo))
	checkInvariants(t, c)
	if task := taskOf(t, c, solo); task.Status != framework.TaskAssumed || task.Job != dialects.Resolver().JobID(solo) {
		t.Errorf("task = %+v", task)
	}
	if j, _ := c.Job(id); len(j.Tasks) != 1 {
		t.Errorf("gang tasks = %v, want only b", j.Tasks)
	}

	// The informer had stopped reporting it pending, and reports it again.
	mustNoErr(t, "RemovePendingPod", c.RemovePendingPod(solo))
	checkInvariants(t, c)
	mustNoErr(t, "AddPendingPod", c.AddPendingPod(solo))
	checkInvariants(t, c)
	if task := taskOf(t, c, solo); task.Status != framework.TaskAssumed {
		t.Errorf("task = %s, want assumed", task.Status)
	}
	// It can be forgotten back to pending, since the informer has it.
	mustNoErr(t, "ForgetPod", c.ForgetPod(solo))
	checkInvariants(t, c)
	if task := taskOf(t, c, solo); task.Status != framework.TaskPending {
		t.Errorf("task = %s, want pending", task.Status)
	}
}

func TestAssumedPodOnRemovedNode(t *testing.T) {
	c, _, pods := gangFixture(t, Options{})
	mustNoErr(t, "AssumePod", c.AssumePod(pods[0], "n1"))
	mustNoErr(t, "RemoveNode", c.RemoveNode(bigNode("n1")))
	ni, ok := c.NodeInfo("n1")
	if !ok || !ni.Placeholder || len(ni.Pods) != 1 {
		t.Fatalf("n1 = %+v, want a placeholder holding the assumed pod", ni)
	}
	checkInvariants(t, c)
	mustNoErr(t, "ForgetPod", c.ForgetPod(pods[0]))
	if _, ok := c.NodeInfo("n1"); ok {
		t.Error("the empty placeholder was kept")
	}
	checkInvariants(t, c)
}

func TestDumpShowsAssumedPods(t *testing.T) {
	c, _, pods := gangFixture(t, Options{})
	mustNoErr(t, "AssumePod", c.AssumePod(pods[0], "n1"))
	mustNoErr(t, "AssumePod", c.AssumePod(pods[1], "n1"))
	mustNoErr(t, "FinishBinding", c.FinishBinding(pods[1]))
	mustNoErr(t, "RemovePendingPod", c.RemovePendingPod(pods[1]))
	d := c.Dump()
	if got := d.Nodes[0].AssumedPods; strings.Join(got, ",") != "default/a,default/b" {
		t.Errorf("assumed pods of n1 = %v", got)
	}
	tasks := d.Jobs[0].Tasks
	if tasks[0].Status != framework.TaskAssumed || tasks[0].Node != "n1" || tasks[0].Assumed == nil ||
		tasks[0].Assumed.BindingFinished || tasks[0].Assumed.Expires != nil || !tasks[0].Assumed.InformerPending {
		t.Errorf("task a = %+v %+v", tasks[0], tasks[0].Assumed)
	}
	if a := tasks[1].Assumed; a == nil || !a.BindingFinished || a.Expires == nil || a.InformerPending {
		t.Errorf("task b = %+v %+v", tasks[1], a)
	}
	body, err := json.Marshal(d)
	mustNoErr(t, "json.Marshal", err)
	for _, want := range []string{`"status":"Assumed"`, `"assumedPods":["default/a","default/b"]`, `"bindingFinished":true`, `"informerPending":true`} {
		if !strings.Contains(string(body), want) {
			t.Errorf("dump JSON lacks %s", want)
		}
	}
}

// Run expires assumed pods on its own, driven by Options.Clock.
func TestRunExpiresAssumedPods(t *testing.T) {
	c, clk, pods := gangFixture(t, Options{Client: fake.NewClientset()})
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	mustNoErr(t, "Run", c.Run(ctx, nopHandler{}))
	mustNoErr(t, "AssumePod", c.AssumePod(pods[0], "n1"))
	mustNoErr(t, "FinishBinding", c.FinishBinding(pods[0]))
	// The cleanup's ticker may not exist yet when the clock first moves;
	// keep moving it a second at a time, as a real clock would.
	waitFor(t, "the assumption to expire", func() bool {
		clk.Step(time.Second)
		c.mu.RLock()
		defer c.mu.RUnlock()
		return len(c.assumed) == 0
	})
	if elapsed := clk.Since(epoch); elapsed < DefaultAssumedPodTTL {
		t.Errorf("expired after %v, before the TTL", elapsed)
	}
	checkInvariants(t, c)
}

func TestNewRejectsNegativeAssumedPodTTL(t *testing.T) {
	if _, err := New(Options{AssumedPodTTL: -time.Second}); err == nil || !strings.Contains(err.Error(), "assumed pod TTL") {
		t.Errorf("New: got %v, want an error about the TTL", err)
	}
}

func TestTaskCounts(t *testing.T) {
	c, _, pods := gangFixture(t, Options{})
	mustNoErr(t, "AddPod", c.AddPod(st.MakePod().Name("running").Group("g").Node("n2").Phase(v1.PodRunning).Obj()))
	mustNoErr(t, "AddPod", c.AddPod(st.MakePod().Name("done").Group("g").Node("n2").Phase(v1.PodSucceeded).Obj()))
	mustNoErr(t, "AssumePod", c.AssumePod(pods[0], "n1"))
	j, _ := c.Job(dialects.Resolver().JobID(pods[0]))
	want := framework.TaskCounts{Pending: 1, Assumed: 1, Bound: 2, Finished: 1}
	if got := j.Counts(); got != want || got.Running() != 2 {
		t.Errorf("Counts = %+v (running %d), want %+v (running 2)", got, got.Running(), want)
	}
	if p, b := countTasks(j); p != 1 || b != 3 {
		t.Errorf("Count = %d, %d; want 1 pending, 3 on nodes", p, b)
	}
}

// checkQueueUsage recounts what each queue's jobs use and wait for, and
// the jobs' task counters, and compares them with what the cache keeps
// in step. The caller holds c.mu.
func checkQueueUsage(t *testing.T, c *SchedulerCache) {
	t.Helper()
	want := map[string]*tenancy.Usage{}
	for id, j := range c.jobs {
		q, _ := j.Queue()
		if j.QueueAccount != q {
			t.Errorf("job %s is accounted to queue %q, but its queue is %q", id, j.QueueAccount, q)
		}
		pending, running := 0, 0
		for _, task := range j.Tasks {
			if task.Status == framework.TaskPending {
				pending++
			}
			if task.UsesShare() {
				running++
			}
		}
		if pending != j.PendingTasks() || running != j.RunningShareTasks() {
			t.Errorf("job %s counts %d pending and %d running tasks, has %d and %d", id, j.PendingTasks(), j.RunningShareTasks(), pending, running)
		}
		u := want[q]
		if u == nil {
			u = &tenancy.Usage{}
			want[q] = u
		}
		for _, task := range j.Tasks {
			u.AddTask(task, 1)
		}
		u.AddJob(pending > 0, running > 0, 1)
	}
	same := func(a, b resources.Resource) bool {
		d := a.Clone()
		d.Sub(b)
		return d.IsZero()
	}
	for name, u := range c.tenants.Usage() {
		w := want[name]
		if w == nil {
			w = &tenancy.Usage{}
		}
		if !same(u.Allocated, w.Allocated) || !same(u.Pending, w.Pending) || !same(u.Releasing, w.Releasing) || u.PendingJobs != w.PendingJobs || u.RunningJobs != w.RunningJobs {
			t.Errorf("queue %q: the cache keeps allocated %v (releasing %v), pending %v, %d pending and %d running jobs; a recount gives %v (%v), %v, %d and %d",
				name, u.Allocated, u.Releasing, u.Pending, u.PendingJobs, u.RunningJobs, w.Allocated, w.Releasing, w.Pending, w.PendingJobs, w.RunningJobs)
		}
		delete(want, name)
	}
	for name, w := range want {
		if !w.Empty() {
			t.Errorf("queue %q: the cache keeps no usage; a recount gives allocated %v, pending %v", name, w.Allocated, w.Pending)
		}
	}
}
