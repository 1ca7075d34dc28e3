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
	"fmt"
	"sync"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
	"github.com/batch-scheduler/batch-scheduler/pkg/metrics/metricstest"
	st "github.com/batch-scheduler/batch-scheduler/pkg/testing"
)

// theirs returns another scheduler's pod named name (and so UID'd),
// requesting cpu.
func theirs(name, cpu string) *st.PodWrapper {
	return st.MakePod().Name(name).UID(name).Scheduler("default-scheduler").Req(res{v1.ResourceCPU: cpu})
}

// singleJob is the job of the pod name in the default namespace when it
// is no gang's.
func singleJob(name string) framework.JobID { return framework.JobID{Namespace: "default", Name: name} }

// Another scheduler's bound pod outside any gang gets no job record, but
// counts on its node like every bound pod, and Job builds its job as the
// record would have been (one bound task, the queue its pod names). Pods
// of ours, and others' pods in a gang, keep their records.
func TestForeignPodsKeepNoJobRecord(t *testing.T) {
	c, _ := newTestCache(t, Options{})
	mustNoErr(t, "AddOrUpdateNode", c.AddOrUpdateNode(bigNode("n1")))
	mustNoErr(t, "AddPod", c.AddPod(theirs("web", "2").Node("n1").Obj()))
	mustNoErr(t, "AddPod", c.AddPod(theirs("queued", "1").Node("n1").Label(framework.QueueLabel, "team-a").Obj()))
	mustNoErr(t, "AddPod", c.AddPod(theirs("g-0", "1").Node("n1").Group("g").MinAvailable("2").Obj()))
	mustNoErr(t, "AddPod", c.AddPod(st.MakePod().Name("ours").UID("ours").Node("n1").Req(res{v1.ResourceCPU: "3"}).Obj()))
	checkInvariants(t, c)

	for _, name := range []string{"web", "queued"} {
		if _, ok := c.jobs[singleJob(name)]; ok {
			t.Errorf("pod %s of another scheduler has a job record", name)
		}
	}
	gang := framework.JobID{Namespace: "default", Name: "g", Gang: true}
	for _, id := range []framework.JobID{singleJob("ours"), gang} {
		if _, ok := c.jobs[id]; !ok {
			t.Errorf("job %s has no record", id)
		}
	}
	if got := c.jobs[gang].Counts().Running(); got != 1 {
		t.Errorf("gang g counts %d running pods, want its pod of another scheduler", got)
	}
	info, _ := c.NodeInfo("n1")
	if got, want := info.Requested.MilliCPU, int64(2000+1000+1000+3000); got != want {
		t.Errorf("node n1 requested %dm cpu, want %dm: every bound pod counts", got, want)
	}
	if got := info.OwnRequested.MilliCPU; got != 3000 {
		t.Errorf("node n1: own requested %dm cpu, want 3000m", got)
	}
	if got := len(info.Pods); got != 4 {
		t.Errorf("node n1 holds %d pods, want 4", got)
	}
	if got := metricstest.GaugeValue(t, c.sizeGauges.jobs); got != 2 {
		t.Errorf("cache_size{type=jobs} = %v, want 2 records", got)
	}

	for _, tc := range []struct{ name, queue string }{{"web", framework.DefaultQueue}, {"queued", "team-a"}} {
		j, ok := c.Job(singleJob(tc.name))
		if !ok {
			t.Fatalf("Job(%s): not found", singleJob(tc.name))
		}
		if got := j.Counts(); got.Bound != 1 || len(j.Tasks) != 1 || j.MinAvailable() != 1 {
			t.Errorf("Job(%s) = %+v with %d tasks, quorum %d; want one bound task, quorum 1", j.ID, got, len(j.Tasks), j.MinAvailable())
		}
		if got := j.QueueName(); got != tc.queue {
			t.Errorf("Job(%s) is in queue %q, want %q", j.ID, got, tc.queue)
		}
		// The job is the caller's: changing it changes nothing in the cache.
		for uid := range j.Tasks {
			j.DeleteTask(uid)
		}
	}
	if j, ok := c.Job(singleJob("web")); !ok || len(j.Tasks) != 1 {
		t.Errorf("Job(web) after its copy was emptied: %v, %v", j, ok)
	}
	if _, ok := c.Job(singleJob("nobody")); ok {
		t.Errorf("Job of a pod the cache does not have was found")
	}
	if _, ok := c.Job(framework.JobID{Namespace: "default", Name: "web", Gang: true}); ok {
		t.Errorf("a gang named like a jobless pod was found")
	}
	// Only our own pod uses a share (framework.TaskInfo.UsesShare).
	if usage := c.Tenants().Usage(); len(usage) != 1 || usage[framework.DefaultQueue].Allocated.MilliCPU != 3000 || usage[framework.DefaultQueue].RunningJobs != 1 {
		t.Errorf("queue usage %v, want only the default queue's 3000m of one job", usage)
	}

	v := c.View()
	if _, ok := v.Jobs[singleJob("web")]; ok {
		t.Errorf("View has a job record for web")
	}
	if got := v.Jobless[singleJob("web")]; got == nil || got.GetName() != "web" {
		t.Errorf("View.Jobless[web] = %v, want its task", got)
	}
	if len(v.Jobless) != 2 || len(v.Jobs) != 2 || len(v.Tasks) != 4 {
		t.Errorf("View: %d jobless, %d jobs, %d tasks; want 2, 2, 4", len(v.Jobless), len(v.Jobs), len(v.Tasks))
	}
}

// A pod of another scheduler moves between a gang's record and none as
// its gang membership changes (annotations are mutable), or as the owner
// kind its gang was inferred from stops or starts being inferred; it
// stays on its node throughout.
func TestForeignPodMovesBetweenGangAndNoRecord(t *testing.T) {
	c, _ := newTestCache(t, Options{})
	mustNoErr(t, "AddOrUpdateNode", c.AddOrUpdateNode(bigNode("n1")))
	plain := theirs("p", "1").Node("n1").RV("1").Obj()
	inGang := theirs("p", "1").Node("n1").RV("2").Group("g").MinAvailable("1").Obj()
	gang := framework.JobID{Namespace: "default", Name: "g", Gang: true}
	check := func(step string, wantGang bool) {
		t.Helper()
		checkInvariants(t, c)
		_, recorded := c.jobs[gang]
		_, indexed := c.jobless.get("default", "p")
		if recorded != wantGang || indexed == wantGang {
			t.Errorf("%s: gang record %v, indexed without one %v; want the gang's record %v", step, recorded, indexed, wantGang)
		}
		if info, _ := c.NodeInfo("n1"); info.Requested.MilliCPU != 1000 {
			t.Errorf("%s: node n1 requested %dm cpu, want 1000m", step, info.Requested.MilliCPU)
		}
	}
	mustNoErr(t, "AddPod", c.AddPod(plain))
	check("added", false)
	mustNoErr(t, "UpdatePod", c.UpdatePod(plain, inGang))
	check("joined gang g", true)
	mustNoErr(t, "UpdatePod", c.UpdatePod(inGang, plain))
	check("left gang g", false)
	mustNoErr(t, "UpdatePod", c.UpdatePod(plain, plain))
	check("updated", false)
}

func TestForeignPodOwnerGangMoves(t *testing.T) {
	c := ownerCache(t)
	pod := gangPod("w").Scheduler("default-scheduler").Node("n1").ControlledBy("ray.io/v1", "RayCluster", "rc", "u1").Obj()
	mustNoErr(t, "AddPod", c.AddPod(pod))
	ray := framework.JobID{Namespace: "ns", Name: "rc", Gang: true, Owner: framework.GroupKindRayCluster}
	single := framework.JobID{Namespace: "ns", Name: "w"}
	check := func(step string, want framework.JobID, record bool) {
		t.Helper()
		checkInvariants(t, c)
		checkOwnerIndex(t, c)
		if got := c.tasks["w"].Job; got != want {
			t.Errorf("%s: pod w is in job %s, want %s", step, got, want)
		}
		if _, ok := c.jobs[want]; ok != record {
			t.Errorf("%s: job %s has a record: %v, want %v", step, want, ok, record)
		}
		if _, ok := c.Job(want); !ok {
			t.Errorf("%s: Job(%s) not found", step, want)
		}
	}
	check("inferred", ray, true)
	c.setOwnerKindUnavailable(framework.GroupKindRayCluster, true)
	check("owner kind not listable", single, false)
	c.setOwnerKindUnavailable(framework.GroupKindRayCluster, false)
	check("owner kind listable again", ray, true)
}

// A pending pod keeps its job record whoever's it is (a vendor's handler
// may track another scheduler's pending pods); once bound, a pod of
// another scheduler outside any gang loses it.
func TestForeignPendingPodLosesRecordWhenBound(t *testing.T) {
	c, _ := newTestCache(t, Options{})
	mustNoErr(t, "AddOrUpdateNode", c.AddOrUpdateNode(bigNode("n1")))
	pending := theirs("p", "1").Obj()
	mustNoErr(t, "AddPendingPod", c.AddPendingPod(pending))
	checkInvariants(t, c)
	if _, ok := c.jobs[singleJob("p")]; !ok {
		t.Fatalf("pending pod p has no job record")
	}
	mustNoErr(t, "AddPod", c.AddPod(theirs("p", "1").Node("n1").Obj()))
	checkInvariants(t, c)
	if _, ok := c.jobs[singleJob("p")]; ok {
		t.Errorf("bound pod p of another scheduler kept its job record")
	}
	if _, ok := c.queue.MembershipOf(singleJob("p")); ok {
		t.Errorf("bound pod p is still queued")
	}
}

// Deleting pods without job records leaves nothing behind, also when a
// pod was created again under the same name before the old one's delete
// arrived: the index keeps the newer pod until its own delete.
func TestForeignPodDeleteLeavesNothing(t *testing.T) {
	c, _ := newTestCache(t, Options{})
	mustNoErr(t, "AddOrUpdateNode", c.AddOrUpdateNode(bigNode("n1")))
	old := theirs("p", "1").UID("old").Node("n1").Obj()
	recreated := theirs("p", "2").UID("new").Node("n1").Obj()
	mustNoErr(t, "AddPod", c.AddPod(old))
	mustNoErr(t, "AddPod", c.AddPod(recreated))
	if freed, err := c.DeletePod(old); err != nil || !freed {
		t.Fatalf("DeletePod(old) = %v, %v; want freed", freed, err)
	}
	checkInvariants(t, c)
	if j, ok := c.Job(singleJob("p")); !ok || j.Tasks["new"] == nil {
		t.Errorf("Job(p) after the old pod's delete = %v, %v; want the new pod", j, ok)
	}
	if freed, err := c.DeletePod(recreated); err != nil || !freed {
		t.Fatalf("DeletePod(new) = %v, %v; want freed", freed, err)
	}
	// On a node that is not listed, the placeholder goes with the pod.
	mustNoErr(t, "AddPod", c.AddPod(theirs("q", "1").Node("gone").Obj()))
	if _, err := c.DeletePod(theirs("q", "1").Node("gone").Obj()); err != nil {
		t.Fatalf("DeletePod(q): %v", err)
	}
	checkInvariants(t, c)
	if len(c.tasks) != 0 || len(c.jobs) != 0 || c.jobless.len() != 0 || len(c.nodes) != 1 {
		t.Errorf("after every delete: %d tasks, %d jobs, %d jobless, %d nodes; want 0, 0, 0, 1",
			len(c.tasks), len(c.jobs), c.jobless.len(), len(c.nodes))
	}
	if info, _ := c.NodeInfo("n1"); info.Requested.MilliCPU != 0 || len(info.Pods) != 0 {
		t.Errorf("node n1 still has %dm cpu and %d pods", info.Requested.MilliCPU, len(info.Pods))
	}
}

// Informers, the scheduling loop and the tools use the cache at once:
// pods of other schedulers come, change gangs and go while Job and View
// read them. Run with -race.
func TestForeignPodsConcurrently(t *testing.T) {
	c, _ := newTestCache(t, Options{})
	mustNoErr(t, "AddOrUpdateNode", c.AddOrUpdateNode(bigNode("n1")))
	const writers, pods = 4, 50
	var wg sync.WaitGroup
	done := make(chan struct{})
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < pods; i++ {
				name := fmt.Sprintf("w%d-%d", w, i)
				p := theirs(name, "10m").Node("n1").RV("1").Obj()
				g := theirs(name, "10m").Node("n1").RV("2").Group(fmt.Sprintf("g%d", i%3)).MinAvailable("1").Obj()
				mustNoErr(t, "AddPod", c.AddPod(p))
				mustNoErr(t, "UpdatePod", c.UpdatePod(p, g))
				mustNoErr(t, "UpdatePod", c.UpdatePod(g, p))
				if i%2 == 0 {
					if _, err := c.DeletePod(p); err != nil {
						t.Errorf("DeletePod(%s): %v", name, err)
					}
				}
			}
		}()
	}
	var readers sync.WaitGroup
	readers.Add(1)
	go func() {
		defer readers.Done()
		for {
			select {
			case <-done:
				return
			default:
			}
			for w := 0; w < writers; w++ {
				if j, ok := c.Job(singleJob(fmt.Sprintf("w%d-1", w))); ok && len(j.Tasks) != 1 {
					t.Errorf("Job(%s) has %d tasks", j.ID, len(j.Tasks))
				}
			}
			_ = c.View()
		}
	}()
	wg.Wait()
	close(done)
	readers.Wait()
	checkInvariants(t, c)
	if got, want := c.jobless.len(), writers*pods/2; got != want || len(c.jobs) != 0 {
		t.Errorf("%d jobless tasks and %d job records, want %d and 0", got, len(c.jobs), want)
	}
}
