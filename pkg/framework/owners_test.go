package framework

import (
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/batch-scheduler/batch-scheduler/pkg/resources"
)

func controlledBy(apiVersion, kind, name string) podOpt {
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

func TestInferredGroupRef(t *testing.T) {
	all := AllOwnerKinds()
	lws := []podOpt{label(LeaderWorkerSetNameLabel, "serve"), label(LeaderWorkerSetGroupIndexLabel, "2"),
		controlledBy("apps/v1", "StatefulSet", "serve-2")}
	tests := []struct {
		name     string
		pod      *v1.Pod
		kinds    OwnerKinds
		wantKind GroupKind
		wantName string
		wantObj  string
	}{
		{name: "Job", pod: mkPod("p", controlledBy("batch/v1", "Job", "train")), kinds: all,
			wantKind: GroupKindJob, wantName: "train", wantObj: "train"},
		{name: "RayCluster", pod: mkPod("p", controlledBy("ray.io/v1", "RayCluster", "rc"), label("ray.io/cluster", "rc")), kinds: all,
			wantKind: GroupKindRayCluster, wantName: "rc", wantObj: "rc"},
		{name: "RayCluster of another group is not one", pod: mkPod("p", controlledBy("example.com/v1", "RayCluster", "rc")), kinds: all},
		{name: "owner that is not the controller", pod: mkPod("p", ownedNotControlled("ray.io/v1", "RayCluster", "rc")), kinds: all},
		{name: "JobSet label wins over the child Job", pod: mkPod("p", label(JobSetNameLabel, "js"), controlledBy("batch/v1", "Job", "js-workers-0")),
			kinds: all, wantKind: GroupKindJobSet, wantName: "js", wantObj: "js"},
		{name: "JobSet off: the child Job", pod: mkPod("p", label(JobSetNameLabel, "js"), controlledBy("batch/v1", "Job", "js-workers-0")),
			kinds: all.Without(GroupKindJobSet), wantKind: GroupKindJob, wantName: "js-workers-0", wantObj: "js-workers-0"},
		{name: "LeaderWorkerSet group", pod: mkPod("p", lws...), kinds: all,
			wantKind: GroupKindLeaderWorkerSet, wantName: "serve-2", wantObj: "serve"},
		{name: "LeaderWorkerSet without a group index", pod: mkPod("p", label(LeaderWorkerSetNameLabel, "serve")), kinds: all},
		{name: "MPIJob launcher through its labels", pod: mkPod("p", label(KubeflowJobNameLabel, "pi"), label(KubeflowOperatorNameLabel, MPIOperatorName),
			controlledBy("batch/v1", "Job", "pi-launcher")), kinds: all, wantKind: GroupKindMPIJob, wantName: "pi", wantObj: "pi"},
		{name: "MPIJob worker through its controller", pod: mkPod("p", controlledBy("kubeflow.org/v2beta1", "MPIJob", "pi")), kinds: all,
			wantKind: GroupKindMPIJob, wantName: "pi", wantObj: "pi"},
		{name: "job-name label of another operator is not an MPIJob", pod: mkPod("p", label(KubeflowJobNameLabel, "pt"),
			label(KubeflowOperatorNameLabel, "pytorchjob-controller"), controlledBy("kubeflow.org/v1", "PyTorchJob", "pt")), kinds: all,
			wantKind: GroupKindPyTorchJob, wantName: "pt", wantObj: "pt"},
		{name: "kind not enabled", pod: mkPod("p", controlledBy("ray.io/v1", "RayCluster", "rc")), kinds: all.Without(GroupKindRayCluster)},
		{name: "nothing enabled", pod: mkPod("p", controlledBy("batch/v1", "Job", "train"))},
		{name: "a Job's pod opted out", pod: mkPod("p", controlledBy("batch/v1", "Job", "train"), annotation(JobGangAnnotation, "false")), kinds: all},
		{name: "a Deployment's pod", pod: mkPod("p", controlledBy("apps/v1", "ReplicaSet", "web-1")), kinds: all},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ref, ok := InferredGroupRef(tt.pod, tt.kinds)
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
	rayOwned := controlledBy("ray.io/v1", "RayCluster", "rc")
	independent := func(kind GroupKind, ns, object string) bool { return kind == GroupKindJob && object == "single" }
	r := GroupResolver{Owners: AllOwnerKinds(), Independent: independent}
	tests := []struct {
		name     string
		pod      *v1.Pod
		resolver GroupResolver
		want     JobID
		kind     GroupKind
		conflict string
	}{
		{name: "owner alone", pod: mkPod("p", rayOwned), resolver: r,
			want: JobID{Namespace: "ns", Name: "rc", Gang: true, Owner: GroupKindRayCluster}, kind: GroupKindRayCluster},
		{name: "Volcano annotation of another name wins, no conflict", pod: mkPod("p", rayOwned, annotation(VolcanoGroupNameAnnotation, "ray-rc-pg")),
			resolver: r, want: JobID{Namespace: "ns", Name: "ray-rc-pg", Gang: true}, kind: GroupKindVolcano},
		{name: "coscheduling label of the same name is explicit", pod: mkPod("p", rayOwned, label(CoschedulingPodGroupLabel, "rc")),
			resolver: r, want: JobID{Namespace: "ns", Name: "rc", Gang: true}, kind: GroupKindCoscheduling},
		{name: "our annotation wins", pod: mkPod("p", rayOwned, annotation(GroupNameAnnotation, "g"), annotation(MinAvailableAnnotation, "2")),
			resolver: r, want: JobID{Namespace: "ns", Name: "g", Gang: true}, kind: GroupKindVolcano},
		{name: "native group wins", pod: mkPod("p", rayOwned, native("n")), resolver: r,
			want: JobID{Namespace: "ns", Name: "n", Gang: true}, kind: GroupKindNative},
		{name: "job-gang annotation is the explicit Job dialect", pod: mkPod("p", ownedByJob("train"), annotation(JobGangAnnotation, "true")),
			resolver: r, want: JobID{Namespace: "ns", Name: "train", Gang: true}, kind: GroupKindJob},
		{name: "Job inferred without the annotation", pod: mkPod("p", ownedByJob("train")), resolver: r,
			want: JobID{Namespace: "ns", Name: "train", Gang: true, Owner: GroupKindJob}, kind: GroupKindJob},
		{name: "independent Job: a single pod", pod: mkPod("p", ownedByJob("single")), resolver: r,
			want: JobID{Namespace: "ns", Name: "p"}},
		{name: "independence does not apply to the explicit Job dialect", pod: mkPod("p", ownedByJob("single"), annotation(JobGangAnnotation, "true")),
			resolver: r, want: JobID{Namespace: "ns", Name: "single", Gang: true}, kind: GroupKindJob},
		{name: "explicit signals still conflict with each other", pod: mkPod("p", rayOwned, label(CoschedulingPodGroupLabel, "a"), annotation(GroupNameAnnotation, "b")),
			resolver: r, want: JobID{Namespace: "ns", Name: "a", Gang: true}, kind: GroupKindCoscheduling, conflict: "names different groups"},
		{name: "no inference: the owner is ignored", pod: mkPod("p", rayOwned), want: JobID{Namespace: "ns", Name: "p"}},
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
			task := NewTaskInfoInGroup(tt.pod, resources.Resource{}, m)
			if task.Job != tt.want || task.GroupKind != tt.kind {
				t.Errorf("task job %v kind %q, want %v %q", task.Job, task.GroupKind, tt.want, tt.kind)
			}
			if (tt.conflict == "") != (task.GroupConflict == "") || !strings.Contains(task.GroupConflict, tt.conflict) {
				t.Errorf("GroupConflict %q, want one containing %q", task.GroupConflict, tt.conflict)
			}
			if strings.Contains(task.GroupConflict, "RayCluster") {
				t.Errorf("an inferred owner was compared with explicit signals: %q", task.GroupConflict)
			}
		})
	}
}

func TestOwnerJobID(t *testing.T) {
	id := JobID{Namespace: "ml", Name: "train", Gang: true, Owner: GroupKindRayCluster}
	if got := id.String(); got != "ml/RayCluster.ray.io:train" {
		t.Errorf("String() = %q", got)
	}
	explicit := JobID{Namespace: "ml", Name: "train", Gang: true}
	if id == explicit || id.String() == explicit.String() {
		t.Error("an inferred gang and an explicit one of the same name are the same job")
	}
	if got := (JobID{Namespace: "ml", Name: "Bad Name", Gang: true, Owner: GroupKindJob}).String(); got != `ml/Job.batch:"Bad Name"` {
		t.Errorf("String() of an invalid name = %q", got)
	}
}

// An inferred gang takes its owner's quorum and ignores the pods'
// min-available annotations; while the owner is unknown it waits for the
// owner object, named by the object's name (a LeaderWorkerSet's, not its
// group's).
func TestInferredGangQuorum(t *testing.T) {
	r := GroupResolver{Owners: AllOwnerKinds()}
	lws := func(name string, extra ...podOpt) *v1.Pod {
		return mkPod(name, append([]podOpt{label(LeaderWorkerSetNameLabel, "serve"), label(LeaderWorkerSetGroupIndexLabel, "0")}, extra...)...)
	}
	p0 := lws("serve-0", annotation(MinAvailableAnnotation, "7"))
	m := r.Resolve(p0)
	j := NewJobInfo(m.JobID("ns", p0.Name))
	j.SetTask(NewTaskInfoInGroup(p0, resources.Resource{}, m))
	if err := j.ValidationError(); err == nil || !strings.Contains(err.Error(), "waiting for LeaderWorkerSet.leaderworkerset.x-k8s.io ns/serve to exist") {
		t.Fatalf("validation error %v, want one waiting for the LeaderWorkerSet", err)
	}
	j.SetGroupPolicy(GroupKindLeaderWorkerSet, &GroupPolicy{MinMember: 3, Source: "LeaderWorkerSet.leaderworkerset.x-k8s.io ns/serve"})
	if err := j.ValidationError(); err != nil || j.MinAvailable() != 3 {
		t.Fatalf("with the owner's policy: min %d, err %v; want 3 and no error (the annotation is not read)", j.MinAvailable(), err)
	}
	j.SetGroupPolicy(GroupKindLeaderWorkerSet, &GroupPolicy{Source: "x", Err: errString("x: spec.leaderWorkerTemplate.size is 0")})
	if err := j.ValidationError(); err == nil || !strings.Contains(err.Error(), "size is 0") {
		t.Fatalf("with a broken policy: %v", err)
	}
}

type errString string

func (e errString) Error() string { return string(e) }

func TestOwnerKinds(t *testing.T) {
	all := AllOwnerKinds()
	if len(all.Kinds()) != 6 {
		t.Fatalf("AllOwnerKinds = %v", all)
	}
	s := OwnerKinds(0).With(GroupKindRayCluster).With(GroupKindNative)
	if !s.Has(GroupKindRayCluster) || s.Has(GroupKindNative) || s.Has(GroupKindJob) || s.String() != "RayCluster.ray.io" {
		t.Errorf("set %v: With ignores kinds that are not owner kinds, Has reports only members", s)
	}
	if all.Without(GroupKindJob).Has(GroupKindJob) || !IsOwnerKind(GroupKindJob) || IsOwnerKind(GroupKindVolcano) {
		t.Error("Without/IsOwnerKind")
	}
}

// "false" opts a Job's pods out of an inferred gang and is not reported as
// ignored; other values still are.
func TestJobGangOptOutIsNotIgnored(t *testing.T) {
	if got := IgnoredGroupSignals(mkPod("p", ownedByJob("train"), annotation(JobGangAnnotation, "false"))); len(got) != 0 {
		t.Errorf("job-gang=false reported as ignored: %v", got)
	}
	if got := IgnoredGroupSignals(mkPod("p", ownedByJob("train"), annotation(JobGangAnnotation, "no"))); len(got) != 1 || !strings.Contains(got[0], `"false" out`) {
		t.Errorf("job-gang=no: %v", got)
	}
}
