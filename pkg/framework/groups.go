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
	"sort"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/klog/v2"
)

// Pod fields of the gang dialects other than the project's own annotations
// (GroupNameAnnotation, MinAvailableAnnotation). The framework only names
// them; the rules that read them from a pod are pkg/dialects'. See
// docs/scheduling.md.
const (
	// CoschedulingPodGroupLabel is the label of scheduler-plugins'
	// coscheduling: the name of a scheduling.x-k8s.io PodGroup.
	CoschedulingPodGroupLabel = "scheduling.x-k8s.io/pod-group"
	// VolcanoGroupNameAnnotation is Volcano's newer annotation naming a
	// scheduling.volcano.sh PodGroup. Volcano also reads
	// GroupNameAnnotation, the key this project uses for its own gangs.
	VolcanoGroupNameAnnotation = "scheduling.volcano.sh/group-name"
	// JobGangAnnotation, set to "true" on a pod (in a Job's pod template),
	// makes the pods of the batch/v1 Job that controls the pod one gang
	// whose quorum is the Job's parallelism (at most the completions
	// left), an explicit signal. Set to "false", it keeps the Job's pods
	// single pods even where gangs are inferred from Jobs. Without it a
	// Job's pods are single pods unless gangs are inferred from Jobs.
	JobGangAnnotation = "batch-scheduler.io/job-gang"
	// KAIPodGroupAnnotation is KAI-Scheduler's pod annotation naming a
	// scheduling.run.ai PodGroup (its pod grouper sets it).
	KAIPodGroupAnnotation = "pod-group-name"
	// KAISubGroupLabel is KAI-Scheduler's pod label naming the pod's
	// sub-group within its scheduling.run.ai PodGroup (spec.subGroups).
	KAISubGroupLabel = "kai.scheduler/subgroup-name"
)

// GroupKind is the kind of object that defines a gang's quorum.
type GroupKind string

// The kinds of group objects, in the order of precedence used when a pod
// names groups in several dialects.
const (
	// GroupKindNative is a scheduling.k8s.io PodGroup, named by
	// pod.spec.schedulingGroup.podGroupName.
	GroupKindNative GroupKind = "PodGroup.scheduling.k8s.io"
	// GroupKindCoscheduling is a scheduling.x-k8s.io PodGroup, named by
	// the label CoschedulingPodGroupLabel.
	GroupKindCoscheduling GroupKind = "PodGroup.scheduling.x-k8s.io"
	// GroupKindVolcano is a scheduling.volcano.sh PodGroup, named by
	// VolcanoGroupNameAnnotation or GroupNameAnnotation. With
	// GroupNameAnnotation and no such PodGroup, the quorum comes from
	// MinAvailableAnnotation.
	GroupKindVolcano GroupKind = "PodGroup.scheduling.volcano.sh"
	// GroupKindKAI is a KAI-Scheduler scheduling.run.ai PodGroup, named
	// by KAIPodGroupAnnotation.
	GroupKindKAI GroupKind = "PodGroup.scheduling.run.ai"
	// GroupKindJob is a batch/v1 Job whose pods opt in with
	// JobGangAnnotation.
	GroupKindJob GroupKind = "Job.batch"
	// GroupKindComposite is a scheduling.k8s.io CompositePodGroup: the
	// parent that native PodGroups (GroupKindNative) name in
	// spec.parentCompositePodGroupName (GroupPolicy.Parent). Pods never
	// name it: the pods of the children of a composite whose policy is a
	// gang are one job of this kind, each child a sub-group (see
	// GroupResolver.Parent). It is not an owner kind, but its jobs are
	// keyed apart as inferred ones are (JobID.Owner).
	GroupKindComposite GroupKind = "CompositePodGroup.scheduling.k8s.io"
)

// GroupRef is a group a pod names in one dialect, or the gang it is
// inferred to belong to from its owner, as a GroupMatcher reads them.
type GroupRef struct {
	Kind GroupKind
	// Name is the gang's name, the JobID's Name.
	Name string
	// Object is the name of the object of Kind, in the pod's namespace,
	// whose policy defines the gang's quorum: Name for every dialect and
	// owner kind today.
	Object string
	// Inferred is set for a gang inferred from the pod's owner rather
	// than named by the pod.
	Inferred bool
	// Via says where the pod names it, e.g. "label
	// scheduling.x-k8s.io/pod-group"; see Signal.
	Via string
}

// Signal says where and how the pod names the group, for messages, e.g.
// "label scheduling.x-k8s.io/pod-group=train".
func (r GroupRef) Signal() string {
	if r.Kind == GroupKindJob || r.Inferred {
		return r.Via + " " + r.Object
	}
	return r.Via + "=" + r.Name
}

// GroupPolicy is what a group object says about its gang.
type GroupPolicy struct {
	// MinMember is the quorum, >= 1.
	MinMember int32
	// Source names the object for messages, e.g.
	// "PodGroup.scheduling.volcano.sh ns/train".
	Source string
	// ScheduleTimeoutSeconds, when > 0, bounds how long the gang may try to
	// get its quorum placed (scheduler-plugins' scheduleTimeoutSeconds).
	ScheduleTimeoutSeconds int32
	// Err, when set, says why the object gives no usable quorum (e.g. a
	// minMember of 0); the gang is not scheduled.
	Err error
	// Independent, for an owner kind (IsOwnerKind), says that the owner's
	// pods are not a gang: each is scheduled on its own, as if no gang
	// were inferred (a batch/v1 Job that is not indexed and runs one pod
	// at a time). It does not apply to pods that name the group
	// explicitly (JobGangAnnotation).
	Independent bool
	// Queue, when set, is the queue the group object puts its gang in
	// (a Volcano PodGroup's spec.queue); it overrides what the pods name.
	Queue string
	// Topology, when set, is the network domain the gang must or should
	// share (a native PodGroup's spec.schedulingConstraints.topology, a
	// Volcano PodGroup's spec.networkTopology); it overrides the pods'
	// annotations.
	Topology *TopologyConstraint
	// SubGroups, when set, split the gang's pods into sub-gangs, each
	// with its own quorum and topology (a Volcano PodGroup's
	// subGroupPolicy, a LeaderWorkerSet's groups, a JobSet's Jobs): a
	// multi-level gang (see SubGroupRule).
	SubGroups []SubGroupRule
	// Parent, when set, names the GroupKindComposite object, in the
	// group object's namespace, the object is a child of (a native
	// PodGroup's spec.parentCompositePodGroupName; for a composite, its
	// own parent, which is not supported: see GroupResolver.Parent).
	Parent string
	// Disruption says how preemption may take the gang's pods: whole
	// (the default), or one by one (a native PodGroup's
	// spec.disruptionMode.single). See JobInfo.Disruption.
	Disruption Disruption
}

// Disruption says how preemption may take a gang's running pods.
type Disruption uint8

const (
	// DisruptWhole: a victim that would leave its gang below its quorum
	// takes the gang's other running pods with it, and a member may be a
	// victim only when every running member may.
	DisruptWhole Disruption = iota
	// DisruptSingly: each pod may be a victim on its own, as a pod of no
	// gang, even when that leaves the gang below its quorum (a native
	// PodGroup's spec.disruptionMode.single, whose owner restarts or
	// replaces what it loses).
	DisruptSingly
)

// String returns "whole" or "single".
func (d Disruption) String() string {
	if d == DisruptSingly {
		return "single"
	}
	return "whole"
}

// groupRef renders a gang's namespace and name for a message: the name
// as is when it is valid (at most 253 bytes), else quoted and bounded
// (QuoteValue).
func groupRef(id JobID) string {
	if len(validation.IsDNS1123Subdomain(id.Name)) == 0 {
		return id.Namespace + "/" + id.Name
	}
	return id.Namespace + "/" + QuoteValue(id.Name)
}

// GangGroup is the resource of EventGangGroupChange.
const GangGroup EventResource = "GangGroup"

// EventGangGroupChange: an object that defines a gang (a PodGroup of any
// dialect, or a Job whose pods opt in) was added, changed or deleted. It
// is raised with a *GangGroupChange as newObj (oldObj nil).
var EventGangGroupChange = ClusterEvent{Resource: GangGroup, ActionType: Add | UpdateGeneric | Delete, Label: "GangGroupChange"}

// GangGroupChange is the object EventGangGroupChange is raised with: the
// job of the group whose object changed.
type GangGroupChange struct {
	Job JobID
}

// groupKinds renders the kinds of a job's tasks for a message.
func groupKinds(kinds map[GroupKind]int) string {
	names := make([]string, 0, len(kinds))
	for k := range kinds {
		names = append(names, string(k))
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

// annotationQuorum reads the quorum the tasks declare with
// MinAvailableAnnotation: n > 0 when all declare the same valid value;
// anyDeclared when at least one declares some value; problem when the
// values are invalid or disagree. Tasks without the annotation count as
// disagreeing only when requireAll is set.
func (j *JobInfo) annotationQuorum(requireAll bool) (n int32, anyDeclared bool, problem string) {
	values := make([]string, 0, len(j.declared))
	for v := range j.declared {
		if v == absentMinAvailable && !requireAll {
			continue
		}
		values = append(values, v)
	}
	switch len(values) {
	case 0:
		return 0, false, ""
	case 1:
		v := values[0]
		if v == absentMinAvailable {
			return 0, false, ""
		}
		parsed, err := strconv.ParseInt(v, 10, 32)
		if err != nil || parsed < 1 {
			return 0, true, fmt.Sprintf("annotation %s=%q must be an integer >= 1", MinAvailableAnnotation, v)
		}
		return int32(parsed), true, ""
	}
	for i, v := range values {
		if v == absentMinAvailable {
			values[i] = "<unset>"
		} else {
			values[i] = strconv.Quote(v)
		}
	}
	sort.Strings(values)
	return 0, true, fmt.Sprintf("its pods disagree on annotation %s (%s): set the same value on every pod of the gang", MinAvailableAnnotation, strings.Join(values, ", "))
}

// revalidate recomputes minAvailable and validationErr from the tasks'
// group signals and the group objects, and logs a new problem once.
//
// Precedence: a group object (PodGroup of the dialect the pods use, the
// opted-in Job, or the owner a gang was inferred from) defines the quorum; MinAvailableAnnotation, where
// pods also carry it, must agree with it. Without an object, pods naming
// their gang with GroupNameAnnotation or VolcanoGroupNameAnnotation take
// the quorum from MinAvailableAnnotation, and pods of the other dialects
// wait for their object to appear.
func (j *JobInfo) revalidate() {
	j.minAvailable, j.validationErr = 0, nil
	if len(j.Tasks) == 0 {
		j.loggedErr = ""
		return
	}
	var problems []string
	if errs := validation.IsDNS1123Subdomain(j.ID.Name); len(errs) > 0 {
		problems = append(problems, fmt.Sprintf("group name %s is not a valid name: %s", QuoteValue(j.ID.Name), strings.Join(errs, "; ")))
	}
	if len(j.conflicts) > 0 {
		msgs := make([]string, 0, len(j.conflicts))
		for _, m := range j.conflicts {
			msgs = append(msgs, m)
		}
		sort.Strings(msgs)
		problems = append(problems, fmt.Sprintf("conflicting group signals: %s", msgs[0]))
	}
	kind := j.GroupKind()
	policy := j.policies[kind]
	switch {
	case kind == "":
		problems = append(problems, fmt.Sprintf("its pods name the group in different dialects (%s): use one", groupKinds(j.kinds)))
	case policy != nil && policy.Err != nil:
		problems = append(problems, policy.Err.Error())
	case policy != nil && j.ID.Owner != "":
		// A gang inferred from its owner takes the owner's quorum; the
		// pods' annotations name no gang and are not read.
		j.minAvailable = policy.MinMember
	case policy != nil:
		n, declared, problem := j.annotationQuorum(false)
		switch {
		case problem != "":
			problems = append(problems, problem)
		case declared && n != policy.MinMember:
			problems = append(problems, fmt.Sprintf("conflicting quorums: %s says %d, annotation %s says %d",
				policy.Source, policy.MinMember, MinAvailableAnnotation, n))
		default:
			j.minAvailable = policy.MinMember
		}
	case kind == GroupKindVolcano:
		n, declared, problem := j.annotationQuorum(true)
		switch {
		case problem != "":
			problems = append(problems, problem)
		case !declared:
			problems = append(problems, fmt.Sprintf("it declares no quorum: set annotation %s to the number of pods that must start together, on every pod of the gang, or create %s %s with spec.minMember",
				MinAvailableAnnotation, GroupKindVolcano, groupRef(j.ID)))
		default:
			j.minAvailable = n
		}
	default:
		object := j.ID
		if j.object != "" {
			object.Name = j.object
		}
		problems = append(problems, fmt.Sprintf("waiting for %s %s to exist", kind, groupRef(object)))
	}
	if len(problems) == 0 {
		j.loggedErr = ""
		return
	}
	j.minAvailable = 0
	problem := strings.Join(problems, "; ")
	j.validationErr = fmt.Errorf("gang %s is not scheduled: %s", groupRef(j.ID), problem)
	if problem != j.loggedErr {
		j.loggedErr = problem
		klog.InfoS("Gang is not scheduled until its group is fixed", "job", groupRef(j.ID), "problem", problem)
	}
}
