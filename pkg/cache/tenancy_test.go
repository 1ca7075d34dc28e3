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
	"errors"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
	"github.com/batch-scheduler/batch-scheduler/pkg/resources"
	"github.com/batch-scheduler/batch-scheduler/pkg/schedulingqueue"
	"github.com/batch-scheduler/batch-scheduler/pkg/tenancy"
	st "github.com/batch-scheduler/batch-scheduler/pkg/testing"
)

func cpuNode(name, cpu string) *v1.Node {
	return st.MakeNode().Name(name).Allocatable(map[v1.ResourceName]string{"cpu": cpu, "memory": "64Gi", "pods": "110"}).Obj()
}

func queueSpec(name, parent string, weight int64) *framework.QueueSpec {
	return &framework.QueueSpec{Name: name, Parent: parent, Weight: weight, Borrow: true, Lend: true, Reclaimable: true, Source: "Queue " + name}
}

func queuedPod(name, queue, cpu string) *v1.Pod {
	return st.MakePod().Name(name).UID(name).Label(framework.QueueLabel, queue).Req(res{v1.ResourceCPU: cpu}).Obj()
}

func milliCPU(a framework.ResourceAmounts) int64 { return a[v1.ResourceCPU] }

// Without any Queue, cycles see no queues (nothing is limited), but a job
// that names a queue sees them, so that it waits for its queue, once the
// queues are watched; before (queues disabled), the name is ignored.
func TestQueueSnapshotOnlyWithQueues(t *testing.T) {
	c, _ := newTestCache(t, Options{})
	mustNoErr(t, "AddOrUpdateNode", c.AddOrUpdateNode(cpuNode("n1", "4")))
	mustNoErr(t, "AddPendingPod", c.AddPendingPod(st.MakePod().Name("plain").UID("plain").Req(res{v1.ResourceCPU: "1"}).Obj()))
	mustNoErr(t, "AddPendingPod", c.AddPendingPod(queuedPod("named", "research", "1")))
	if s := c.TenantQueueSnapshot(); s != nil {
		t.Fatalf("QueueSnapshot without queues = %+v, want nil", s)
	}
	if named, _ := c.CycleJob(framework.JobID{Namespace: "default", Name: "named"}); named.Queues != nil {
		t.Fatalf("a job naming a queue sees queues %v while queues are not watched; want none", named.Queues)
	}
	c.WatchTenantQueues()
	plain, _ := c.CycleJob(framework.JobID{Namespace: "default", Name: "plain"})
	if plain.Queues != nil || plain.Queue != framework.DefaultQueue {
		t.Errorf("a job naming no queue: Queue %q, Queues %v; want the default queue and no queues", plain.Queue, plain.Queues)
	}
	named, _ := c.CycleJob(framework.JobID{Namespace: "default", Name: "named"})
	if named.Queue != "research" || named.QueueVia != "label "+framework.QueueLabel || named.Queues == nil {
		t.Fatalf("a job naming a queue: Queue %q via %q, Queues %v", named.Queue, named.QueueVia, named.Queues)
	}
	if _, ok := named.Queues.Queues["research"]; ok {
		t.Errorf("queue research is in the snapshot, but no Queue defines it")
	}
	if _, ok := named.Queues.Queues[framework.DefaultQueue]; !ok {
		t.Errorf("the implicit default queue is missing from %v", named.Queues.Queues)
	}
}

// What a queue's jobs use and wait for follows every change of their
// pods: pending, assumed, bound, finished, deleted.
func TestQueueUsageFollowsPods(t *testing.T) {
	c, _ := newTestCache(t, Options{})
	mustNoErr(t, "AddOrUpdateNode", c.AddOrUpdateNode(cpuNode("n1", "8")))
	c.SetTenantQueue(tenancy.SourceOwn, "a", queueSpec("a", "", 1))
	p := queuedPod("p", "a", "2")
	mustNoErr(t, "AddPendingPod", c.AddPendingPod(p))
	releasing := int64(0)
	check := func(step string, alloc, pend int64, pendingJobs, runningJobs int) {
		t.Helper()
		checkInvariants(t, c)
		q := c.TenantQueueSnapshot().Queues["a"]
		if milliCPU(q.Allocated) != alloc || milliCPU(q.Pending) != pend || q.PendingJobs != pendingJobs || q.RunningJobs != runningJobs {
			t.Errorf("%s: allocated %dm, pending %dm, %d pending and %d running jobs; want %dm, %dm, %d, %d", step,
				milliCPU(q.Allocated), milliCPU(q.Pending), q.PendingJobs, q.RunningJobs, alloc, pend, pendingJobs, runningJobs)
		}
		if milliCPU(q.Releasing) != releasing {
			t.Errorf("%s: releasing %dm, want %dm", step, milliCPU(q.Releasing), releasing)
		}
	}
	check("pending", 0, 2000, 1, 0)
	mustNoErr(t, "AssumePod", c.AssumePod(p, "n1"))
	check("assumed", 2000, 0, 0, 1)
	b := bound(p, "n1")
	mustNoErr(t, "AddPod", c.AddPod(b))
	check("bound", 2000, 0, 0, 1)
	// Evicted: still on its node, about to give its share back.
	going := b.DeepCopy()
	now := metav1.Now()
	going.DeletionTimestamp = &now
	going.ResourceVersion = "3"
	mustNoErr(t, "UpdatePod", c.UpdatePod(b, going))
	releasing = 2000
	check("terminating", 2000, 0, 0, 1)
	done := going.DeepCopy()
	done.Status.Phase = v1.PodSucceeded
	done.ResourceVersion = "4"
	mustNoErr(t, "UpdatePod", c.UpdatePod(going, done))
	releasing = 0
	check("finished", 0, 0, 0, 0)
	deletePod(c, done)
	check("deleted", 0, 0, 0, 0)
	n := len(c.Tenants().Usage())
	if n != 0 {
		t.Errorf("%d queues keep usage after every pod left", n)
	}
}

// A Volcano PodGroup's spec.queue puts its gang in that queue whatever the
// pods name, and moving the gang moves all it uses.
func TestGroupPolicyQueueMovesTheGang(t *testing.T) {
	c, _ := newTestCache(t, Options{})
	mustNoErr(t, "AddOrUpdateNode", c.AddOrUpdateNode(cpuNode("n1", "8")))
	c.SetTenantQueue(tenancy.SourceOwn, "a", queueSpec("a", "", 1))
	c.SetTenantQueue(tenancy.SourceVolcano, "b", queueSpec("b", "", 1))
	pods := []*v1.Pod{
		st.MakePod().Name("g-0").UID("g-0").Group("g").MinAvailable("2").Label(framework.QueueLabel, "a").Req(res{v1.ResourceCPU: "1"}).Obj(),
		st.MakePod().Name("g-1").UID("g-1").Group("g").MinAvailable("2").Label(framework.QueueLabel, "a").Req(res{v1.ResourceCPU: "1"}).Obj(),
	}
	for _, p := range pods {
		mustNoErr(t, "AddPendingPod", c.AddPendingPod(p))
	}
	mustNoErr(t, "AssumePod", c.AssumePod(pods[0], "n1"))
	checkInvariants(t, c)
	s := c.TenantQueueSnapshot()
	if got := milliCPU(s.Queues["a"].Allocated) + milliCPU(s.Queues["a"].Pending); got != 2000 {
		t.Fatalf("queue a: allocated plus pending %dm, want 2000m", got)
	}
	c.SetGroupPolicy(framework.GroupKindVolcano, "default", "g", &framework.GroupPolicy{MinMember: 2, Source: "PodGroup.scheduling.volcano.sh default/g", Queue: "b"})
	checkInvariants(t, c)
	s = c.TenantQueueSnapshot()
	if a, b := s.Queues["a"], s.Queues["b"]; milliCPU(a.Allocated)+milliCPU(a.Pending) != 0 || milliCPU(b.Allocated) != 1000 || milliCPU(b.Pending) != 1000 {
		t.Errorf("after the PodGroup named queue b: a %v/%v, b %v/%v; want a empty, b 1 cpu allocated and 1 pending",
			a.Allocated, a.Pending, b.Allocated, b.Pending)
	}
	job, _ := c.CycleJob(framework.JobID{Namespace: "default", Name: "g", Gang: true})
	if job.Queue != "b" || !strings.Contains(job.QueueVia, "PodGroup.scheduling.volcano.sh default/g") {
		t.Errorf("CycleJob: queue %q via %q, want b via the PodGroup", job.Queue, job.QueueVia)
	}
}

// The shares follow what the queues ask for at once, with no wait for the
// refresh period: a queue whose first job just arrived has its share in
// that job's cycle.
func TestSharesFollowDemandAtOnce(t *testing.T) {
	c, _ := newTestCache(t, Options{Tenancy: tenancy.Options{Refresh: time.Hour}})
	mustNoErr(t, "AddOrUpdateNode", c.AddOrUpdateNode(cpuNode("n1", "4")))
	c.SetTenantQueue(tenancy.SourceOwn, "a", queueSpec("a", "", 1))
	c.SetTenantQueue(tenancy.SourceOwn, "b", queueSpec("b", "", 1))
	for _, name := range []string{"a1", "a2", "a3", "a4"} {
		mustNoErr(t, "AddPendingPod", c.AddPendingPod(queuedPod(name, "a", "1")))
	}
	s := c.TenantQueueSnapshot()
	if got := milliCPU(s.Queues["a"].FairShare); got != 4000 {
		t.Fatalf("queue a alone asks for 4 cpus: fair share %dm, want 4000m", got)
	}
	mustNoErr(t, "AddPendingPod", c.AddPendingPod(queuedPod("b1", "b", "2")))
	job, _ := c.CycleJob(framework.JobID{Namespace: "default", Name: "b1"})
	if a, b := milliCPU(job.Queues.Queues["a"].FairShare), milliCPU(job.Queues.Queues["b"].FairShare); a != 2000 || b != 2000 {
		t.Errorf("with b asking for 2 cpus: fair shares a %dm, b %dm; want 2000m each", a, b)
	}
	if got := milliCPU(job.Queues.Capacity); got != 4000 {
		t.Errorf("capacity %dm, want 4000m", got)
	}
}

// The capacity the queues share is what the nodes leave for this
// scheduler: allocatable less others' pods and external usage, within
// the caps where there are some.
func TestQueueCapacity(t *testing.T) {
	c, clk := newTestCache(t, Options{})
	mustNoErr(t, "AddOrUpdateNode", c.AddOrUpdateNode(cpuNode("n1", "4")))
	mustNoErr(t, "AddOrUpdateNode", c.AddOrUpdateNode(cpuNode("n2", "4")))
	mustNoErr(t, "AddOrUpdateNode", c.AddOrUpdateNode(cpuNode("n3", "4")))
	foreign := st.MakePod().Name("other").UID("other").Scheduler("default-scheduler").Node("n1").Req(res{v1.ResourceCPU: "1"}).Obj()
	mustNoErr(t, "AddPod", c.AddPod(foreign))
	mustNoErr(t, "SetExternalUsage", c.SetExternalUsage("vm", "n2", resourcesOf(t, "cpu", "3")))
	mustNoErr(t, "SetNodeCap", c.SetNodeCap("n3", resourcesOf(t, "cpu", "2")))
	c.SetTenantQueue(tenancy.SourceOwn, "a", queueSpec("a", "", 1))
	clk.Step(time.Minute)
	if got := milliCPU(c.TenantQueueSnapshot().Capacity); got != 3000+1000+2000 {
		t.Errorf("capacity %dm, want 6000m (n1 4-1, n2 4-3, n3 capped at 2)", got)
	}
}

// Specs of this project's own Queues win over Volcano's of the same name;
// a queue whose parent does not exist, and its jobs, are left out with the
// reason; deleting the last queue turns queues off.
func TestQueueSpecsPrecedenceAndInvalid(t *testing.T) {
	c, _ := newTestCache(t, Options{})
	mustNoErr(t, "AddOrUpdateNode", c.AddOrUpdateNode(cpuNode("n1", "4")))
	own := queueSpec("a", "", 3)
	volcano := queueSpec("a", "", 7)
	volcano.Source = "Queue.scheduling.volcano.sh a"
	c.SetTenantQueue(tenancy.SourceVolcano, "a", volcano)
	c.SetTenantQueue(tenancy.SourceOwn, "a", own)
	c.SetTenantQueue(tenancy.SourceOwn, "orphan", queueSpec("orphan", "nowhere", 1))
	bad := queueSpec("broken", "", 1)
	bad.Err = errors.New("spec.weight: must be between 1 and 1000000")
	c.SetTenantQueue(tenancy.SourceOwn, "broken", bad)
	s := c.TenantQueueSnapshot()
	if q := s.Queues["a"]; q == nil || q.Weight != 3 || q.API != tenancy.SourceOwn {
		t.Errorf("queue a = %+v, want the project's own (weight 3)", q)
	}
	if err := s.Invalid["orphan"]; err == nil || !strings.Contains(err.Error(), "nowhere") {
		t.Errorf("queue orphan: %v, want an error naming its missing parent", err)
	}
	if err := s.Invalid["broken"]; err == nil || !strings.Contains(err.Error(), "spec.weight") || !strings.Contains(err.Error(), "Queue broken") {
		t.Errorf("queue broken: %v, want its own error with its source", err)
	}
	statuses := c.TenantQueueStatuses()
	names := []string{}
	for _, st := range statuses {
		names = append(names, st.Name)
	}
	if strings.Join(names, ",") != "a,broken,default,orphan" {
		t.Errorf("TenantQueueStatuses names %v, want a, broken, default, orphan", names)
	}
	for _, name := range []string{"a", "orphan", "broken"} {
		c.SetTenantQueue(tenancy.SourceOwn, name, nil)
	}
	c.SetTenantQueue(tenancy.SourceVolcano, "a", nil)
	if s := c.TenantQueueSnapshot(); s != nil {
		t.Errorf("after every queue was deleted: %+v, want nil", s)
	}
}

// The job of the queue furthest below its fair share is popped first,
// whatever the priority and age of the others'; without queues, priority
// and age alone order jobs.
func TestQueueFurthestBelowShareGoesFirst(t *testing.T) {
	for _, withQueues := range []bool{false, true} {
		c, _ := newTestCache(t, Options{})
		mustNoErr(t, "AddOrUpdateNode", c.AddOrUpdateNode(cpuNode("n1", "4")))
		if withQueues {
			c.SetTenantQueue(tenancy.SourceOwn, "a", queueSpec("a", "", 1))
			c.SetTenantQueue(tenancy.SourceOwn, "b", queueSpec("b", "", 1))
		}
		// Queue a runs 3 of 4 cpus and has an old, high-priority job
		// waiting; queue b runs nothing and has a young, low-priority one.
		running := queuedPod("a-running", "a", "3")
		mustNoErr(t, "AddPendingPod", c.AddPendingPod(running))
		mustNoErr(t, "AssumePod", c.AssumePod(running, "n1"))
		mustNoErr(t, "AddPod", c.AddPod(bound(running, "n1")))
		old := metav1.NewTime(epoch.Add(-time.Hour))
		aWaits := st.MakePod().Name("a-waits").UID("a-waits").Label(framework.QueueLabel, "a").Priority(100).Created(old).Req(res{v1.ResourceCPU: "1"}).Obj()
		bWaits := st.MakePod().Name("b-waits").UID("b-waits").Label(framework.QueueLabel, "b").Priority(1).Req(res{v1.ResourceCPU: "1"}).Obj()
		mustNoErr(t, "AddPendingPod", c.AddPendingPod(aWaits))
		mustNoErr(t, "AddPendingPod", c.AddPendingPod(bWaits))
		// A cycle's snapshot computes the shares and hands the queues'
		// order to the scheduling queue.
		c.TenantQueueSnapshot()
		want := "default/pod:a-waits"
		if withQueues {
			want = "default/pod:b-waits"
		}
		if got := mustPopJob(t, c.Queue()).ID.String(); got != want {
			t.Errorf("with queues %v: popped %s first, want %s", withQueues, got, want)
		}
	}
}

func mustPopJob(t *testing.T, q *schedulingqueue.SchedulingQueue) *framework.QueuedJob {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	qj, err := q.Pop(ctx)
	if err != nil {
		t.Fatalf("Pop: %v", err)
	}
	return qj
}

func resourcesOf(t *testing.T, name, quantity string) resources.Resource {
	t.Helper()
	q, err := resource.ParseQuantity(quantity)
	if err != nil {
		t.Fatal(err)
	}
	return resources.FromList(v1.ResourceList{v1.ResourceName(name): q})
}

// A cycle sees the ceiling (what this scheduler could use with every
// other pod gone: pods of other schedulers do not lower it), counted once
// per Tenancy.Refresh and again at once after an event by which it may grow
// (the job that event wakes must not be judged by the count before).
func TestCycleJobCeiling(t *testing.T) {
	c, _ := newTestCache(t, Options{Tenancy: tenancy.Options{Refresh: time.Hour}})
	mustNoErr(t, "AddOrUpdateNode", c.AddOrUpdateNode(cpuNode("n1", "4")))
	mustNoErr(t, "AddPod", c.AddPod(st.MakePod().Name("theirs").UID("theirs").Scheduler("other").Node("n1").Req(res{v1.ResourceCPU: "3"}).Obj()))
	for _, name := range []string{"g-0", "g-1"} {
		mustNoErr(t, "AddPendingPod", c.AddPendingPod(st.MakePod().Name(name).UID(name).Group("g").MinAvailable("2").Req(res{v1.ResourceCPU: "3"}).Obj()))
	}
	id := framework.JobID{Namespace: "default", Name: "g", Gang: true}
	ceiling := func() int64 {
		t.Helper()
		j, ok := c.CycleJob(id)
		if !ok {
			t.Fatal("CycleJob found no job")
		}
		return milliCPU(j.Ceiling)
	}
	if got := ceiling(); got != 4000 {
		t.Fatalf("ceiling %dm, want 4000m (another scheduler's pod does not lower it)", got)
	}
	mustNoErr(t, "AddOrUpdateNode", c.AddOrUpdateNode(cpuNode("n2", "4")))
	if got := ceiling(); got != 4000 {
		t.Errorf("ceiling %dm before any event and within Tenancy.Refresh, want the count before, 4000m", got)
	}
	c.MoveAllToActiveOrBackoffQueue(framework.EventNodeAdd, nil, nil)
	if got := ceiling(); got != 8000 {
		t.Errorf("ceiling %dm after NodeAdd, want 8000m", got)
	}
}
