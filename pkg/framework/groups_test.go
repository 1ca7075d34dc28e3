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

package framework

import (
	"errors"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

type podOpt func(*v1.Pod)

func mkPod(name string, opts ...podOpt) *v1.Pod {
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID(name),
		Labels: map[string]string{}, Annotations: map[string]string{}}}
	for _, o := range opts {
		o(p)
	}
	return p
}

func native(g string) podOpt {
	return func(p *v1.Pod) { p.Spec.SchedulingGroup = &v1.PodSchedulingGroup{PodGroupName: &g} }
}
func label(k, v string) podOpt      { return func(p *v1.Pod) { p.Labels[k] = v } }
func annotation(k, v string) podOpt { return func(p *v1.Pod) { p.Annotations[k] = v } }
func ownedByJob(name string) podOpt {
	return func(p *v1.Pod) {
		yes := true
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: name, Controller: &yes}}
	}
}

// testMatcher is a stand-in for a table of pkg/dialects, which holds the
// rules that match pods to gangs and imports this package: it reads the
// three explicit signals the tests of JobInfo use (the native group, the
// coscheduling label and the group-name annotation, in that order) and
// infers no gang. pkg/dialects tests the real rules.
type testMatcher struct{}

func (testMatcher) Explicit(pod *v1.Pod) []GroupRef {
	var refs []GroupRef
	if sg := pod.Spec.SchedulingGroup; sg != nil && sg.PodGroupName != nil {
		refs = append(refs, GroupRef{Kind: GroupKindNative, Name: *sg.PodGroupName, Object: *sg.PodGroupName, Via: "spec.schedulingGroup.podGroupName"})
	}
	if v := pod.Labels[CoschedulingPodGroupLabel]; v != "" {
		refs = append(refs, GroupRef{Kind: GroupKindCoscheduling, Name: v, Object: v, Via: "label " + CoschedulingPodGroupLabel})
	}
	if v := pod.Annotations[GroupNameAnnotation]; v != "" {
		refs = append(refs, GroupRef{Kind: GroupKindVolcano, Name: v, Object: v, Via: "annotation " + GroupNameAnnotation})
	}
	return refs
}

func (testMatcher) Inferred(*v1.Pod, OwnerKinds) (GroupRef, bool) { return GroupRef{}, false }

func (testMatcher) ExplicitKinds() []GroupKind {
	return []GroupKind{GroupKindNative, GroupKindCoscheduling, GroupKindVolcano}
}

// testTask is the task of p in the group testMatcher reads.
func testTask(p *v1.Pod) *TaskInfo { return NewTaskInfo(p, GroupResolver{Matcher: testMatcher{}}) }

// Without a matcher a resolver matches no group: every pod is on its own,
// whatever it names.
func TestResolverWithoutMatcher(t *testing.T) {
	p := mkPod("p", native("g"), label(CoschedulingPodGroupLabel, "g"), annotation(GroupNameAnnotation, "g"), ownedByJob("train"))
	r := GroupResolver{Owners: AllOwnerKinds()}
	if m := r.Resolve(p); m.Gang() || m.Conflict != "" {
		t.Errorf("membership %+v, want none", m)
	}
	if got, want := NewTaskInfo(p, GroupResolver{}).Job, (JobID{Namespace: "ns", Name: "p"}); got != want {
		t.Errorf("job %v, want %v", got, want)
	}
	if got := testTask(p); got.Job != (JobID{Namespace: "ns", Name: "g", Gang: true}) || got.GroupKind() != GroupKindNative {
		t.Errorf("with a matcher: job %v kind %q, want ns/g of the native PodGroup", got.Job, got.GroupKind())
	}
}

func TestQuorumPrecedence(t *testing.T) {
	policy := func(n int32) *GroupPolicy {
		return &GroupPolicy{MinMember: n, Source: "PodGroup.scheduling.volcano.sh ns/g"}
	}
	tests := []struct {
		name    string
		pods    []*v1.Pod
		kind    GroupKind
		policy  *GroupPolicy
		wantMin int32
		wantErr string
	}{
		{name: "annotation alone", pods: []*v1.Pod{mkPod("a", annotation(GroupNameAnnotation, "g"), annotation(MinAvailableAnnotation, "2"))},
			wantMin: 2},
		{name: "annotation without quorum", pods: []*v1.Pod{mkPod("a", annotation(GroupNameAnnotation, "g"))},
			wantErr: "declares no quorum"},
		{name: "volcano PodGroup defines the quorum", pods: []*v1.Pod{mkPod("a", annotation(GroupNameAnnotation, "g")), mkPod("b", annotation(GroupNameAnnotation, "g"))},
			kind: GroupKindVolcano, policy: policy(2), wantMin: 2},
		{name: "agreeing annotation", pods: []*v1.Pod{mkPod("a", annotation(GroupNameAnnotation, "g"), annotation(MinAvailableAnnotation, "2"))},
			kind: GroupKindVolcano, policy: policy(2), wantMin: 2},
		{name: "disagreeing annotation", pods: []*v1.Pod{mkPod("a", annotation(GroupNameAnnotation, "g"), annotation(MinAvailableAnnotation, "3"))},
			kind: GroupKindVolcano, policy: policy(2),
			wantErr: "conflicting quorums: PodGroup.scheduling.volcano.sh ns/g says 2, annotation scheduling.k8s.io/min-available says 3"},
		{name: "PodGroup missing", pods: []*v1.Pod{mkPod("a", label(CoschedulingPodGroupLabel, "g"))},
			wantErr: "waiting for PodGroup.scheduling.x-k8s.io ns/g to exist"},
		{name: "PodGroup of another dialect does not count", pods: []*v1.Pod{mkPod("a", label(CoschedulingPodGroupLabel, "g"))},
			kind: GroupKindVolcano, policy: policy(1), wantErr: "waiting for PodGroup.scheduling.x-k8s.io ns/g to exist"},
		{name: "unusable PodGroup", pods: []*v1.Pod{mkPod("a", native("g"))},
			kind: GroupKindNative, policy: &GroupPolicy{Err: errors.New("PodGroup.scheduling.k8s.io ns/g has no minCount")}, wantErr: "has no minCount"},
		{name: "mixed dialects", pods: []*v1.Pod{mkPod("a", native("g")), mkPod("b", label(CoschedulingPodGroupLabel, "g"))},
			kind: GroupKindNative, policy: policy(1), wantErr: "different dialects"},
		{name: "pod conflict", pods: []*v1.Pod{mkPod("a", native("g"), annotation(GroupNameAnnotation, "h"))},
			kind: GroupKindNative, policy: policy(1), wantErr: "conflicting group signals"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			j := NewJobInfo(JobID{Namespace: "ns", Name: "g", Gang: true})
			if tt.policy != nil {
				j.SetGroupPolicy(tt.kind, tt.policy)
			}
			for _, p := range tt.pods {
				j.SetTask(testTask(p))
			}
			check := func(when string, j *JobInfo) {
				t.Helper()
				err := j.ValidationError()
				if tt.wantErr == "" {
					if err != nil || j.MinAvailable() != tt.wantMin {
						t.Errorf("%s: MinAvailable %d err %v, want %d", when, j.MinAvailable(), err, tt.wantMin)
					}
					return
				}
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || j.MinAvailable() != 0 {
					t.Errorf("%s: MinAvailable %d err %v, want 0 and %q", when, j.MinAvailable(), err, tt.wantErr)
				}
			}
			check("built", j)
			check("cloned", j.Clone())
			// Removing every task and adding them back gives the same verdict.
			for _, p := range tt.pods {
				j.DeleteTask(p.UID)
			}
			if len(j.kinds) != 0 || len(j.conflicts) != 0 {
				t.Errorf("bookkeeping left after removing every task: kinds %v conflicts %v", j.kinds, j.conflicts)
			}
			for _, p := range tt.pods {
				j.SetTask(testTask(p))
			}
			check("re-added", j)
		})
	}
}

// A PodGroup that appears, changes and goes away re-validates the job.
func TestGroupPolicyLifecycle(t *testing.T) {
	j := NewJobInfo(JobID{Namespace: "ns", Name: "g", Gang: true})
	j.SetTask(testTask(mkPod("a", label(CoschedulingPodGroupLabel, "g"))))
	if j.ValidationError() == nil {
		t.Fatal("no error without a PodGroup")
	}
	j.SetGroupPolicy(GroupKindCoscheduling, &GroupPolicy{MinMember: 3})
	if j.ValidationError() != nil || j.MinAvailable() != 3 {
		t.Fatalf("with minMember 3: %d %v", j.MinAvailable(), j.ValidationError())
	}
	c := j.Clone()
	j.SetGroupPolicy(GroupKindCoscheduling, &GroupPolicy{MinMember: 5})
	if j.MinAvailable() != 5 || c.MinAvailable() != 3 {
		t.Fatalf("update: job %d, clone %d; want 5 and 3", j.MinAvailable(), c.MinAvailable())
	}
	j.SetGroupPolicy(GroupKindCoscheduling, nil)
	if err := j.ValidationError(); err == nil || !strings.Contains(err.Error(), "waiting for PodGroup.scheduling.x-k8s.io ns/g") {
		t.Fatalf("after delete: %v", err)
	}
}
