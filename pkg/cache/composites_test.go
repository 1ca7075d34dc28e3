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
	"k8s.io/apimachinery/pkg/types"

	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
	st "github.com/batch-scheduler/batch-scheduler/pkg/testing"
)

// childPod is a pending pod named name of the native PodGroup group.
func childPod(name, group string) *v1.Pod {
	p := st.MakePod().Namespace("ns").Name(name).UID(name).Obj()
	p.Spec.SchedulingGroup = &v1.PodSchedulingGroup{PodGroupName: &group}
	return p
}

// compositeGang is the policy of a composite gang of minGroupCount n, as
// pkg/dialects reads it.
func compositeGang(n int32) *framework.GroupPolicy {
	return &framework.GroupPolicy{Source: "CompositePodGroup.scheduling.k8s.io ns/c",
		SubGroups: []framework.SubGroupRule{{KeyPodGroup: true, MinSubGroups: n, Source: "c minGroupCount"}}}
}

// childPolicy is the policy of a native PodGroup of quorum n whose parent
// is parent.
func childPolicy(n int32, parent string) *framework.GroupPolicy {
	return &framework.GroupPolicy{MinMember: n, Parent: parent, Source: "PodGroup.scheduling.k8s.io ns/x"}
}

// jobOf returns the job the cache files the pod named uid under, and
// checks that JobIDForPod (the consistency checker's) agrees.
func jobOf(t *testing.T, c *SchedulerCache, uid string) framework.JobID {
	t.Helper()
	c.mu.RLock()
	task := c.tasks[types.UID(uid)]
	c.mu.RUnlock()
	if task == nil {
		t.Fatalf("no task of pod %s", uid)
	}
	if got := c.JobIDForPod(task.PodObject()); got != task.Job {
		t.Errorf("JobIDForPod(%s) = %v, the cache files it under %v", uid, got, task.Job)
	}
	return task.Job
}

// The pods of the children of a composite gang are one job, whichever
// comes first, pods or objects; each child is a sub-group of its own
// quorum and topology, minGroupCount the whole's quorum in sub-groups; a
// child that leaves (deleted), or a composite that turns basic, gives
// the pods their PodGroups' own jobs back.
func TestCompositePodGroupJob(t *testing.T) {
	for _, objectsFirst := range []bool{true, false} {
		c, err := New(Options{})
		if err != nil {
			t.Fatal(err)
		}
		composite := framework.JobID{Namespace: "ns", Name: "c", Gang: true, Owner: framework.GroupKindComposite}
		rack := &framework.TopologyConstraint{Key: "rack", Required: true, Source: "a's topology"}
		objects := func() {
			c.SetGroupPolicy(framework.GroupKindComposite, "ns", "c", compositeGang(2))
			a := childPolicy(2, "c")
			a.Topology = rack
			c.SetGroupPolicy(framework.GroupKindNative, "ns", "a", a)
			c.SetGroupPolicy(framework.GroupKindNative, "ns", "b", childPolicy(3, "c"))
			c.SetGroupPolicy(framework.GroupKindNative, "ns", "d", childPolicy(1, "c"))
		}
		if objectsFirst {
			objects()
		}
		for _, p := range []*v1.Pod{childPod("a0", "a"), childPod("a1", "a"), childPod("b0", "b"), childPod("d0", "d")} {
			if err := c.AddPendingPod(p); err != nil {
				t.Fatal(err)
			}
		}
		if !objectsFirst {
			if got := jobOf(t, c, "a0"); got != (framework.JobID{Namespace: "ns", Name: "a", Gang: true}) {
				t.Fatalf("before the PodGroups: job %v, want the PodGroup's", got)
			}
			objects()
		}
		for _, uid := range []string{"a0", "a1", "b0", "d0"} {
			if got := jobOf(t, c, uid); got != composite {
				t.Fatalf("objects first %v: pod %s in job %v, want the composite's", objectsFirst, uid, got)
			}
		}
		job, ok := c.CycleJob(composite)
		if !ok {
			t.Fatal("no cycle job of the composite")
		}
		// The two smallest quorums of the children: 1 + 2.
		if job.MinAvailable != 3 || len(job.SubGroups) != 3 || job.SubGroupRules[0].MinSubGroups != 2 {
			t.Fatalf("objects first %v: min %d, sub-groups %+v, rules %+v", objectsFirst, job.MinAvailable, job.SubGroups, job.SubGroupRules)
		}
		want := map[string]int32{"a": 2, "b": 3, "d": 1}
		for _, g := range job.SubGroups {
			if g.MinMember != want[g.Key] {
				t.Errorf("sub-group %s quorum %d, want %d", g.Key, g.MinMember, want[g.Key])
			}
			if (g.Key == "a") != (g.Topology == rack) {
				t.Errorf("sub-group %s topology %v", g.Key, g.Topology)
			}
		}
		// A child's quorum change reaches the composite's job.
		c.SetGroupPolicy(framework.GroupKindNative, "ns", "d", childPolicy(2, "c"))
		if job, _ := c.CycleJob(composite); job.MinAvailable != 4 {
			t.Errorf("after d's quorum rose to 2: min %d, want 4", job.MinAvailable)
		}
		// A child deleted: its pods wait for it in its own job.
		c.SetGroupPolicy(framework.GroupKindNative, "ns", "d", nil)
		if got := jobOf(t, c, "d0"); got != (framework.JobID{Namespace: "ns", Name: "d", Gang: true}) {
			t.Errorf("after d went away: job %v", got)
		}
		// A basic composite: every child its own gang.
		c.SetGroupPolicy(framework.GroupKindComposite, "ns", "c", &framework.GroupPolicy{Independent: true, Source: "basic"})
		for _, uid := range []string{"a0", "b0"} {
			if got := jobOf(t, c, uid); got.Owner != "" || got.Name != uid[:1] {
				t.Errorf("under a basic composite: pod %s in job %v", uid, got)
			}
		}
		if _, ok := c.Job(composite); ok {
			t.Error("the composite's job is left without pods")
		}
		// A gang again, with a parent of its own: nested composites are not
		// supported, the children stay gangs of their own.
		nested := compositeGang(2)
		nested.Parent = "top"
		c.SetGroupPolicy(framework.GroupKindComposite, "ns", "c", nested)
		if got := jobOf(t, c, "a0"); got.Owner != "" {
			t.Errorf("under a nested composite: job %v", got)
		}
		// Gone: the children's pods wait for it.
		c.SetGroupPolicy(framework.GroupKindComposite, "ns", "c", nil)
		if got := jobOf(t, c, "a0"); got != composite {
			t.Fatalf("after the composite went away: job %v", got)
		}
		j, _ := c.Job(composite)
		if err := j.ValidationError(); err == nil || !strings.Contains(err.Error(), "waiting for CompositePodGroup.scheduling.k8s.io ns/c to exist") {
			t.Errorf("validation error %v", err)
		}
	}
}

// An unusable child makes the composite's gang unusable, naming the child.
func TestCompositePodGroupBadChild(t *testing.T) {
	c, err := New(Options{})
	if err != nil {
		t.Fatal(err)
	}
	c.SetGroupPolicy(framework.GroupKindComposite, "ns", "c", compositeGang(1))
	bad := childPolicy(0, "c")
	bad.Err = errTest("PodGroup.scheduling.k8s.io ns/a has neither spec.schedulingPolicy.gang.minCount >= 1 nor a basic policy")
	c.SetGroupPolicy(framework.GroupKindNative, "ns", "a", bad)
	if err := c.AddPendingPod(childPod("a0", "a")); err != nil {
		t.Fatal(err)
	}
	j, ok := c.Job(framework.JobID{Namespace: "ns", Name: "c", Gang: true, Owner: framework.GroupKindComposite})
	if !ok {
		t.Fatal("no composite job")
	}
	if err := j.ValidationError(); err == nil || !strings.Contains(err.Error(), "ns/a has neither") || !strings.Contains(err.Error(), "a child of CompositePodGroup") {
		t.Errorf("validation error %v", err)
	}
}

type errTest string

func (e errTest) Error() string { return string(e) }
