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
	"fmt"
	"iter"
	"strings"

	v1 "k8s.io/api/core/v1"
)

// Gangs inferred from a pod's owner: a pod that names no group in any
// dialect (no explicit signal) but belongs to a workload whose kind says
// how many of its pods must start together is put in that workload's
// gang. Which kinds are inferred is configured (OwnerKinds); how a pod is
// matched to its owner's gang is the rule of the owner kind's dialect in
// pkg/dialects. See docs/scheduling.md, "Gangs inferred from the owner".

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
	// (leaderworkerset.x-k8s.io), named by the label
	// LeaderWorkerSetNameLabel: one multi-level gang whose groups (label
	// LeaderWorkerSetGroupIndexLabel) are its sub-groups.
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

// ownerKindOrder lists the owner kinds OwnerKinds knows, one bit each, in
// the order a GroupMatcher tries them (OwnerKinds.All): the kinds read
// from labels first, because their pods' controller is an intermediate
// object (a Job of a JobSet or of an MPIJob's launcher, a StatefulSet of
// a LeaderWorkerSet), then the kinds that control their pods directly.
// It reads no pod: the rules that do are pkg/dialects'.
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
// dialects it knows. pkg/dialects, the one home of those rules, builds
// one from its table of dialects (dialects.Builtin, dialects.Resolver);
// the framework has no rules of its own and cannot import pkg/dialects,
// so whoever needs a pod's group hands the framework a matcher.
type GroupMatcher interface {
	// Explicit returns every group pod names explicitly, in order of
	// precedence.
	Explicit(pod *v1.Pod) []GroupRef
	// Inferred returns the gang pod's owner defines, of the first of the
	// kinds in owners that applies. It reads only the pod's metadata
	// (name, namespace, UID, labels, annotations, owner references) and
	// keeps nothing of it but strings: of a bound pod kept as a
	// PodRecord, the cache lends it a pod with nothing else set, rather
	// than make one of the record each time the pod's task changes.
	Inferred(pod *v1.Pod, owners OwnerKinds) (GroupRef, bool)
	// ExplicitKinds lists the kinds of group objects pods name
	// explicitly, in order of precedence; the job of such an object has
	// the object's name.
	ExplicitKinds() []GroupKind
}

// GroupResolver decides which group a pod belongs to, by the rules of its
// Matcher. Matcher is required: a resolver without one matches no group,
// so the zero GroupResolver puts every pod on its own. That is the right
// answer only for pods known to name no gang (tests of single pods); the
// scheduler's resolvers all have a matcher (the cache's is the handler's
// table, dialects.Builtin by default).
type GroupResolver struct {
	// Matcher reads the pod's signals, explicit and inferred; nil
	// matches nothing.
	Matcher GroupMatcher
	// Owners are the owner kinds gangs are inferred from.
	Owners OwnerKinds
	// Independent, when set, reports whether the pods of the owner object
	// of kind named object in namespace are to be scheduled one by one
	// (see GroupPolicy.Independent): such a pod's gang is not inferred.
	// It must be fast and must not call back into the cache.
	Independent func(kind GroupKind, namespace, object string) bool
	// Parent, when set, returns the GroupKindComposite object whose gang
	// the pods of the native PodGroup (GroupKindNative) named podGroup in
	// namespace join, ok false when they are a gang of their own (the
	// PodGroup names no parent, or its parent's policy schedules its
	// children independently). It must be fast and must not call back
	// into the cache.
	Parent func(namespace, podGroup string) (composite string, ok bool)
}

// Resolve returns pod's membership. Precedence: the explicit signals
// (Matcher.Explicit, in their own order of precedence) always win, and
// only they are compared for conflicts (a native PodGroup whose parent
// composite is a gang stands for that composite, see Parent); without
// any, the owner
// (Matcher.Inferred), unless its policy makes its pods independent;
// otherwise the pod is on its own.
func (r GroupResolver) Resolve(pod *v1.Pod) Membership {
	if ref, ok, conflict := firstGroup(pod, r.explicit(pod)); ok {
		if ref.Kind == GroupKindNative && r.Parent != nil {
			if composite, ok := r.Parent(pod.Namespace, ref.Object); ok {
				ref = CompositeRef(composite, ref.Object)
			}
		}
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

// CompositeRef is the group of the pods of the native PodGroup podGroup
// whose parent is the CompositePodGroup composite with a gang policy: the
// composite's job, keyed apart from a group of the same name that pods
// name explicitly (its JobID.Owner is GroupKindComposite).
func CompositeRef(composite, podGroup string) GroupRef {
	return GroupRef{Kind: GroupKindComposite, Name: composite, Object: composite, Inferred: true,
		Via: "spec.schedulingGroup.podGroupName=" + podGroup + " whose spec.parentCompositePodGroupName is"}
}

// JobID returns the job pod belongs to under r.
func (r GroupResolver) JobID(pod *v1.Pod) JobID {
	return r.Resolve(pod).JobID(pod.Namespace, pod.Name)
}

// firstGroup picks the group of pod from refs, the groups it names
// explicitly in order of precedence: the first of them, and a conflict
// message when they name different groups. It reads refs only, whatever
// dialects they come from.
func firstGroup(pod *v1.Pod, refs []GroupRef) (ref GroupRef, ok bool, conflict string) {
	if len(refs) == 0 {
		return GroupRef{}, false, ""
	}
	ref = refs[0]
	var differ []string
	for _, r := range refs[1:] {
		if r.Name != ref.Name {
			differ = append(differ, r.Signal())
		}
	}
	// Several dialects naming the same group name one group; precedence
	// picks the object that defines it.
	if len(differ) > 0 {
		conflict = fmt.Sprintf("pod %s/%s names different groups: %s and %s", pod.Namespace, pod.Name, ref.Signal(), strings.Join(differ, " and "))
	}
	return ref, true, conflict
}

// explicit returns the groups pod names explicitly, by r's matcher; none
// without one.
func (r GroupResolver) explicit(pod *v1.Pod) []GroupRef {
	if r.Matcher == nil {
		return nil
	}
	return r.Matcher.Explicit(pod)
}

// inferred returns the gang pod's owner defines among r's owner kinds, by
// r's matcher; none without one.
func (r GroupResolver) inferred(pod *v1.Pod) (GroupRef, bool) {
	if r.Owners == 0 || r.Matcher == nil {
		return GroupRef{}, false
	}
	return r.Matcher.Inferred(pod, r.Owners)
}
