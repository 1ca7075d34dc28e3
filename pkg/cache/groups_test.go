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
	"testing"

	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
	st "github.com/batch-scheduler/batch-scheduler/pkg/testing"
)

// A group object's policy reaches the job whether it comes before or after
// the job's pods, and goes away with the object.
func TestSetGroupPolicy(t *testing.T) {
	c, err := New(Options{})
	if err != nil {
		t.Fatal(err)
	}
	id := framework.JobID{Namespace: "ns", Name: "g", Gang: true}
	c.SetGroupPolicy(framework.GroupKindCoscheduling, "ns", "g", &framework.GroupPolicy{MinMember: 2})
	// Repeating the same policy, or removing one never set, changes nothing.
	c.SetGroupPolicy(framework.GroupKindCoscheduling, "ns", "g", &framework.GroupPolicy{MinMember: 2})
	c.SetGroupPolicy(framework.GroupKindVolcano, "ns", "g", nil)
	pod := st.MakePod().Namespace("ns").Name("a").UID("a").Label(framework.CoschedulingPodGroupLabel, "g").Obj()
	if err := c.AddPendingPod(pod); err != nil {
		t.Fatal(err)
	}
	j, ok := c.Job(id)
	if !ok || j.MinAvailable() != 2 || j.ValidationError() != nil {
		t.Fatalf("job with a PodGroup known before its pods: %v %v", j.MinAvailable(), j.ValidationError())
	}
	c.SetGroupPolicy(framework.GroupKindCoscheduling, "ns", "g", &framework.GroupPolicy{MinMember: 4})
	if j, _ := c.Job(id); j.MinAvailable() != 4 {
		t.Fatalf("after the PodGroup changed: min %d", j.MinAvailable())
	}
	c.SetGroupPolicy(framework.GroupKindCoscheduling, "ns", "g", nil)
	if j, _ := c.Job(id); j.ValidationError() == nil {
		t.Fatal("the job kept its quorum after its PodGroup went away")
	}
	if len(c.groupPolicies) != 0 {
		t.Errorf("policies left: %v", c.groupPolicies)
	}
}

// A change of a group object's sub-group rules alone reaches the job: the
// cycle splits its pods by the new rules.
func TestSetGroupPolicySubGroupsChange(t *testing.T) {
	c, err := New(Options{})
	if err != nil {
		t.Fatal(err)
	}
	id := framework.JobID{Namespace: "ns", Name: "g", Gang: true}
	rule := framework.SubGroupRule{Name: "w", KeyLabels: []string{"replica"}, MinMember: 2, Source: "s"}
	c.SetGroupPolicy(framework.GroupKindCoscheduling, "ns", "g", &framework.GroupPolicy{MinMember: 2, SubGroups: []framework.SubGroupRule{rule}})
	for _, name := range []string{"a", "b"} {
		pod := st.MakePod().Namespace("ns").Name(name).UID(name).Label(framework.CoschedulingPodGroupLabel, "g").Label("replica", "0").Obj()
		if err := c.AddPendingPod(pod); err != nil {
			t.Fatal(err)
		}
	}
	job, ok := c.CycleJob(id)
	if !ok || len(job.SubGroups) != 1 || job.SubGroups[0].MinMember != 2 {
		t.Fatalf("cycle job sub-groups = %+v, want one of quorum 2", job)
	}
	rule.MinMember = 3
	c.SetGroupPolicy(framework.GroupKindCoscheduling, "ns", "g", &framework.GroupPolicy{MinMember: 2, SubGroups: []framework.SubGroupRule{rule}})
	if job, _ := c.CycleJob(id); len(job.SubGroups) != 1 || job.SubGroups[0].MinMember != 3 {
		t.Fatalf("after the rule changed: sub-groups %+v, want one of quorum 3", job.SubGroups)
	}
}
