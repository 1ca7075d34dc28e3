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
	"maps"
	"slices"
	"strconv"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/batch-scheduler/batch-scheduler/pkg/resources"
)

// Annotations that make pods of one namespace a gang job.
const (
	// GroupNameAnnotation names the gang a pod belongs to. Pods of one
	// namespace with the same non-empty value form one job.
	GroupNameAnnotation = "scheduling.k8s.io/group-name"
	// MinAvailableAnnotation is the gang's quorum: the number of its pods
	// that must be placeable together, an integer >= 1, the same on every
	// pod of the gang. It is required: pods arrive one at a time, so "all
	// pods of the group" is unknowable, and a gang without a quorum is not
	// scheduled at all.
	MinAvailableAnnotation = "scheduling.k8s.io/min-available"
)

// JobID identifies a job: a gang (Gang true, Name is the group name) or a
// single pod (Gang false, Name is the pod name). It is comparable and used
// as a map key.
type JobID struct {
	Namespace string
	Name      string
	Gang      bool
	// Owner is the kind of the owner a gang was inferred from (see
	// GroupMatcher.Inferred), and empty for a gang its pods name explicitly and
	// for a single pod. Inferred gangs are keyed apart from explicit ones,
	// so that a gang inferred from, say, a RayCluster never shares a job
	// with pods that name a group of the same name.
	Owner GroupKind
}

// String renders the ID unambiguously: "ns/group" for a gang and
// "ns/pod:name" for a single pod. A pod name is a DNS subdomain and never
// contains ':', so "pod:" cannot be confused with a gang whose name is a
// valid DNS subdomain; a gang whose name is not one (and therefore carries a
// validation error) is rendered quoted, `ns/"pod:x"`.
//
// A gang inferred from an owner renders as "ns/<kind>:group", e.g.
// "ns/RayCluster.ray.io:train": a kind contains a dot, so it cannot be
// read as "pod".
func (id JobID) String() string {
	switch {
	case !id.Gang:
		return id.Namespace + "/pod:" + id.Name
	case id.Owner != "":
		name := id.Name
		if len(validation.IsDNS1123Subdomain(name)) != 0 {
			name = strconv.Quote(name)
		}
		return id.Namespace + "/" + string(id.Owner) + ":" + name
	case len(validation.IsDNS1123Subdomain(id.Name)) == 0:
		return id.Namespace + "/" + id.Name
	default:
		return id.Namespace + "/" + strconv.Quote(id.Name)
	}
}

// MarshalText makes a JobID render as its String in JSON, also as a map key.
func (id JobID) MarshalText() ([]byte, error) { return []byte(id.String()), nil }

// TaskInfo is one pod of a job as the cache accounts it. A TaskInfo is
// immutable once built: the cache replaces it on every change, so snapshots,
// dumps and callers may share it freely. Do not modify it or its Pod.
type TaskInfo struct {
	// Pod is the pod as the informer delivered it, shared, not copied. For
	// an assumed task it is a shallow copy of the pending pod with
	// spec.nodeName set to NodeName, as the pod will look once bound.
	Pod *v1.Pod
	Job JobID
	// NodeName is the node of a bound or assumed task, empty for a pending
	// one.
	NodeName string
	// Requests is what the pod requests (see resources.PodRequests):
	// what node fit and node accounting read.
	Requests resources.Resource
	// ClaimDevices are the devices of the pod's own ResourceClaims (its
	// spec.resourceClaims, from a template or named), by the resource name
	// a queue limits them under: the DeviceClass's
	// spec.extendedResourceName, else
	// deviceclass.resource.kubernetes.io/<class>, counted as
	// resources.Resource counts scalar resources. It is nil when the pod
	// claims no devices (or the cache could not count them yet). A map, not
	// a resources.Resource, because few pods have any: the 32 bytes of
	// CPU, memory, storage and pods it would never set are paid by every
	// task. They count against the pod's queue (QueueRequests), never
	// against its node: the DRA plugin allocates them on the node.
	ClaimDevices map[v1.ResourceName]int64
	// Status is where the task is: pending, assumed or bound.
	Status TaskStatus
	// Counted reports whether Requests count against the node: true for a
	// bound or assumed pod that has not finished (Succeeded or Failed),
	// including a terminating one.
	Counted bool
	// Own reports whether the pod is this scheduler's: its
	// spec.schedulerName is one of the scheduler's names. The requests of
	// counted own tasks are what a node's cap bounds (see NodeInfo.Cap).
	// The cache sets it for pods informers report; an assumed task is
	// always own.
	Own bool
	// counts is what node accounting counts of the pod besides Requests
	// (see nodeCountsOf), worked out once.
	counts nodeCounts
	// group is the gang the task belongs to, nil for a single pod (read
	// it through GroupKind, GroupObject and GroupConflict): a pointer, so
	// that the many tasks outside any gang (other schedulers' bound pods)
	// do not carry three empty strings.
	group *taskGroup
	// Queue is the queue the pod names (QueueNameForPod), empty for none.
	// The job's queue may come from its group object instead (see
	// JobInfo.Queue).
	Queue string
	// RuntimeBounds, when set, holds what the pod's owner says about when
	// it ends (the cache's, see RuntimeBounds); ExpectedEnd reads it.
	RuntimeBounds *RuntimeBounds

	// rec is the record of a bound task, whose Pod is nil.
	rec *PodRecord
	// uid is the pod's, kept here so that scans of a node's tasks read
	// no second object per task.
	uid types.UID
}

// setGroup fills the group fields of t from m.
func (t *TaskInfo) setGroup(m Membership) {
	t.Job = m.JobID(t.GetNamespace(), t.GetName())
	if m.Gang() {
		t.group = &taskGroup{kind: m.Ref.Kind, object: m.Ref.Object, conflict: m.Conflict}
	}
}

// NewTaskInfo returns the task of pod as an informer reports it: bound to
// its spec.nodeName if that is set, pending otherwise, in the group r
// resolves. The framework reads no gang signals itself: r's Matcher does
// (a table of pkg/dialects; without one, every pod is on its own, see
// GroupResolver).
func NewTaskInfo(pod *v1.Pod, r GroupResolver) *TaskInfo {
	return NewTaskInfoInGroup(pod, resources.PodRequests(pod), r.Resolve(pod))
}

// NewTaskInfoInGroup is NewTaskInfo for a caller that knows pod's
// requests (resources.PodRequests(pod)) already, e.g. from an earlier
// version of the pod whose requests did not change, and whose group a
// GroupResolver resolved (m).
func NewTaskInfoInGroup(pod *v1.Pod, requests resources.Resource, m Membership) *TaskInfo {
	return newTaskInfo(pod, nil, requests, m)
}

// NewTaskInfoOfRecord is NewTaskInfoInGroup for a bound pod whose record
// the informers keep: rec, and pod made from it (PodRecord.Pod). The task
// keeps rec itself, shared with the informer's store, rather than a
// record of its own.
func NewTaskInfoOfRecord(rec *PodRecord, pod *v1.Pod, requests resources.Resource, m Membership) *TaskInfo {
	return newTaskInfo(pod, rec, requests, m)
}

func newTaskInfo(pod *v1.Pod, rec *PodRecord, requests resources.Resource, m Membership) *TaskInfo {
	t := &TaskInfo{
		Pod:      pod,
		Status:   TaskPending,
		NodeName: pod.Spec.NodeName,
		Requests: requests,
		uid:      pod.UID,
		counts:   nodeCountsOf(pod),
	}
	t.Queue, _ = QueueNameForPod(pod)
	t.setGroup(m)
	if t.NodeName != "" {
		t.Status = TaskBound
		t.Counted = !PodFinished(pod)
		if rec == nil {
			rec = NewPodRecord(pod)
		}
		t.rec, t.Pod = rec, nil
	}
	return t
}

// NewAssumedTaskInfo returns the task of pending, a pod the informer
// reports pending, as assumed on node, in job: for a caller that knows
// the pod's job but resolves no groups, such as the scheduling cycle and
// preemption's simulation placing the pods of the job they schedule, and
// the nominator holding the room made for them. The task names no group
// object (GroupKind, GroupObject are empty): only the cache's jobs read
// those, and the cache builds its tasks with NewAssumedTaskInfoInGroup.
func NewAssumedTaskInfo(pending *v1.Pod, node string, job JobID) *TaskInfo {
	t := NewAssumedTaskInfoInGroup(pending, node, resources.PodRequests(pending), Membership{})
	t.Job = job
	return t
}

// NewAssumedTaskInfoInGroup returns the task of pending, a pod the
// informer reports pending, as assumed on node, in the group a
// GroupResolver resolved (m). requests are pending's requests.
func NewAssumedTaskInfoInGroup(pending *v1.Pod, node string, requests resources.Resource, m Membership) *TaskInfo {
	// A shallow copy: the cache never modifies pods, so sharing everything
	// but the top-level struct is safe.
	bound := *pending
	bound.Spec.NodeName = node
	t := &TaskInfo{
		Pod:      &bound,
		Status:   TaskAssumed,
		NodeName: node,
		Requests: requests,
		Counted:  !PodFinished(pending),
		Own:      true,
		uid:      pending.UID,
		counts:   nodeCountsOf(pending),
	}
	t.Queue, _ = QueueNameForPod(pending)
	t.setGroup(m)
	return t
}

// QueueRequests is what t counts against its queue: Requests plus
// ClaimDevices. Without claim devices it is Requests itself, shared, not
// copied: do not modify the result.
func (t *TaskInfo) QueueRequests() resources.Resource {
	if len(t.ClaimDevices) == 0 {
		return t.Requests
	}
	r := t.Requests.Clone()
	r.Add(resources.Resource{Scalar: t.ClaimDevices})
	return r
}

// OnNode reports whether t is accounted to a node: bound or assumed.
func (t *TaskInfo) OnNode() bool { return t.Status == TaskBound || t.Status == TaskAssumed }

// Key returns "namespace/name" of the task's pod.
func (t *TaskInfo) Key() string { return t.GetNamespace() + "/" + t.GetName() }

// absentMinAvailable stands for "annotation not set" among the values the
// pods of a gang declare; a real annotation value can never be "\x00".
const absentMinAvailable = "\x00"

// JobInfo is a job and all its tasks, pending and bound, so that gang
// logic can weigh what is already bound against what is still waiting.
//
// The cache owns the JobInfo it stores and changes it with SetTask and
// DeleteTask under its lock; it hands out clones.
type JobInfo struct {
	ID JobID
	// Tasks holds every task of the job by pod UID.
	Tasks map[types.UID]*TaskInfo

	// minAvailable is the declared quorum, 0 while there is none.
	minAvailable int32
	// validationErr says why the job cannot be scheduled as it is.
	validationErr error
	// declared counts, per raw min-available value (absentMinAvailable for
	// "not set"), how many tasks declare it, so that adding or removing a
	// task re-validates in O(1).
	declared map[string]int
	// kinds counts the tasks per kind of group object they name.
	kinds map[GroupKind]int
	// conflicts holds the GroupConflict of the tasks that have one.
	conflicts map[types.UID]string
	// policies are the group objects that exist under the job's name, by
	// kind (see SetGroupPolicy).
	policies map[GroupKind]*GroupPolicy
	// object is the name of the object that defines a gang's quorum, as
	// its tasks name it (TaskInfo.GroupObject), for messages.
	object string
	// loggedErr is the validation problem last logged, so that each
	// distinct problem is logged once, not once per pod event.
	loggedErr string
	// queues counts a gang's tasks per queue they name (TaskInfo.Queue),
	// nil for a single pod.
	queues map[string]int
	// numPending and numRunning count the pending tasks and the tasks
	// that use a queue's share (see UsesShare); subGrouped counts a
	// gang's tasks that name their sub-group (SubGroupAnnotation).
	numPending, numRunning, subGrouped int32

	// QueueAccount is the queue the cache accounts the job's usage to:
	// Queue() as of the job's last change, empty for a job it does not
	// account. Only the cache sets it.
	QueueAccount string
}

// NewJobInfo returns a job without tasks. The bookkeeping of gangs is
// only allocated for gangs: the scheduler holds a job per single pod, up
// to 150,000 of them.
func NewJobInfo(id JobID) *JobInfo {
	j := &JobInfo{ID: id, Tasks: map[types.UID]*TaskInfo{}}
	if id.Gang {
		j.declared, j.kinds, j.conflicts, j.queues = map[string]int{}, map[GroupKind]int{}, map[types.UID]string{}, map[string]int{}
	}
	return j
}

// MinAvailable is the number of tasks that must run together for the job
// to start: 1 for a single pod, the declared quorum of a gang, and 0 for a
// gang that has none (see ValidationError).
func (j *JobInfo) MinAvailable() int32 {
	if !j.ID.Gang {
		return 1
	}
	return j.minAvailable
}

// ValidationError says why the job cannot be scheduled as it is, or is
// nil: a gang whose name is not a valid object name, or whose pods declare
// no quorum, an invalid one, or different ones. Such a job is never
// started, not even partially; the error says what to fix.
func (j *JobInfo) ValidationError() error { return j.validationErr }

// TaskCounts counts the tasks of a job by status.
type TaskCounts struct {
	// Pending tasks wait to be scheduled.
	Pending int
	// Assumed tasks were placed by the scheduler; their bind is in flight
	// or not yet reported by the informer.
	Assumed int
	// Bound tasks are bound to a node, finished ones included.
	Bound int
	// Finished counts the Bound tasks that have finished (Succeeded or
	// Failed) and no longer use their node.
	Finished int
}

// Running returns the tasks that hold, or are about to hold, resources on
// a node: assumed tasks and bound ones that have not finished. This is
// what counts towards a gang's quorum.
func (c TaskCounts) Running() int { return c.Assumed + c.Bound - c.Finished }

// Counts returns how many tasks of the job are in each state.
func (j *JobInfo) Counts() TaskCounts {
	var c TaskCounts
	for _, t := range j.Tasks {
		switch t.Status {
		case TaskPending:
			c.Pending++
		case TaskAssumed:
			c.Assumed++
		default:
			c.Bound++
			if !t.Counted {
				c.Finished++
			}
		}
	}
	return c
}

// Clone returns a copy of j that shares the (immutable) TaskInfos.
func (j *JobInfo) Clone() *JobInfo {
	c := *j
	c.Tasks = maps.Clone(j.Tasks)
	c.declared = maps.Clone(j.declared)
	c.kinds = maps.Clone(j.kinds)
	c.conflicts = maps.Clone(j.conflicts)
	c.policies = maps.Clone(j.policies)
	c.queues = maps.Clone(j.queues)
	return &c
}

// SetTask adds t, or replaces the task of the same pod, and re-validates
// the job's quorum.
func (j *JobInfo) SetTask(t *TaskInfo) {
	if old, ok := j.Tasks[t.GetUID()]; ok {
		j.undeclare(old)
		j.count(old, -1)
	}
	j.Tasks[t.GetUID()] = t
	j.count(t, 1)
	if j.ID.Gang {
		if obj := t.GroupObject(); obj != "" {
			j.object = obj
		}
		j.declared[declaredMinAvailable(t)]++
		j.kinds[t.GroupKind()]++
		j.queues[t.Queue]++
		if namesSubGroup(t) {
			j.subGrouped++
		}
		if conflict := t.GroupConflict(); conflict != "" {
			j.conflicts[t.GetUID()] = conflict
		}
		j.revalidate()
	}
}

// SetGroupPolicy records what the group object of kind under the job's
// name says (nil: there is none) and re-validates the job.
func (j *JobInfo) SetGroupPolicy(kind GroupKind, p *GroupPolicy) {
	switch {
	case p == nil:
		delete(j.policies, kind)
	case j.policies == nil:
		j.policies = map[GroupKind]*GroupPolicy{kind: p}
	default:
		j.policies[kind] = p
	}
	if j.ID.Gang {
		j.revalidate()
	}
}

// GroupKind returns the kind of object that defines the job's gang, when
// all its tasks agree on one; empty otherwise.
func (j *JobInfo) GroupKind() GroupKind {
	if len(j.kinds) != 1 {
		return ""
	}
	for k := range j.kinds {
		return k
	}
	return ""
}

// Queue returns the queue the job belongs to and where it is named: the
// queue its group object names (a Volcano PodGroup's spec.queue), else
// the one its pods name (for a gang whose pods disagree, the one most of
// them name, ties to the first in name order), else DefaultQueue.
func (j *JobInfo) Queue() (name, via string) {
	if len(j.policies) > 0 {
		kinds := make([]string, 0, len(j.policies))
		for k, p := range j.policies {
			if p != nil && p.Queue != "" {
				kinds = append(kinds, string(k))
			}
		}
		if len(kinds) > 0 {
			slices.Sort(kinds)
			p := j.policies[GroupKind(kinds[0])]
			return p.Queue, p.Source + " spec.queue"
		}
	}
	if !j.ID.Gang {
		for _, t := range j.Tasks {
			if t.Queue != "" {
				_, via := QueueNameForPod(t)
				return t.Queue, via
			}
		}
		return DefaultQueue, ""
	}
	best, n := "", 0
	for q, c := range j.queues {
		if q != "" && (c > n || (c == n && q < best)) {
			best, n = q, c
		}
	}
	if best == "" {
		return DefaultQueue, ""
	}
	for _, t := range j.Tasks {
		if t.Queue == best {
			_, via := QueueNameForPod(t)
			return best, via
		}
	}
	return best, ""
}

// QueueName is the queue the job is accounted to (QueueAccount), or, for
// a record the cache has not accounted, Queue().
func (j *JobInfo) QueueName() string {
	if j.QueueAccount != "" {
		return j.QueueAccount
	}
	q, _ := j.Queue()
	return q
}

// DeleteTask removes the task of the pod with uid, if present.
func (j *JobInfo) DeleteTask(uid types.UID) {
	if old, ok := j.Tasks[uid]; ok {
		j.undeclare(old)
		j.count(old, -1)
		delete(j.Tasks, uid)
		if j.ID.Gang {
			j.revalidate()
		}
	}
}

// UsesShare reports whether t uses its queue's share: a counted pod of
// this scheduler on a node (bound or assumed, not finished).
func (t *TaskInfo) UsesShare() bool { return t.Own && t.Counted && t.OnNode() }

func (j *JobInfo) count(t *TaskInfo, delta int32) {
	if t.Status == TaskPending {
		j.numPending += delta
	}
	if t.UsesShare() {
		j.numRunning += delta
	}
}

// PendingTasks counts the job's pending tasks, and RunningShareTasks
// those that use its queue's share (TaskInfo.UsesShare), in O(1).
func (j *JobInfo) PendingTasks() int      { return int(j.numPending) }
func (j *JobInfo) RunningShareTasks() int { return int(j.numRunning) }

func (j *JobInfo) undeclare(t *TaskInfo) {
	if !j.ID.Gang {
		return
	}
	v := declaredMinAvailable(t)
	if j.declared[v]--; j.declared[v] <= 0 {
		delete(j.declared, v)
	}
	kind := t.GroupKind()
	if j.kinds[kind]--; j.kinds[kind] <= 0 {
		delete(j.kinds, kind)
	}
	if j.queues[t.Queue]--; j.queues[t.Queue] <= 0 {
		delete(j.queues, t.Queue)
	}
	delete(j.conflicts, t.GetUID())
	if namesSubGroup(t) {
		j.subGrouped--
	}
}

// namesSubGroup reports whether t's pod names its sub-group.
func namesSubGroup(t *TaskInfo) bool {
	_, ok := t.GetAnnotations()[SubGroupAnnotation]
	return ok
}

func declaredMinAvailable(pod PodMeta) string {
	if v, ok := pod.GetAnnotations()[MinAvailableAnnotation]; ok {
		return v
	}
	return absentMinAvailable
}
