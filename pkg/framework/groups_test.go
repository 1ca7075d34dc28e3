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

func TestJobIDForPodDialects(t *testing.T) {
	tests := []struct {
		name     string
		pod      *v1.Pod
		want     JobID
		kind     GroupKind
		conflict string // substring; empty: none
	}{
		{name: "single pod", pod: mkPod("p"), want: JobID{Namespace: "ns", Name: "p"}},
		{name: "own annotation", pod: mkPod("p", annotation(GroupNameAnnotation, "g")),
			want: JobID{Namespace: "ns", Name: "g", Gang: true}, kind: GroupKindVolcano},
		{name: "volcano annotation", pod: mkPod("p", annotation(VolcanoGroupNameAnnotation, "g")),
			want: JobID{Namespace: "ns", Name: "g", Gang: true}, kind: GroupKindVolcano},
		{name: "scheduler-plugins label", pod: mkPod("p", label(CoschedulingPodGroupLabel, "g")),
			want: JobID{Namespace: "ns", Name: "g", Gang: true}, kind: GroupKindCoscheduling},
		{name: "native", pod: mkPod("p", native("g")),
			want: JobID{Namespace: "ns", Name: "g", Gang: true}, kind: GroupKindNative},
		{name: "job opted in", pod: mkPod("p", ownedByJob("train"), annotation(JobGangAnnotation, "true")),
			want: JobID{Namespace: "ns", Name: "train", Gang: true}, kind: GroupKindJob},
		{name: "job not opted in", pod: mkPod("p", ownedByJob("train")), want: JobID{Namespace: "ns", Name: "p"}},
		{name: "opt-in without a Job", pod: mkPod("p", annotation(JobGangAnnotation, "true")), want: JobID{Namespace: "ns", Name: "p"}},
		{name: "same name in two dialects: precedence", pod: mkPod("p", native("g"), label(CoschedulingPodGroupLabel, "g")),
			want: JobID{Namespace: "ns", Name: "g", Gang: true}, kind: GroupKindNative},
		{name: "different names conflict", pod: mkPod("p", label(CoschedulingPodGroupLabel, "a"), annotation(GroupNameAnnotation, "b")),
			want: JobID{Namespace: "ns", Name: "a", Gang: true}, kind: GroupKindCoscheduling,
			conflict: "names different groups: label scheduling.x-k8s.io/pod-group=a and annotation scheduling.k8s.io/group-name=b"},
		{name: "job and annotation conflict", pod: mkPod("p", ownedByJob("train"), annotation(JobGangAnnotation, "true"), annotation(GroupNameAnnotation, "g")),
			want: JobID{Namespace: "ns", Name: "g", Gang: true}, kind: GroupKindVolcano, conflict: "controller Job train"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := JobIDForPod(tt.pod); got != tt.want {
				t.Errorf("JobIDForPod = %v, want %v", got, tt.want)
			}
			task := NewTaskInfo(tt.pod)
			if task.Job != tt.want || task.GroupKind != tt.kind {
				t.Errorf("task job %v kind %q, want %v %q", task.Job, task.GroupKind, tt.want, tt.kind)
			}
			if (tt.conflict == "") != (task.GroupConflict == "") || !strings.Contains(task.GroupConflict, tt.conflict) {
				t.Errorf("GroupConflict = %q, want one containing %q", task.GroupConflict, tt.conflict)
			}
		})
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
				j.SetTask(NewTaskInfo(p))
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
				j.SetTask(NewTaskInfo(p))
			}
			check("re-added", j)
		})
	}
}

// A PodGroup that appears, changes and goes away re-validates the job.
func TestGroupPolicyLifecycle(t *testing.T) {
	j := NewJobInfo(JobID{Namespace: "ns", Name: "g", Gang: true})
	j.SetTask(NewTaskInfo(mkPod("a", label(CoschedulingPodGroupLabel, "g"))))
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
