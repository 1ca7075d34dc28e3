package framework

import (
	"iter"
	"strings"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Gangs inferred from a pod's owner: a pod that names no group in any
// dialect (no explicit signal, see PodGroupRefs) but belongs to a
// workload whose kind says how many of its pods must start together is
// put in that workload's gang. Which kinds are inferred is configured
// (OwnerKinds); see docs/scheduling.md, "Gangs inferred from the owner".

// The kinds of owner objects a gang can be inferred from. GroupKindJob,
// the batch/v1 Job, is both an explicit dialect (pods opt in with
// JobGangAnnotation) and an owner kind.
const (
	// GroupKindRayCluster is a KubeRay RayCluster (ray.io), the
	// controller of its head and worker pods.
	GroupKindRayCluster GroupKind = "RayCluster.ray.io"
	// GroupKindJobSet is a JobSet (jobset.x-k8s.io), named by the label
	// JobSetNameLabel of the pods of its Jobs.
	GroupKindJobSet GroupKind = "JobSet.jobset.x-k8s.io"
	// GroupKindLeaderWorkerSet is a LeaderWorkerSet
	// (leaderworkerset.x-k8s.io): each of its groups, named by the labels
	// LeaderWorkerSetNameLabel and LeaderWorkerSetGroupIndexLabel, is a
	// gang of its own.
	GroupKindLeaderWorkerSet GroupKind = "LeaderWorkerSet.leaderworkerset.x-k8s.io"
	// GroupKindMPIJob is a Kubeflow MPIJob (kubeflow.org), the controller
	// of its worker pods and, through a Job, of its launcher.
	GroupKindMPIJob GroupKind = "MPIJob.kubeflow.org"
	// GroupKindPyTorchJob is a Kubeflow PyTorchJob (kubeflow.org), the
	// controller of its pods.
	GroupKindPyTorchJob GroupKind = "PyTorchJob.kubeflow.org"
)

// Pod labels the owner kinds set, read to infer a gang.
const (
	// JobSetNameLabel names the JobSet of a pod.
	JobSetNameLabel = "jobset.sigs.k8s.io/jobset-name"
	// LeaderWorkerSetNameLabel names the LeaderWorkerSet of a pod.
	LeaderWorkerSetNameLabel = "leaderworkerset.sigs.k8s.io/name"
	// LeaderWorkerSetGroupIndexLabel names the group of a LeaderWorkerSet
	// pod.
	LeaderWorkerSetGroupIndexLabel = "leaderworkerset.sigs.k8s.io/group-index"
	// KubeflowJobNameLabel names the Kubeflow job of a pod.
	KubeflowJobNameLabel = "training.kubeflow.org/job-name"
	// KubeflowOperatorNameLabel names the operator that made a pod; the
	// MPI operator's value is MPIOperatorName.
	KubeflowOperatorNameLabel = "training.kubeflow.org/operator-name"
	// MPIOperatorName is the value of KubeflowOperatorNameLabel on the
	// pods of an MPIJob, its launcher's included.
	MPIOperatorName = "mpi-operator"
)

// ownerKindOrder lists the owner kinds in the order InferredGroupRef
// tries them: the kinds read from labels first, because their pods'
// controller is an intermediate object (a Job of a JobSet or of an
// MPIJob's launcher, a StatefulSet of a LeaderWorkerSet), then the kinds
// that control their pods directly.
var ownerKindOrder = []GroupKind{GroupKindJobSet, GroupKindLeaderWorkerSet, GroupKindMPIJob,
	GroupKindPyTorchJob, GroupKindRayCluster, GroupKindJob}

// OwnerKinds is a set of owner kinds whose pods form gangs inferred from
// their owner. The zero value is empty: no inference, only explicit
// signals. It is a small comparable value, safe to copy.
type OwnerKinds uint8

// AllOwnerKinds returns the set of every owner kind.
func AllOwnerKinds() OwnerKinds {
	var s OwnerKinds
	for _, k := range ownerKindOrder {
		s = s.With(k)
	}
	return s
}

// ownerBit returns the bit of kind, 0 for a kind that is not an owner
// kind.
func ownerBit(kind GroupKind) OwnerKinds {
	for i, k := range ownerKindOrder {
		if k == kind {
			return 1 << i
		}
	}
	return 0
}

// IsOwnerKind reports whether kind is a kind gangs can be inferred from.
func IsOwnerKind(kind GroupKind) bool { return ownerBit(kind) != 0 }

// With returns s with kind added; a kind that is not an owner kind adds
// nothing.
func (s OwnerKinds) With(kind GroupKind) OwnerKinds { return s | ownerBit(kind) }

// Without returns s without kind.
func (s OwnerKinds) Without(kind GroupKind) OwnerKinds { return s &^ ownerBit(kind) }

// Has reports whether kind is in s.
func (s OwnerKinds) Has(kind GroupKind) bool {
	b := ownerBit(kind)
	return b != 0 && s&b != 0
}

// Kinds lists the kinds in s in the order they are tried.
func (s OwnerKinds) Kinds() []GroupKind {
	var out []GroupKind
	for _, k := range ownerKindOrder {
		if s.Has(k) {
			out = append(out, k)
		}
	}
	return out
}

// All yields the kinds in s in the order they are tried, as Kinds lists
// them, without allocating.
func (s OwnerKinds) All() iter.Seq[GroupKind] {
	return func(yield func(GroupKind) bool) {
		for _, k := range ownerKindOrder {
			if s.Has(k) && !yield(k) {
				return
			}
		}
	}
}

// String renders s as its kinds, comma separated.
func (s OwnerKinds) String() string {
	names := make([]string, 0, len(ownerKindOrder))
	for _, k := range s.Kinds() {
		names = append(names, string(k))
	}
	return strings.Join(names, ",")
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

// InferredGroupRef returns the gang pod's owner defines, of the first of
// the kinds in s that applies (see ownerKindOrder):
//
//   - JobSet: the label JobSetNameLabel names it;
//   - LeaderWorkerSet: the labels LeaderWorkerSetNameLabel and
//     LeaderWorkerSetGroupIndexLabel; the gang is the group,
//     "<name>-<index>";
//   - MPIJob: the labels KubeflowOperatorNameLabel=MPIOperatorName and
//     KubeflowJobNameLabel (its launcher's controller is a Job), or a
//     kubeflow.org MPIJob controller;
//   - PyTorchJob, RayCluster, Job: a controller owner reference to a
//     kubeflow.org PyTorchJob, a ray.io RayCluster or a batch Job; a
//     Job's pod whose JobGangAnnotation is "false" opts out.
//
// It does not look at the explicit signals: ResolveGroup does, and they
// win. The ref's Object is the owner object's name, whose policy
// defines the quorum.
func InferredGroupRef(pod *v1.Pod, s OwnerKinds) (GroupRef, bool) {
	if s == 0 || pod == nil {
		return GroupRef{}, false
	}
	ref := func(kind GroupKind, name, object, via string) (GroupRef, bool) {
		return GroupRef{Kind: kind, Name: name, Object: object, Inferred: true, Via: via}, true
	}
	if s.Has(GroupKindJobSet) {
		if v := pod.Labels[JobSetNameLabel]; v != "" {
			return ref(GroupKindJobSet, v, v, "label "+JobSetNameLabel)
		}
	}
	if s.Has(GroupKindLeaderWorkerSet) {
		name, index := pod.Labels[LeaderWorkerSetNameLabel], pod.Labels[LeaderWorkerSetGroupIndexLabel]
		if name != "" && index != "" {
			return ref(GroupKindLeaderWorkerSet, name+"-"+index, name,
				"labels "+LeaderWorkerSetNameLabel+" and "+LeaderWorkerSetGroupIndexLabel+"="+index+" of LeaderWorkerSet")
		}
	}
	if s.Has(GroupKindMPIJob) {
		if v := pod.Labels[KubeflowJobNameLabel]; v != "" && pod.Labels[KubeflowOperatorNameLabel] == MPIOperatorName {
			return ref(GroupKindMPIJob, v, v, "label "+KubeflowJobNameLabel+" of MPIJob")
		}
	}
	owner := metav1.GetControllerOfNoCopy(pod)
	switch {
	case owner == nil:
	case s.Has(GroupKindMPIJob) && isController(owner, "kubeflow.org", "MPIJob"):
		return ref(GroupKindMPIJob, owner.Name, owner.Name, "controller MPIJob")
	case s.Has(GroupKindPyTorchJob) && isController(owner, "kubeflow.org", "PyTorchJob"):
		return ref(GroupKindPyTorchJob, owner.Name, owner.Name, "controller PyTorchJob")
	case s.Has(GroupKindRayCluster) && isController(owner, "ray.io", "RayCluster"):
		return ref(GroupKindRayCluster, owner.Name, owner.Name, "controller RayCluster")
	case s.Has(GroupKindJob) && isController(owner, "batch", "Job") && pod.Annotations[JobGangAnnotation] != "false":
		return ref(GroupKindJob, owner.Name, owner.Name, "controller Job")
	}
	return GroupRef{}, false
}

// Membership is the group a pod belongs to, as GroupResolver.Resolve
// decided: Ref is the group (its Kind is empty for a pod scheduled on its
// own), Conflict says that the pod's explicit signals name different
// groups.
type Membership struct {
	// Ref is the group; its Kind is empty for a pod on its own.
	Ref GroupRef
	// Conflict, when set, says that the pod's explicit signals name
	// different groups (see TaskInfo.GroupConflict).
	Conflict string
}

// Gang reports whether the pod is in a gang.
func (m Membership) Gang() bool { return m.Ref.Kind != "" }

// JobID returns the job of a pod of namespace with membership m; name is
// the pod's name, the job of a pod scheduled on its own.
func (m Membership) JobID(namespace, name string) JobID {
	if !m.Gang() {
		return JobID{Namespace: namespace, Name: name}
	}
	id := JobID{Namespace: namespace, Name: m.Ref.Name, Gang: true}
	if m.Ref.Inferred {
		id.Owner = m.Ref.Kind
	}
	return id
}

// GroupMatcher says which groups a pod names, by the rules of the gang
// dialects it knows. pkg/dialects builds one from its table of dialects;
// a nil GroupMatcher in a GroupResolver stands for the built-in signals
// (PodGroupRefs, InferredGroupRef).
type GroupMatcher interface {
	// Explicit returns every group pod names explicitly, in order of
	// precedence.
	Explicit(pod *v1.Pod) []GroupRef
	// Inferred returns the gang pod's owner defines, of the first of the
	// kinds in owners that applies.
	Inferred(pod *v1.Pod, owners OwnerKinds) (GroupRef, bool)
	// ExplicitKinds lists the kinds of group objects pods name
	// explicitly, in order of precedence; the job of such an object has
	// the object's name.
	ExplicitKinds() []GroupKind
}

// GroupResolver decides which group a pod belongs to. The zero value
// reads the built-in explicit signals only (PodGroupRefs).
type GroupResolver struct {
	// Matcher, when set, reads the pod's signals (explicit and
	// inferred) instead of the built-in ones.
	Matcher GroupMatcher
	// Owners are the owner kinds gangs are inferred from.
	Owners OwnerKinds
	// Independent, when set, reports whether the pods of the owner object
	// of kind named object in namespace are to be scheduled one by one
	// (see GroupPolicy.Independent): such a pod's gang is not inferred.
	// It must be fast and must not call back into the cache.
	Independent func(kind GroupKind, namespace, object string) bool
}

// Resolve returns pod's membership. Precedence: the explicit signals
// (PodGroupRefs, in their own order of precedence) always win, and only
// they are compared for conflicts; without any, the owner (see
// InferredGroupRef), unless its policy makes its pods independent;
// otherwise the pod is on its own.
func (r GroupResolver) Resolve(pod *v1.Pod) Membership {
	if ref, ok, conflict := podGroup(pod, r.explicit(pod)); ok {
		return Membership{Ref: ref, Conflict: conflict}
	}
	ref, ok := r.inferred(pod)
	if !ok {
		return Membership{}
	}
	if r.Independent != nil && r.Independent(ref.Kind, pod.Namespace, ref.Object) {
		return Membership{}
	}
	return Membership{Ref: ref}
}

// JobID returns the job pod belongs to under r.
func (r GroupResolver) JobID(pod *v1.Pod) JobID {
	return r.Resolve(pod).JobID(pod.Namespace, pod.Name)
}

// explicit returns the groups pod names explicitly, by r's matcher.
func (r GroupResolver) explicit(pod *v1.Pod) []GroupRef {
	if r.Matcher != nil {
		return r.Matcher.Explicit(pod)
	}
	return PodGroupRefs(pod)
}

// inferred returns the gang pod's owner defines among r's owner kinds, by
// r's matcher.
func (r GroupResolver) inferred(pod *v1.Pod) (GroupRef, bool) {
	if r.Owners == 0 {
		return GroupRef{}, false
	}
	if r.Matcher != nil {
		return r.Matcher.Inferred(pod, r.Owners)
	}
	return InferredGroupRef(pod, r.Owners)
}
