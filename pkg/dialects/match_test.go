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

package dialects

import (
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
	"github.com/batch-scheduler/batch-scheduler/pkg/resources"
)

// The rules that match pods to the built-in dialects, through the
// framework's GroupResolver as the cache and every other caller use them.

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

func ownedBy(apiVersion, kind, name string) podOpt {
	return func(p *v1.Pod) {
		yes := true
		p.OwnerReferences = append(p.OwnerReferences, metav1.OwnerReference{APIVersion: apiVersion, Kind: kind, Name: name, Controller: &yes})
	}
}

func ownedNotControlled(apiVersion, kind, name string) podOpt {
	return func(p *v1.Pod) {
		p.OwnerReferences = append(p.OwnerReferences, metav1.OwnerReference{APIVersion: apiVersion, Kind: kind, Name: name})
	}
}

// The explicit signals of the built-in dialects, with no gang inferred
// (Resolver): the job, the task's group kind and the conflict between
// signals that name different groups.
func TestResolveExplicit(t *testing.T) {
	tests := []struct {
		name     string
		pod      *v1.Pod
		want     framework.JobID
		kind     framework.GroupKind
		conflict string // substring; empty: none
	}{
		{name: "single pod", pod: mkPod("p"), want: framework.JobID{Namespace: "ns", Name: "p"}},
		{name: "own annotation", pod: mkPod("p", annotation(framework.GroupNameAnnotation, "g")),
			want: framework.JobID{Namespace: "ns", Name: "g", Gang: true}, kind: framework.GroupKindVolcano},
		{name: "volcano annotation", pod: mkPod("p", annotation(framework.VolcanoGroupNameAnnotation, "g")),
			want: framework.JobID{Namespace: "ns", Name: "g", Gang: true}, kind: framework.GroupKindVolcano},
		{name: "scheduler-plugins label", pod: mkPod("p", label(framework.CoschedulingPodGroupLabel, "g")),
			want: framework.JobID{Namespace: "ns", Name: "g", Gang: true}, kind: framework.GroupKindCoscheduling},
		{name: "native", pod: mkPod("p", native("g")),
			want: framework.JobID{Namespace: "ns", Name: "g", Gang: true}, kind: framework.GroupKindNative},
		{name: "job opted in", pod: mkPod("p", ownedByJob("train"), annotation(framework.JobGangAnnotation, "true")),
			want: framework.JobID{Namespace: "ns", Name: "train", Gang: true}, kind: framework.GroupKindJob},
		{name: "job not opted in", pod: mkPod("p", ownedByJob("train")), want: framework.JobID{Namespace: "ns", Name: "p"}},
		{name: "opt-in without a Job", pod: mkPod("p", annotation(framework.JobGangAnnotation, "true")), want: framework.JobID{Namespace: "ns", Name: "p"}},
		{name: "same name in two dialects: precedence", pod: mkPod("p", native("g"), label(framework.CoschedulingPodGroupLabel, "g")),
			want: framework.JobID{Namespace: "ns", Name: "g", Gang: true}, kind: framework.GroupKindNative},
		{name: "different names conflict", pod: mkPod("p", label(framework.CoschedulingPodGroupLabel, "a"), annotation(framework.GroupNameAnnotation, "b")),
			want: framework.JobID{Namespace: "ns", Name: "a", Gang: true}, kind: framework.GroupKindCoscheduling,
			conflict: "names different groups: label scheduling.x-k8s.io/pod-group=a and annotation scheduling.k8s.io/group-name=b"},
		{name: "job and annotation conflict", pod: mkPod("p", ownedByJob("train"), annotation(framework.JobGangAnnotation, "true"), annotation(framework.GroupNameAnnotation, "g")),
			want: framework.JobID{Namespace: "ns", Name: "g", Gang: true}, kind: framework.GroupKindVolcano, conflict: "controller Job train"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Resolver().JobID(tt.pod); got != tt.want {
				t.Errorf("JobID = %v, want %v", got, tt.want)
			}
			task := framework.NewTaskInfo(tt.pod, Resolver())
			if task.Job != tt.want || task.GroupKind() != tt.kind {
				t.Errorf("task job %v kind %q, want %v %q", task.Job, task.GroupKind(), tt.want, tt.kind)
			}
			if (tt.conflict == "") != (task.GroupConflict() == "") || !strings.Contains(task.GroupConflict(), tt.conflict) {
				t.Errorf("GroupConflict = %q, want one containing %q", task.GroupConflict(), tt.conflict)
			}
		})
	}
}

func TestInferredGroupRef(t *testing.T) {
	all := framework.AllOwnerKinds()
	lws := []podOpt{label(framework.LeaderWorkerSetNameLabel, "serve"), label(framework.LeaderWorkerSetGroupIndexLabel, "2"),
		ownedBy("apps/v1", "StatefulSet", "serve-2")}
	tests := []struct {
		name     string
		pod      *v1.Pod
		kinds    framework.OwnerKinds
		wantKind framework.GroupKind
		wantName string
		wantObj  string
	}{
		{name: "Job", pod: mkPod("p", ownedBy("batch/v1", "Job", "train")), kinds: all,
			wantKind: framework.GroupKindJob, wantName: "train", wantObj: "train"},
		{name: "RayCluster", pod: mkPod("p", ownedBy("ray.io/v1", "RayCluster", "rc"), label("ray.io/cluster", "rc")), kinds: all,
			wantKind: framework.GroupKindRayCluster, wantName: "rc", wantObj: "rc"},
		{name: "RayCluster of another group is not one", pod: mkPod("p", ownedBy("example.com/v1", "RayCluster", "rc")), kinds: all},
		{name: "owner that is not the controller", pod: mkPod("p", ownedNotControlled("ray.io/v1", "RayCluster", "rc")), kinds: all},
		{name: "JobSet label wins over the child Job", pod: mkPod("p", label(framework.JobSetNameLabel, "js"), ownedBy("batch/v1", "Job", "js-workers-0")),
			kinds: all, wantKind: framework.GroupKindJobSet, wantName: "js", wantObj: "js"},
		{name: "JobSet off: the child Job", pod: mkPod("p", label(framework.JobSetNameLabel, "js"), ownedBy("batch/v1", "Job", "js-workers-0")),
			kinds: all.Without(framework.GroupKindJobSet), wantKind: framework.GroupKindJob, wantName: "js-workers-0", wantObj: "js-workers-0"},
		{name: "LeaderWorkerSet: the whole set, whatever the group", pod: mkPod("p", lws...), kinds: all,
			wantKind: framework.GroupKindLeaderWorkerSet, wantName: "serve", wantObj: "serve"},
		{name: "LeaderWorkerSet without a group index", pod: mkPod("p", label(framework.LeaderWorkerSetNameLabel, "serve")), kinds: all},
		{name: "MPIJob launcher through its labels", pod: mkPod("p", label(framework.KubeflowJobNameLabel, "pi"), label(framework.KubeflowOperatorNameLabel, framework.MPIOperatorName),
			ownedBy("batch/v1", "Job", "pi-launcher")), kinds: all, wantKind: framework.GroupKindMPIJob, wantName: "pi", wantObj: "pi"},
		{name: "MPIJob worker through its controller", pod: mkPod("p", ownedBy("kubeflow.org/v2beta1", "MPIJob", "pi")), kinds: all,
			wantKind: framework.GroupKindMPIJob, wantName: "pi", wantObj: "pi"},
		{name: "job-name label of another operator is not an MPIJob", pod: mkPod("p", label(framework.KubeflowJobNameLabel, "pt"),
			label(framework.KubeflowOperatorNameLabel, "pytorchjob-controller"), ownedBy("kubeflow.org/v1", "PyTorchJob", "pt")), kinds: all,
			wantKind: framework.GroupKindPyTorchJob, wantName: "pt", wantObj: "pt"},
		{name: "kind not enabled", pod: mkPod("p", ownedBy("ray.io/v1", "RayCluster", "rc")), kinds: all.Without(framework.GroupKindRayCluster)},
		{name: "nothing enabled", pod: mkPod("p", ownedBy("batch/v1", "Job", "train"))},
		{name: "a Job's pod opted out", pod: mkPod("p", ownedBy("batch/v1", "Job", "train"), annotation(framework.JobGangAnnotation, "false")), kinds: all},
		{name: "a Deployment's pod", pod: mkPod("p", ownedBy("apps/v1", "ReplicaSet", "web-1")), kinds: all},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ref, ok := Builtin().Inferred(tt.pod, tt.kinds)
			if ok != (tt.wantKind != "") {
				t.Fatalf("inferred %v %+v, want kind %q", ok, ref, tt.wantKind)
			}
			if !ok {
				return
			}
			if ref.Kind != tt.wantKind || ref.Name != tt.wantName || ref.Object != tt.wantObj || !ref.Inferred {
				t.Errorf("ref %+v, want %s %s of object %s, inferred", ref, tt.wantKind, tt.wantName, tt.wantObj)
			}
		})
	}
}

// The precedence rules: an explicit signal always wins over an inferred
// owner, is never compared with it, and conflicts between explicit
// signals are reported as before; an owner whose policy makes its pods
// independent infers nothing.
func TestResolvePrecedence(t *testing.T) {
	rayOwned := ownedBy("ray.io/v1", "RayCluster", "rc")
	independent := func(kind framework.GroupKind, ns, object string) bool {
		return kind == framework.GroupKindJob && object == "single"
	}
	r := Resolver()
	r.Owners, r.Independent = framework.AllOwnerKinds(), independent
	tests := []struct {
		name     string
		pod      *v1.Pod
		resolver framework.GroupResolver
		want     framework.JobID
		kind     framework.GroupKind
		conflict string
	}{
		{name: "owner alone", pod: mkPod("p", rayOwned), resolver: r,
			want: framework.JobID{Namespace: "ns", Name: "rc", Gang: true, Owner: framework.GroupKindRayCluster}, kind: framework.GroupKindRayCluster},
		{name: "Volcano annotation of another name wins, no conflict", pod: mkPod("p", rayOwned, annotation(framework.VolcanoGroupNameAnnotation, "ray-rc-pg")),
			resolver: r, want: framework.JobID{Namespace: "ns", Name: "ray-rc-pg", Gang: true}, kind: framework.GroupKindVolcano},
		{name: "coscheduling label of the same name is explicit", pod: mkPod("p", rayOwned, label(framework.CoschedulingPodGroupLabel, "rc")),
			resolver: r, want: framework.JobID{Namespace: "ns", Name: "rc", Gang: true}, kind: framework.GroupKindCoscheduling},
		{name: "our annotation wins", pod: mkPod("p", rayOwned, annotation(framework.GroupNameAnnotation, "g"), annotation(framework.MinAvailableAnnotation, "2")),
			resolver: r, want: framework.JobID{Namespace: "ns", Name: "g", Gang: true}, kind: framework.GroupKindVolcano},
		{name: "native group wins", pod: mkPod("p", rayOwned, native("n")), resolver: r,
			want: framework.JobID{Namespace: "ns", Name: "n", Gang: true}, kind: framework.GroupKindNative},
		{name: "job-gang annotation is the explicit Job dialect", pod: mkPod("p", ownedByJob("train"), annotation(framework.JobGangAnnotation, "true")),
			resolver: r, want: framework.JobID{Namespace: "ns", Name: "train", Gang: true}, kind: framework.GroupKindJob},
		{name: "Job inferred without the annotation", pod: mkPod("p", ownedByJob("train")), resolver: r,
			want: framework.JobID{Namespace: "ns", Name: "train", Gang: true, Owner: framework.GroupKindJob}, kind: framework.GroupKindJob},
		{name: "independent Job: a single pod", pod: mkPod("p", ownedByJob("single")), resolver: r,
			want: framework.JobID{Namespace: "ns", Name: "p"}},
		{name: "independence does not apply to the explicit Job dialect", pod: mkPod("p", ownedByJob("single"), annotation(framework.JobGangAnnotation, "true")),
			resolver: r, want: framework.JobID{Namespace: "ns", Name: "single", Gang: true}, kind: framework.GroupKindJob},
		{name: "explicit signals still conflict with each other", pod: mkPod("p", rayOwned, label(framework.CoschedulingPodGroupLabel, "a"), annotation(framework.GroupNameAnnotation, "b")),
			resolver: r, want: framework.JobID{Namespace: "ns", Name: "a", Gang: true}, kind: framework.GroupKindCoscheduling, conflict: "names different groups"},
		{name: "no inference: the owner is ignored", pod: mkPod("p", rayOwned), resolver: Resolver(), want: framework.JobID{Namespace: "ns", Name: "p"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := tt.resolver.Resolve(tt.pod)
			if got := m.JobID(tt.pod.Namespace, tt.pod.Name); got != tt.want {
				t.Errorf("job %v, want %v", got, tt.want)
			}
			if got := tt.resolver.JobID(tt.pod); got != tt.want {
				t.Errorf("JobID %v, want %v", got, tt.want)
			}
			task := framework.NewTaskInfoInGroup(tt.pod, resources.Resource{}, m)
			if task.Job != tt.want || task.GroupKind() != tt.kind {
				t.Errorf("task job %v kind %q, want %v %q", task.Job, task.GroupKind(), tt.want, tt.kind)
			}
			if (tt.conflict == "") != (task.GroupConflict() == "") || !strings.Contains(task.GroupConflict(), tt.conflict) {
				t.Errorf("GroupConflict %q, want one containing %q", task.GroupConflict(), tt.conflict)
			}
			if strings.Contains(task.GroupConflict(), "RayCluster") {
				t.Errorf("an inferred owner was compared with explicit signals: %q", task.GroupConflict())
			}
		})
	}
}

// An inferred gang takes its owner's quorum and ignores the pods'
// min-available annotations; while the owner is unknown it waits for the
// owner object, named by the object's name.
func TestInferredGangQuorum(t *testing.T) {
	r := Resolver()
	r.Owners = framework.AllOwnerKinds()
	lws := func(name string, extra ...podOpt) *v1.Pod {
		return mkPod(name, append([]podOpt{label(framework.LeaderWorkerSetNameLabel, "serve"), label(framework.LeaderWorkerSetGroupIndexLabel, "0")}, extra...)...)
	}
	p0 := lws("serve-0", annotation(framework.MinAvailableAnnotation, "7"))
	m := r.Resolve(p0)
	j := framework.NewJobInfo(m.JobID("ns", p0.Name))
	j.SetTask(framework.NewTaskInfoInGroup(p0, resources.Resource{}, m))
	if err := j.ValidationError(); err == nil || !strings.Contains(err.Error(), "waiting for LeaderWorkerSet.leaderworkerset.x-k8s.io ns/serve to exist") {
		t.Fatalf("validation error %v, want one waiting for the LeaderWorkerSet", err)
	}
	j.SetGroupPolicy(framework.GroupKindLeaderWorkerSet, &framework.GroupPolicy{MinMember: 3, Source: "LeaderWorkerSet.leaderworkerset.x-k8s.io ns/serve"})
	if err := j.ValidationError(); err != nil || j.MinAvailable() != 3 {
		t.Fatalf("with the owner's policy: min %d, err %v; want 3 and no error (the annotation is not read)", j.MinAvailable(), err)
	}
	j.SetGroupPolicy(framework.GroupKindLeaderWorkerSet, &framework.GroupPolicy{Source: "x", Err: errString("x: spec.leaderWorkerTemplate.size is 0")})
	if err := j.ValidationError(); err == nil || !strings.Contains(err.Error(), "size is 0") {
		t.Fatalf("with a broken policy: %v", err)
	}
}

type errString string

func (e errString) Error() string { return string(e) }

// "false" opts a Job's pods out of an inferred gang and is not reported as
// ignored; other values still are.
func TestJobGangOptOutIsNotIgnored(t *testing.T) {
	if got := IgnoredGroupSignals(mkPod("p", ownedByJob("train"), annotation(framework.JobGangAnnotation, "false"))); len(got) != 0 {
		t.Errorf("job-gang=false reported as ignored: %v", got)
	}
	if got := IgnoredGroupSignals(mkPod("p", ownedByJob("train"), annotation(framework.JobGangAnnotation, "no"))); len(got) != 1 || !strings.Contains(got[0], `"false" out`) {
		t.Errorf("job-gang=no: %v", got)
	}
}
