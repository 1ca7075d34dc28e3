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
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
	"github.com/batch-scheduler/batch-scheduler/pkg/podgroups"
)

// builtin is the table of the dialects the scheduler reads; Builtin
// hands out copies. See docs/scheduling.md, "Gang dialects" and "Gangs
// inferred from the owner".
var builtin = Table{
	{
		Kind: framework.GroupKindNative,
		Resources: []Resource{
			{GVR: gvr("scheduling.k8s.io", "v1beta1", "podgroups"), FirstServedOnly: true},
			{GVR: gvr("scheduling.k8s.io", "v1alpha3", "podgroups"), FirstServedOnly: true},
		},
		Match:  matchNative,
		Policy: always(nativePolicy),
		Status: podgroups.NativeCondition,
	},
	{
		Kind:      framework.GroupKindComposite,
		Resources: []Resource{{GVR: gvr("scheduling.k8s.io", "v1alpha3", "compositepodgroups")}},
		Composite: true,
		Policy:    always(compositePolicy),
		Status:    podgroups.CompositeCondition,
	},
	{
		Kind:      framework.GroupKindCoscheduling,
		Resources: []Resource{{GVR: gvr("scheduling.x-k8s.io", "v1alpha1", "podgroups")}},
		Match:     matchLabel(framework.GroupKindCoscheduling, framework.CoschedulingPodGroupLabel),
		Policy:    always(minMemberPolicy(framework.GroupKindCoscheduling)),
		Status:    podgroups.CoschedulingPhase,
	},
	{
		Kind:      framework.GroupKindVolcano,
		Resources: []Resource{{GVR: gvr("scheduling.volcano.sh", "v1beta1", "podgroups")}},
		Match:     matchVolcano,
		Policy:    always(minMemberPolicy(framework.GroupKindVolcano)),
		Status:    podgroups.VolcanoStatus,
	},
	{
		Kind:      framework.GroupKindKAI,
		Resources: []Resource{{GVR: gvr("scheduling.run.ai", "v2alpha2", "podgroups")}},
		Match:     matchAnnotation(framework.GroupKindKAI, framework.KAIPodGroupAnnotation),
		Policy:    always(kaiPolicy),
		Status:    podgroups.KAIStatus,
	},
	{
		Kind:      framework.GroupKindJob,
		OwnerName: "Job",
		Resources: []Resource{{GVR: gvr("batch", "v1", "jobs")}},
		Match:     matchJobOptIn,
		Infer:     controlledBy(framework.GroupKindJob, "batch", "Job"),
		Policy: func(u *unstructured.Unstructured, inferred bool) *framework.GroupPolicy {
			return jobPolicy(inferred)(u)
		},
		Fields:  slices.Concat(jobFields, jobRuntimeFields),
		Runtime: JobRuntimeBound,
	},
	{
		Kind:      framework.GroupKindRayCluster,
		OwnerName: "RayCluster",
		Resources: []Resource{{GVR: gvr("ray.io", "v1", "rayclusters")}},
		Infer:     controlledBy(framework.GroupKindRayCluster, "ray.io", "RayCluster"),
		Policy:    always(rayClusterPolicy),
		Fields:    rayClusterFields,
	},
	{
		Kind:      framework.GroupKindJobSet,
		OwnerName: "JobSet",
		Resources: []Resource{{GVR: gvr("jobset.x-k8s.io", "v1alpha2", "jobsets")}},
		Infer:     inferJobSet,
		Policy:    always(jobSetPolicy),
		Fields:    jobSetFields,
	},
	{
		Kind:      framework.GroupKindLeaderWorkerSet,
		OwnerName: "LeaderWorkerSet",
		Resources: []Resource{{GVR: gvr("leaderworkerset.x-k8s.io", "v1", "leaderworkersets")}},
		Infer:     inferLeaderWorkerSet,
		Policy:    always(leaderWorkerSetPolicy),
		Fields:    leaderWorkerSetFields,
	},
	{
		Kind:      framework.GroupKindMPIJob,
		OwnerName: "MPIJob",
		Resources: []Resource{{GVR: gvr("kubeflow.org", "v2beta1", "mpijobs")}},
		Infer:     inferMPIJob,
		Policy:    always(mpiJobPolicy),
		Fields:    mpiJobFields,
	},
	{
		Kind:      framework.GroupKindPyTorchJob,
		OwnerName: "PyTorchJob",
		Resources: []Resource{{GVR: gvr("kubeflow.org", "v1", "pytorchjobs")}},
		Infer:     controlledBy(framework.GroupKindPyTorchJob, "kubeflow.org", "PyTorchJob"),
		Policy:    always(pyTorchJobPolicy),
		Fields:    pyTorchJobFields,
	},
}

func gvr(group, version, resource string) schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: group, Version: version, Resource: resource}
}

// always adapts a policy that does not depend on whether gangs are
// inferred from its kind.
func always(policy func(u *unstructured.Unstructured) *framework.GroupPolicy) func(*unstructured.Unstructured, bool) *framework.GroupPolicy {
	return func(u *unstructured.Unstructured, _ bool) *framework.GroupPolicy { return policy(u) }
}

// Resolver returns a resolver over the built-in table that infers no
// gang from owners: a pod is in the group it names explicitly (the first
// in precedence when it names several) or on its own. It is for callers
// that have no table of their own; set Owners on the result to infer
// gangs too. Its matcher is the built-in table itself, shared and never
// changed. The scheduler's cache resolves by the table its event handler
// gives it instead.
func Resolver() framework.GroupResolver {
	return framework.GroupResolver{Matcher: builtin}
}

// Matching pods to the built-in dialects: the only copy of these rules.
// The framework names the labels and annotations but reads none of them;
// it resolves pods by a GroupMatcher, a Table.

// explicitRef is the ref of a group a pod names explicitly.
func explicitRef(kind framework.GroupKind, name, via string) framework.GroupRef {
	return framework.GroupRef{Kind: kind, Name: name, Object: name, Via: via}
}

// matchNative: pod.spec.schedulingGroup.podGroupName.
func matchNative(pod *v1.Pod) []framework.GroupRef {
	if sg := pod.Spec.SchedulingGroup; sg != nil && sg.PodGroupName != nil && *sg.PodGroupName != "" {
		return []framework.GroupRef{explicitRef(framework.GroupKindNative, *sg.PodGroupName, "spec.schedulingGroup.podGroupName")}
	}
	return nil
}

// matchLabel matches the pods whose label key names the group.
func matchLabel(kind framework.GroupKind, key string) func(*v1.Pod) []framework.GroupRef {
	return func(pod *v1.Pod) []framework.GroupRef {
		if v := pod.Labels[key]; v != "" {
			return []framework.GroupRef{explicitRef(kind, v, "label "+key)}
		}
		return nil
	}
}

// matchAnnotation matches the pods whose annotation key names the group.
func matchAnnotation(kind framework.GroupKind, key string) func(*v1.Pod) []framework.GroupRef {
	return func(pod *v1.Pod) []framework.GroupRef {
		if v := pod.Annotations[key]; v != "" {
			return []framework.GroupRef{explicitRef(kind, v, "annotation "+key)}
		}
		return nil
	}
}

// matchVolcano: the annotation VolcanoGroupNameAnnotation, then
// GroupNameAnnotation (the project's own, which Volcano reads too).
func matchVolcano(pod *v1.Pod) []framework.GroupRef {
	var refs []framework.GroupRef
	for _, key := range []string{framework.VolcanoGroupNameAnnotation, framework.GroupNameAnnotation} {
		if v := pod.Annotations[key]; v != "" {
			refs = append(refs, explicitRef(framework.GroupKindVolcano, v, "annotation "+key))
		}
	}
	return refs
}

// matchJobOptIn: a pod with JobGangAnnotation "true" whose controller is
// a batch Job is in the Job's gang.
func matchJobOptIn(pod *v1.Pod) []framework.GroupRef {
	if pod.Annotations[framework.JobGangAnnotation] != "true" {
		return nil
	}
	if owner := metav1.GetControllerOfNoCopy(pod); owner != nil && owner.Kind == "Job" && strings.HasPrefix(owner.APIVersion, "batch/") {
		return []framework.GroupRef{explicitRef(framework.GroupKindJob, owner.Name,
			"annotation "+framework.JobGangAnnotation+" with controller Job")}
	}
	return nil
}

// inferredRef is the ref of a gang inferred from a pod's owner.
func inferredRef(kind framework.GroupKind, name, object, via string) (framework.GroupRef, bool) {
	return framework.GroupRef{Kind: kind, Name: name, Object: object, Inferred: true, Via: via}, true
}

// apiGroup returns the group of an apiVersion ("" for the core group).
func apiGroup(apiVersion string) string {
	if i := strings.IndexByte(apiVersion, '/'); i >= 0 {
		return apiVersion[:i]
	}
	return ""
}

// isController reports whether owner (pod's controller, or nil) is an
// object of kind in group with a name.
func isController(owner *metav1.OwnerReference, group, kind string) bool {
	return owner != nil && owner.Kind == kind && owner.Name != "" && apiGroup(owner.APIVersion) == group
}

// controlledBy infers the gang of the pods whose controller is an object
// of kind in group; a batch Job's pod whose JobGangAnnotation is "false"
// opts out.
func controlledBy(gk framework.GroupKind, group, kind string) func(*v1.Pod) (framework.GroupRef, bool) {
	return func(pod *v1.Pod) (framework.GroupRef, bool) {
		owner := metav1.GetControllerOfNoCopy(pod)
		if !isController(owner, group, kind) {
			return framework.GroupRef{}, false
		}
		if gk == framework.GroupKindJob && pod.Annotations[framework.JobGangAnnotation] == "false" {
			return framework.GroupRef{}, false
		}
		return inferredRef(gk, owner.Name, owner.Name, "controller "+kind)
	}
}

// inferJobSet: the label JobSetNameLabel names the JobSet.
func inferJobSet(pod *v1.Pod) (framework.GroupRef, bool) {
	if v := pod.Labels[framework.JobSetNameLabel]; v != "" {
		return inferredRef(framework.GroupKindJobSet, v, v, "label "+framework.JobSetNameLabel)
	}
	return framework.GroupRef{}, false
}

// inferLeaderWorkerSet: the labels LeaderWorkerSetNameLabel and
// LeaderWorkerSetGroupIndexLabel; the gang is the LeaderWorkerSet, whose
// groups (by the group index) are its sub-gangs (see
// leaderWorkerSetPolicy).
func inferLeaderWorkerSet(pod *v1.Pod) (framework.GroupRef, bool) {
	name, index := pod.Labels[framework.LeaderWorkerSetNameLabel], pod.Labels[framework.LeaderWorkerSetGroupIndexLabel]
	if name == "" || index == "" {
		return framework.GroupRef{}, false
	}
	return inferredRef(framework.GroupKindLeaderWorkerSet, name, name,
		"labels "+framework.LeaderWorkerSetNameLabel+" and "+framework.LeaderWorkerSetGroupIndexLabel+" of LeaderWorkerSet")
}

// inferMPIJob: the labels KubeflowOperatorNameLabel=MPIOperatorName and
// KubeflowJobNameLabel (the launcher's controller is a Job), or a
// kubeflow.org MPIJob controller.
func inferMPIJob(pod *v1.Pod) (framework.GroupRef, bool) {
	if v := pod.Labels[framework.KubeflowJobNameLabel]; v != "" && pod.Labels[framework.KubeflowOperatorNameLabel] == framework.MPIOperatorName {
		return inferredRef(framework.GroupKindMPIJob, v, v, "label "+framework.KubeflowJobNameLabel+" of MPIJob")
	}
	return controlledBy(framework.GroupKindMPIJob, "kubeflow.org", "MPIJob")(pod)
}
