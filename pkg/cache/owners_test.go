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
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/batch-scheduler/batch-scheduler/pkg/dialects"
	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
	st "github.com/batch-scheduler/batch-scheduler/pkg/testing"
)

func ownerCache(t *testing.T) *SchedulerCache {
	t.Helper()
	c, _ := newTestCache(t, Options{})
	mustNoErr(t, "SetOwnerGangs", c.SetOwnerGangs(framework.AllOwnerKinds()))
	mustNoErr(t, "AddOrUpdateNode", c.AddOrUpdateNode(st.MakeNode().Name("n1").Capacity(map[v1.ResourceName]string{"cpu": "8", "pods": "10"}).Obj()))
	return c
}

// checkJob fails unless the cache's job id has the given tasks (by pod
// name), quorum and problem (a substring; "" none), and every task's job
// is the one the consistency checker computes for its pod.
func checkJob(t *testing.T, c *SchedulerCache, id framework.JobID, pods []string, min int32, problem string) {
	t.Helper()
	checkInvariants(t, c)
	checkOwnerIndex(t, c)
	j, ok := c.Job(id)
	if !ok {
		t.Fatalf("no job %s", id)
	}
	var names []string
	for _, task := range j.Tasks {
		names = append(names, task.GetName())
		if got := c.JobIDForPod(task.PodObject()); got != id {
			t.Errorf("the checker puts pod %s in job %s, the cache in %s", task.GetName(), got, id)
		}
	}
	if len(names) != len(pods) {
		t.Errorf("job %s has pods %v, want %v", id, names, pods)
	}
	if j.MinAvailable() != min {
		t.Errorf("job %s min-available %d, want %d", id, j.MinAvailable(), min)
	}
	err := j.ValidationError()
	if (problem == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), problem)) {
		t.Errorf("job %s validation error %v, want one containing %q", id, err, problem)
	}
}

func gangPod(name string) *st.PodWrapper {
	return st.MakePod().Namespace("ns").Name(name).UID(name).Req(map[v1.ResourceName]string{"cpu": "1"})
}

// A RayCluster's pods are one gang keyed apart from an explicit gang of
// the same name; its quorum comes from the RayCluster whether the policy
// comes before or after the pods.
func TestOwnerGangsInTheCache(t *testing.T) {
	c := ownerCache(t)
	ray := framework.JobID{Namespace: "ns", Name: "rc", Gang: true, Owner: framework.GroupKindRayCluster}
	explicit := framework.JobID{Namespace: "ns", Name: "rc", Gang: true}
	for _, n := range []string{"head", "w1"} {
		mustNoErr(t, "AddPendingPod", c.AddPendingPod(gangPod(n).ControlledBy("ray.io/v1", "RayCluster", "rc", "u1").Obj()))
	}
	// KubeRay's Volcano integration names its PodGroup; here the same
	// name, on another pod: not a conflict, another job.
	mustNoErr(t, "AddPendingPod", c.AddPendingPod(gangPod("v").Group("rc").MinAvailable("1").Obj()))
	checkJob(t, c, ray, []string{"head", "w1"}, 0, "waiting for RayCluster.ray.io ns/rc to exist")
	checkJob(t, c, explicit, []string{"v"}, 1, "")
	c.SetGroupPolicy(framework.GroupKindRayCluster, "ns", "rc", &framework.GroupPolicy{MinMember: 3, Source: "RayCluster.ray.io ns/rc"})
	checkJob(t, c, ray, []string{"head", "w1"}, 3, "")
	checkJob(t, c, explicit, []string{"v"}, 1, "")
	if _, ok := c.queue.MembershipOf(ray); !ok {
		t.Errorf("the inferred gang is not queued")
	}

	// A LeaderWorkerSet is one gang, whatever the group of its pods; its
	// groups are sub-gangs, by the rule of its policy.
	lws := func(name, group string) *v1.Pod {
		return gangPod(name).Label(framework.LeaderWorkerSetNameLabel, "serve").Label(framework.LeaderWorkerSetGroupIndexLabel, group).Obj()
	}
	for _, p := range []*v1.Pod{lws("s0a", "0"), lws("s0b", "0"), lws("s1a", "1")} {
		mustNoErr(t, "AddPendingPod", c.AddPendingPod(p))
	}
	serve := framework.JobID{Namespace: "ns", Name: "serve", Gang: true, Owner: framework.GroupKindLeaderWorkerSet}
	checkJob(t, c, serve, []string{"s0a", "s0b", "s1a"}, 0, "waiting for LeaderWorkerSet.leaderworkerset.x-k8s.io ns/serve to exist")
	groups := []framework.SubGroupRule{{KeyLabels: []string{framework.LeaderWorkerSetGroupIndexLabel}, MinMember: 2, Source: "x"}}
	c.SetGroupPolicy(framework.GroupKindLeaderWorkerSet, "ns", "serve", &framework.GroupPolicy{MinMember: 2, Source: "x", SubGroups: groups})
	checkJob(t, c, serve, []string{"s0a", "s0b", "s1a"}, 2, "")
	// A group created after the policy joins the gang.
	mustNoErr(t, "AddPendingPod", c.AddPendingPod(lws("s2a", "2")))
	checkJob(t, c, serve, []string{"s0a", "s0b", "s1a", "s2a"}, 2, "")
	if job, ok := c.CycleJob(serve); !ok {
		t.Errorf("no cycle job %s", serve)
	} else if len(job.SubGroups) != 3 {
		t.Errorf("the LeaderWorkerSet's cycle job has sub-groups %+v, want one per group (3)", job.SubGroups)
	}
	c.SetGroupPolicy(framework.GroupKindLeaderWorkerSet, "ns", "serve", nil)
	checkJob(t, c, serve, []string{"s0a", "s0b", "s1a", "s2a"}, 0, "waiting for LeaderWorkerSet")

	// Deleting the pods empties the index.
	for _, n := range []string{"head", "w1", "s0a", "s0b", "s1a", "s2a"} {
		if _, err := c.DeletePod(gangPod(n).Obj()); err != nil {
			t.Fatal(err)
		}
	}
	if len(c.ownerTasks) != 0 || len(c.ownerJobs) != 0 {
		t.Errorf("owner index left: %v %v", c.ownerTasks, c.ownerJobs)
	}
}

// A Job whose pods run one at a time is not a gang: its pods move to jobs
// of their own when its policy says so, pending, assumed and bound alike,
// and back into the gang when its parallelism grows.
func TestIndependentJobPodsMove(t *testing.T) {
	c := ownerCache(t)
	gang := framework.JobID{Namespace: "ns", Name: "train", Gang: true, Owner: framework.GroupKindJob}
	single := func(pod string) framework.JobID { return framework.JobID{Namespace: "ns", Name: pod} }
	owned := func(name string) *st.PodWrapper { return gangPod(name).ControlledBy("batch/v1", "Job", "train", "j1") }
	bound := owned("bound").Node("n1").Phase(v1.PodRunning).Obj()
	mustNoErr(t, "AddPod", c.AddPod(bound))
	mustNoErr(t, "AddPendingPod", c.AddPendingPod(owned("pending").Obj()))
	mustNoErr(t, "AddPendingPod", c.AddPendingPod(owned("assumed").Obj()))
	mustNoErr(t, "AssumePod", c.AssumePod(owned("assumed").Obj(), "n1"))
	// Before the Job is known, its pods wait in its gang.
	checkJob(t, c, gang, []string{"bound", "pending", "assumed"}, 0, "waiting for Job.batch ns/train to exist")

	c.SetGroupPolicy(framework.GroupKindJob, "ns", "train", &framework.GroupPolicy{MinMember: 1, Independent: true, Source: "Job.batch ns/train"})
	if _, ok := c.Job(gang); ok {
		t.Fatal("the gang of an independent Job still exists")
	}
	for _, n := range []string{"bound", "pending", "assumed"} {
		checkJob(t, c, single(n), []string{n}, 1, "")
	}
	if _, ok := c.queue.MembershipOf(single("pending")); !ok {
		t.Error("the pending pod's own job is not queued")
	}
	if _, ok := c.queue.MembershipOf(gang); ok {
		t.Error("the gang is still queued")
	}
	ni, _ := c.NodeInfo("n1")
	if len(ni.Pods) != 2 {
		t.Errorf("node n1 has %d pods, want the bound and the assumed one", len(ni.Pods))
	}
	// A bind that fails makes the assumed pod pending again, in its own
	// job.
	mustNoErr(t, "ForgetPod", c.ForgetPod(owned("assumed").Obj()))
	checkJob(t, c, single("assumed"), []string{"assumed"}, 1, "")
	mustNoErr(t, "AssumePod", c.AssumePod(owned("assumed").Obj(), "n1"))

	// Parallelism raised: back into one gang, the bound pod counting
	// towards its quorum.
	c.SetGroupPolicy(framework.GroupKindJob, "ns", "train", &framework.GroupPolicy{MinMember: 3, Source: "Job.batch ns/train"})
	checkJob(t, c, gang, []string{"bound", "pending", "assumed"}, 3, "")
	j, _ := c.Job(gang)
	if r := j.Counts().Running(); r != 2 {
		t.Errorf("the gang has %d tasks on nodes, want 2 (bound and assumed)", r)
	}
	for _, n := range []string{"bound", "pending", "assumed"} {
		if _, ok := c.Job(single(n)); ok {
			t.Errorf("pod %s's own job is left", n)
		}
	}
	ni, _ = c.NodeInfo("n1")
	if len(ni.Pods) != 2 {
		t.Errorf("node n1 has %d pods after the move back, want 2", len(ni.Pods))
	}
	// The informer reports the assumed pod bound: it joins the gang as
	// bound.
	mustNoErr(t, "AddPod", c.AddPod(owned("assumed").Node("n1").Obj()))
	checkJob(t, c, gang, []string{"bound", "pending", "assumed"}, 3, "")
	if m, ok := c.queue.MembershipOf(gang); !ok || m.Problem != "" {
		t.Errorf("the gang's queue membership %+v %v", m, ok)
	}
	// The pod lent to the matcher with a bound task's metadata keeps
	// none of it.
	if c.metaPod.Name != "" || c.metaPod.Labels != nil || c.metaPod.OwnerReferences != nil {
		t.Errorf("the cache's lent pod still holds %s's metadata", c.metaPod.Name)
	}
}

func TestSetOwnerGangsAfterRunFails(t *testing.T) {
	c, _ := newTestCache(t, Options{Client: fake.NewClientset()})
	mustNoErr(t, "Run", c.Run(t.Context(), nopHandler{}))
	if err := c.SetOwnerGangs(framework.AllOwnerKinds()); err == nil || !strings.Contains(err.Error(), "already running") {
		t.Errorf("SetOwnerGangs after Run: %v", err)
	}
	c2, _ := newTestCache(t, Options{})
	mustNoErr(t, "AddPendingPod", c2.AddPendingPod(gangPod("p").Obj()))
	if err := c2.SetOwnerGangs(framework.AllOwnerKinds()); err == nil || !strings.Contains(err.Error(), "already holds pods") {
		t.Errorf("SetOwnerGangs with pods: %v", err)
	}
}

// checkOwnerIndex verifies that ownerTasks indexes exactly the tasks whose
// pods have an owner a gang would be inferred from.
func checkOwnerIndex(t *testing.T, c *SchedulerCache) {
	t.Helper()
	c.mu.RLock()
	defer c.mu.RUnlock()
	n := 0
	for uid, task := range c.tasks {
		// The owner, from the pod alone.
		var key groupKey
		if len(dialects.Builtin().Explicit(task.PodObject())) > 0 {
			continue
		}
		ref, ok := dialects.Builtin().Inferred(task.PodObject(), c.ownerKinds)
		if !ok {
			continue
		}
		key = groupKey{kind: ref.Kind, namespace: task.GetNamespace(), name: ref.Object}
		if c.taskOwner[uid] != key {
			t.Errorf("pod %s: reverse index %v, want %v", task.Key(), c.taskOwner[uid], key)
		}
		n++
		if _, in := c.ownerTasks[key][uid]; !in {
			t.Errorf("pod %s is not indexed under its owner %v", task.Key(), key)
		}
	}
	indexed := 0
	for _, set := range c.ownerTasks {
		indexed += len(set)
	}
	if indexed != n || len(c.taskOwner) != n {
		t.Errorf("the owner index holds %d pods (reverse %d), want %d", indexed, len(c.taskOwner), n)
	}
	jobs := 0
	for id, job := range c.jobs {
		if id.Owner == "" {
			continue
		}
		jobs++
		for _, task := range job.Tasks {
			key := groupKey{kind: id.Owner, namespace: id.Namespace, name: task.GroupObject()}
			if _, in := c.ownerJobs[key][id]; !in {
				t.Errorf("job %s is not indexed under its owner %v", id, key)
			}
			break
		}
	}
	indexedJobs := 0
	for _, set := range c.ownerJobs {
		indexedJobs += len(set)
	}
	if indexedJobs != jobs {
		t.Errorf("the owner job index holds %d jobs, want %d", indexedJobs, jobs)
	}
}
