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
	"fmt"
	"slices"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
	st "github.com/batch-scheduler/batch-scheduler/pkg/testing"
)

// matchCorpus are pods with every signal of the built-in dialects, alone
// and together.
func matchCorpus() map[string]*v1.Pod {
	name := "native"
	native := st.MakePod().Name("native").Obj()
	native.Spec.SchedulingGroup = &v1.PodSchedulingGroup{PodGroupName: &name}
	both := native.DeepCopy()
	both.Labels = map[string]string{framework.CoschedulingPodGroupLabel: "other"}
	return map[string]*v1.Pod{
		"plain":        st.MakePod().Name("p").Obj(),
		"native":       native,
		"native+label": both,
		"coscheduling": st.MakePod().Name("p").Label(framework.CoschedulingPodGroupLabel, "g").Obj(),
		"volcano both annotations": st.MakePod().Name("p").Annotation(framework.VolcanoGroupNameAnnotation, "v").
			Annotation(framework.GroupNameAnnotation, "w").Obj(),
		"group annotation": st.MakePod().Name("p").Group("g").Obj(),
		"job opt-in":       st.MakePod().Name("p").Annotation(framework.JobGangAnnotation, "true").ControlledBy("batch/v1", "Job", "j", "u").Obj(),
		"job opt-in without a Job": st.MakePod().Name("p").Annotation(framework.JobGangAnnotation, "true").
			ControlledBy("apps/v1", "ReplicaSet", "r", "u").Obj(),
		"job opt-out": st.MakePod().Name("p").Annotation(framework.JobGangAnnotation, "false").ControlledBy("batch/v1", "Job", "j", "u").Obj(),
		"job":         st.MakePod().Name("p").ControlledBy("batch/v1", "Job", "j", "u").Obj(),
		"jobset": st.MakePod().Name("p").Label(framework.JobSetNameLabel, "js").
			ControlledBy("batch/v1", "Job", "js-workers-0", "u").Obj(),
		"lws": st.MakePod().Name("p").Label(framework.LeaderWorkerSetNameLabel, "l").
			Label(framework.LeaderWorkerSetGroupIndexLabel, "2").ControlledBy("apps/v1", "StatefulSet", "l-2", "u").Obj(),
		"lws without index": st.MakePod().Name("p").Label(framework.LeaderWorkerSetNameLabel, "l").Obj(),
		"mpi launcher": st.MakePod().Name("p").Label(framework.KubeflowJobNameLabel, "m").
			Label(framework.KubeflowOperatorNameLabel, framework.MPIOperatorName).ControlledBy("batch/v1", "Job", "m-launcher", "u").Obj(),
		"mpi worker":         st.MakePod().Name("p").ControlledBy("kubeflow.org/v2beta1", "MPIJob", "m", "u").Obj(),
		"pytorch":            st.MakePod().Name("p").ControlledBy("kubeflow.org/v1", "PyTorchJob", "pt", "u").Obj(),
		"raycluster":         st.MakePod().Name("p").ControlledBy("ray.io/v1", "RayCluster", "rc", "u").Obj(),
		"wrong group":        st.MakePod().Name("p").ControlledBy("example.com/v1", "RayCluster", "rc", "u").Obj(),
		"explicit and owner": st.MakePod().Name("p").Group("g").ControlledBy("ray.io/v1", "RayCluster", "rc", "u").Obj(),
	}
}

// renderRef renders a ref for TestBuiltinMatching.
func renderRef(r framework.GroupRef) string {
	s := fmt.Sprintf("%s %s", r.Kind, r.Name)
	if r.Object != r.Name {
		s += " object " + r.Object
	}
	if r.Inferred {
		s += " inferred"
	}
	return s + " via " + r.Via
}

// The built-in table matches every pod of the corpus to the groups it
// names explicitly (in order of precedence), to the gang inferred from its
// owner for each set of owner kinds (none, all, all but JobSet, all but
// MPIJob, Job only), and resolves it to the job the cache files it under.
// These are the only matching rules of the scheduler; this golden table
// pins them.
func TestBuiltinMatching(t *testing.T) {
	all := framework.AllOwnerKinds()
	subsets := [5]framework.OwnerKinds{0, all, all.Without(framework.GroupKindJobSet), all.Without(framework.GroupKindMPIJob),
		framework.OwnerKinds(0).With(framework.GroupKindJob)}
	type want struct {
		explicit []string
		inferred [5]string
		jobs     [5]string
	}
	wants := map[string]want{
		"coscheduling": {explicit: []string{"PodGroup.scheduling.x-k8s.io g via label scheduling.x-k8s.io/pod-group"},
			inferred: [5]string{"", "", "", "", ""},
			jobs:     [5]string{"default/g", "default/g", "default/g", "default/g", "default/g"}},
		"explicit and owner": {explicit: []string{"PodGroup.scheduling.volcano.sh g via annotation scheduling.k8s.io/group-name"},
			inferred: [5]string{"", "RayCluster.ray.io rc inferred via controller RayCluster", "RayCluster.ray.io rc inferred via controller RayCluster", "RayCluster.ray.io rc inferred via controller RayCluster", ""},
			jobs:     [5]string{"default/g", "default/g", "default/g", "default/g", "default/g"}},
		"group annotation": {explicit: []string{"PodGroup.scheduling.volcano.sh g via annotation scheduling.k8s.io/group-name"},
			inferred: [5]string{"", "", "", "", ""},
			jobs:     [5]string{"default/g", "default/g", "default/g", "default/g", "default/g"}},
		"job": {explicit: []string{},
			inferred: [5]string{"", "Job.batch j inferred via controller Job", "Job.batch j inferred via controller Job", "Job.batch j inferred via controller Job", "Job.batch j inferred via controller Job"},
			jobs:     [5]string{"default/pod:p", "default/Job.batch:j", "default/Job.batch:j", "default/Job.batch:j", "default/Job.batch:j"}},
		"job opt-in": {explicit: []string{"Job.batch j via annotation batch-scheduler.io/job-gang with controller Job"},
			inferred: [5]string{"", "Job.batch j inferred via controller Job", "Job.batch j inferred via controller Job", "Job.batch j inferred via controller Job", "Job.batch j inferred via controller Job"},
			jobs:     [5]string{"default/j", "default/j", "default/j", "default/j", "default/j"}},
		"job opt-in without a Job": {explicit: []string{},
			inferred: [5]string{"", "", "", "", ""},
			jobs:     [5]string{"default/pod:p", "default/pod:p", "default/pod:p", "default/pod:p", "default/pod:p"}},
		"job opt-out": {explicit: []string{},
			inferred: [5]string{"", "", "", "", ""},
			jobs:     [5]string{"default/pod:p", "default/pod:p", "default/pod:p", "default/pod:p", "default/pod:p"}},
		"jobset": {explicit: []string{},
			inferred: [5]string{"", "JobSet.jobset.x-k8s.io js inferred via label jobset.sigs.k8s.io/jobset-name", "Job.batch js-workers-0 inferred via controller Job", "JobSet.jobset.x-k8s.io js inferred via label jobset.sigs.k8s.io/jobset-name", "Job.batch js-workers-0 inferred via controller Job"},
			jobs:     [5]string{"default/pod:p", "default/JobSet.jobset.x-k8s.io:js", "default/Job.batch:js-workers-0", "default/JobSet.jobset.x-k8s.io:js", "default/Job.batch:js-workers-0"}},
		"lws": {explicit: []string{},
			inferred: [5]string{"", "LeaderWorkerSet.leaderworkerset.x-k8s.io l inferred via labels leaderworkerset.sigs.k8s.io/name and leaderworkerset.sigs.k8s.io/group-index of LeaderWorkerSet", "LeaderWorkerSet.leaderworkerset.x-k8s.io l inferred via labels leaderworkerset.sigs.k8s.io/name and leaderworkerset.sigs.k8s.io/group-index of LeaderWorkerSet", "LeaderWorkerSet.leaderworkerset.x-k8s.io l inferred via labels leaderworkerset.sigs.k8s.io/name and leaderworkerset.sigs.k8s.io/group-index of LeaderWorkerSet", ""},
			jobs:     [5]string{"default/pod:p", "default/LeaderWorkerSet.leaderworkerset.x-k8s.io:l", "default/LeaderWorkerSet.leaderworkerset.x-k8s.io:l", "default/LeaderWorkerSet.leaderworkerset.x-k8s.io:l", "default/pod:p"}},
		"lws without index": {explicit: []string{},
			inferred: [5]string{"", "", "", "", ""},
			jobs:     [5]string{"default/pod:p", "default/pod:p", "default/pod:p", "default/pod:p", "default/pod:p"}},
		"mpi launcher": {explicit: []string{},
			inferred: [5]string{"", "MPIJob.kubeflow.org m inferred via label training.kubeflow.org/job-name of MPIJob", "MPIJob.kubeflow.org m inferred via label training.kubeflow.org/job-name of MPIJob", "Job.batch m-launcher inferred via controller Job", "Job.batch m-launcher inferred via controller Job"},
			jobs:     [5]string{"default/pod:p", "default/MPIJob.kubeflow.org:m", "default/MPIJob.kubeflow.org:m", "default/Job.batch:m-launcher", "default/Job.batch:m-launcher"}},
		"mpi worker": {explicit: []string{},
			inferred: [5]string{"", "MPIJob.kubeflow.org m inferred via controller MPIJob", "MPIJob.kubeflow.org m inferred via controller MPIJob", "", ""},
			jobs:     [5]string{"default/pod:p", "default/MPIJob.kubeflow.org:m", "default/MPIJob.kubeflow.org:m", "default/pod:p", "default/pod:p"}},
		"native": {explicit: []string{"PodGroup.scheduling.k8s.io native via spec.schedulingGroup.podGroupName"},
			inferred: [5]string{"", "", "", "", ""},
			jobs:     [5]string{"default/native", "default/native", "default/native", "default/native", "default/native"}},
		"native+label": {explicit: []string{"PodGroup.scheduling.k8s.io native via spec.schedulingGroup.podGroupName", "PodGroup.scheduling.x-k8s.io other via label scheduling.x-k8s.io/pod-group"},
			inferred: [5]string{"", "", "", "", ""},
			jobs:     [5]string{"default/native", "default/native", "default/native", "default/native", "default/native"}},
		"plain": {explicit: []string{},
			inferred: [5]string{"", "", "", "", ""},
			jobs:     [5]string{"default/pod:p", "default/pod:p", "default/pod:p", "default/pod:p", "default/pod:p"}},
		"pytorch": {explicit: []string{},
			inferred: [5]string{"", "PyTorchJob.kubeflow.org pt inferred via controller PyTorchJob", "PyTorchJob.kubeflow.org pt inferred via controller PyTorchJob", "PyTorchJob.kubeflow.org pt inferred via controller PyTorchJob", ""},
			jobs:     [5]string{"default/pod:p", "default/PyTorchJob.kubeflow.org:pt", "default/PyTorchJob.kubeflow.org:pt", "default/PyTorchJob.kubeflow.org:pt", "default/pod:p"}},
		"raycluster": {explicit: []string{},
			inferred: [5]string{"", "RayCluster.ray.io rc inferred via controller RayCluster", "RayCluster.ray.io rc inferred via controller RayCluster", "RayCluster.ray.io rc inferred via controller RayCluster", ""},
			jobs:     [5]string{"default/pod:p", "default/RayCluster.ray.io:rc", "default/RayCluster.ray.io:rc", "default/RayCluster.ray.io:rc", "default/pod:p"}},
		"volcano both annotations": {explicit: []string{"PodGroup.scheduling.volcano.sh v via annotation scheduling.volcano.sh/group-name", "PodGroup.scheduling.volcano.sh w via annotation scheduling.k8s.io/group-name"},
			inferred: [5]string{"", "", "", "", ""},
			jobs:     [5]string{"default/v", "default/v", "default/v", "default/v", "default/v"}},
		"wrong group": {explicit: []string{},
			inferred: [5]string{"", "", "", "", ""},
			jobs:     [5]string{"default/pod:p", "default/pod:p", "default/pod:p", "default/pod:p", "default/pod:p"}},
	}
	table := Builtin()
	corpus := matchCorpus()
	if len(corpus) != len(wants) {
		t.Fatalf("%d pods in the corpus, %d expected results", len(corpus), len(wants))
	}
	for name, pod := range corpus {
		t.Run(name, func(t *testing.T) {
			w, ok := wants[name]
			if !ok {
				t.Fatal("no expected result")
			}
			var explicit []string
			for _, r := range table.Explicit(pod) {
				explicit = append(explicit, renderRef(r))
			}
			if !slices.Equal(explicit, w.explicit) {
				t.Errorf("explicit refs %q, want %q", explicit, w.explicit)
			}
			for i, owners := range subsets {
				ref, ok := table.Inferred(pod, owners)
				got := ""
				if ok {
					got = renderRef(ref)
				}
				if got != w.inferred[i] {
					t.Errorf("owners %s: inferred %q, want %q", owners, got, w.inferred[i])
				}
				r := framework.GroupResolver{Matcher: table, Owners: owners}
				if got := r.JobID(pod).String(); got != w.jobs[i] {
					t.Errorf("owners %s: job %s, want %s", owners, got, w.jobs[i])
				}
			}
		})
	}
}

// Inferred gangs are tried in the order of framework.OwnerKinds: a
// JobSet's pod, whose controller is a Job, is in the JobSet's gang.
func TestInferredOrder(t *testing.T) {
	pod := matchCorpus()["jobset"]
	ref, ok := Builtin().Inferred(pod, framework.AllOwnerKinds())
	if !ok || ref.Kind != framework.GroupKindJobSet || ref.Name != "js" {
		t.Fatalf("ref %+v %v, want the JobSet js", ref, ok)
	}
	ref, ok = Builtin().Inferred(pod, framework.AllOwnerKinds().Without(framework.GroupKindJobSet))
	if !ok || ref.Kind != framework.GroupKindJob || ref.Name != "js-workers-0" {
		t.Fatalf("ref %+v %v without JobSets, want the Job js-workers-0", ref, ok)
	}
}

func TestValidate(t *testing.T) {
	if err := Builtin().Validate(); err != nil {
		t.Fatalf("the built-in table: %v", err)
	}
	policy := func(*unstructured.Unstructured, bool) *framework.GroupPolicy { return nil }
	match := func(*v1.Pod) []framework.GroupRef { return nil }
	res := []Resource{{GVR: schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "gangs"}}}
	tests := []struct {
		name string
		d    Dialect
		want string
	}{
		{name: "no kind", d: Dialect{Resources: res, Match: match, Policy: policy}, want: "has no kind"},
		{name: "kind twice", d: Dialect{Kind: framework.GroupKindVolcano, Resources: res, Match: match, Policy: policy}, want: "listed twice"},
		{name: "no match", d: Dialect{Kind: "Gang.example.com", Resources: res, Policy: policy}, want: "neither Match nor Infer"},
		{name: "no policy", d: Dialect{Kind: "Gang.example.com", Resources: res, Match: match}, want: "no Policy"},
		{name: "no resources", d: Dialect{Kind: "Gang.example.com", Match: match, Policy: policy}, want: "no Resources"},
		{name: "resource twice", d: Dialect{Kind: "Gang.example.com", Match: match, Policy: policy,
			Resources: []Resource{{GVR: gvr("batch", "v1", "jobs")}}}, want: "already Job.batch's"},
		{name: "inferred from an unknown owner kind", d: Dialect{Kind: "Gang.example.com", Resources: res, Policy: policy, OwnerName: "Gang",
			Infer: func(*v1.Pod) (framework.GroupRef, bool) { return framework.GroupRef{}, false }}, want: "not one framework.OwnerKinds knows"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Builtin().With(tt.d).Validate()
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want %q", err, tt.want)
			}
		})
	}
}

// What is watched follows the configuration: the explicit dialects with
// gang dialects on, the owner kinds inferred; the objects whose status is
// written are kept whole, the others slimmed.
func TestWatches(t *testing.T) {
	names := func(ws []Watch) string {
		var out []string
		for _, w := range ws {
			n := w.GVR.Resource + "." + w.GVR.Group
			if w.Transform != nil {
				n += "(slim)"
			}
			out = append(out, n)
		}
		return strings.Join(out, " ")
	}
	table := Builtin()
	if got, want := names(table.Watches(true, 0)),
		"podgroups.scheduling.k8s.io podgroups.scheduling.k8s.io compositepodgroups.scheduling.k8s.io podgroups.scheduling.x-k8s.io podgroups.scheduling.volcano.sh podgroups.scheduling.run.ai jobs.batch(slim)"; got != want {
		t.Errorf("explicit only:\n got %s\nwant %s", got, want)
	}
	if got, want := names(table.Watches(false, framework.OwnerKinds(0).With(framework.GroupKindRayCluster))), "rayclusters.ray.io(slim)"; got != want {
		t.Errorf("RayClusters only: got %s, want %s", got, want)
	}
	rules := table.StatusRules()
	if len(rules) != 5 || rules[framework.GroupKindNative] == nil || rules[framework.GroupKindKAI] == nil ||
		rules[framework.GroupKindComposite] == nil || rules[framework.GroupKindJob] != nil {
		t.Errorf("status rules of %d kinds, want the four PodGroups' and the CompositePodGroup's", len(rules))
	}
	// A Job's policy says whether the Job is inferred from.
	job := object("Job", map[string]any{"parallelism": int64(2)}, nil)
	for _, w := range table.Watches(true, 0) {
		if w.Kind == framework.GroupKindJob && w.Policy(job) != nil {
			t.Error("a Job that does not opt in has a policy while Jobs are not inferred from")
		}
	}
	for _, w := range table.Watches(false, framework.AllOwnerKinds()) {
		if w.Kind == framework.GroupKindJob && w.Policy(job) == nil {
			t.Error("a Job has no policy while Jobs are inferred from")
		}
	}
}

func TestOwnerKinds(t *testing.T) {
	table := Builtin()
	kinds, err := table.OwnerKinds(map[string]bool{"Job": false, "RayCluster": true})
	if err != nil || kinds != framework.AllOwnerKinds().Without(framework.GroupKindJob) {
		t.Fatalf("kinds %v, %v", kinds, err)
	}
	if _, err := table.OwnerKinds(map[string]bool{"Rays": true}); err == nil ||
		!strings.Contains(err.Error(), `unknown kind "Rays" (known: Job, JobSet, LeaderWorkerSet, MPIJob, PyTorchJob, RayCluster)`) {
		t.Fatalf("unknown kind: %v", err)
	}
}
