package cache

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/klog/v2"

	"github.com/batch-scheduler/batch-scheduler/pkg/resources"
)

// Annotations that make pods of one namespace a gang job.
const (
	// GroupNameAnnotation names the gang a pod belongs to. Pods of one
	// namespace with the same non-empty value form one job.
	GroupNameAnnotation = "scheduling.k8s.io/group-name"
	// MinAvailableAnnotation is the number of pods of the gang that must be
	// placeable together, an integer >= 1. When absent, every pod of the
	// gang is required.
	MinAvailableAnnotation = "scheduling.k8s.io/min-available"
)

// JobID identifies a job: a gang (Gang true, Name is the group name) or a
// single pod (Gang false, Name is the pod name). It is comparable and used
// as a map key.
type JobID struct {
	Namespace string
	Name      string
	Gang      bool
}

// String renders the ID unambiguously: "ns/group" for a gang and
// "ns/pod:name" for a single pod. A pod name is a DNS subdomain and never
// contains ':', so "pod:" cannot be confused with a gang whose name is a
// valid DNS subdomain; a gang whose name is not one (and therefore carries a
// validation error) is rendered quoted, `ns/"pod:x"`.
func (id JobID) String() string {
	switch {
	case !id.Gang:
		return id.Namespace + "/pod:" + id.Name
	case len(validation.IsDNS1123Subdomain(id.Name)) == 0:
		return id.Namespace + "/" + id.Name
	default:
		return id.Namespace + "/" + strconv.Quote(id.Name)
	}
}

// MarshalText makes a JobID render as its String in JSON, also as a map key.
func (id JobID) MarshalText() ([]byte, error) { return []byte(id.String()), nil }

// JobIDForPod returns the job pod belongs to.
func JobIDForPod(pod *v1.Pod) JobID {
	if group := pod.Annotations[GroupNameAnnotation]; group != "" {
		return JobID{Namespace: pod.Namespace, Name: group, Gang: true}
	}
	return JobID{Namespace: pod.Namespace, Name: pod.Name}
}

// TaskStatus says where a task of a job is.
type TaskStatus string

const (
	// TaskPending: the pod waits in the scheduling queue.
	TaskPending TaskStatus = "Pending"
	// TaskAssumed: the scheduler placed the pod on a node and is binding it
	// (SchedulerCache.AssumePod); the informer has not yet reported it
	// bound. It is accounted on that node like a bound pod.
	TaskAssumed TaskStatus = "Assumed"
	// TaskBound: the pod is bound to a node (spec.nodeName is set).
	TaskBound TaskStatus = "Bound"
)

// TaskInfo is one pod of a job as the cache accounts it. A TaskInfo is
// immutable once built: the cache replaces it on every change, so snapshots,
// dumps and callers may share it freely. Do not modify it or its Pod.
type TaskInfo struct {
	// Pod is the pod as the informer delivered it, shared, not copied. For
	// an assumed task it is a shallow copy of the pending pod with
	// spec.nodeName set to NodeName, as the pod will look once bound.
	Pod    *v1.Pod
	Job    JobID
	Status TaskStatus
	// NodeName is the node of a bound or assumed task, empty for a pending
	// one.
	NodeName string
	// Requests is what the pod requests (see resources.PodRequests).
	Requests resources.Resource
	// Counted reports whether Requests count against the node: true for a
	// bound or assumed pod that has not finished (Succeeded or Failed),
	// including a terminating one.
	Counted bool
}

func newTaskInfo(pod *v1.Pod) *TaskInfo {
	t := &TaskInfo{
		Pod:      pod,
		Job:      JobIDForPod(pod),
		Status:   TaskPending,
		NodeName: pod.Spec.NodeName,
		Requests: resources.PodRequests(pod),
	}
	if t.NodeName != "" {
		t.Status = TaskBound
		t.Counted = pod.Status.Phase != v1.PodSucceeded && pod.Status.Phase != v1.PodFailed
	}
	return t
}

// assumedTaskInfo returns the task of pending, a pod the informer reports
// pending, as assumed on node. requests are pending's requests.
func assumedTaskInfo(pending *v1.Pod, node string, requests resources.Resource) *TaskInfo {
	// A shallow copy: the cache never modifies pods, so sharing everything
	// but the top-level struct is safe.
	bound := *pending
	bound.Spec.NodeName = node
	return &TaskInfo{
		Pod:      &bound,
		Job:      JobIDForPod(pending),
		Status:   TaskAssumed,
		NodeName: node,
		Requests: requests,
		Counted:  pending.Status.Phase != v1.PodSucceeded && pending.Status.Phase != v1.PodFailed,
	}
}

// onNode reports whether t is accounted to a node: bound or assumed.
func (t *TaskInfo) onNode() bool { return t.Status == TaskBound || t.Status == TaskAssumed }

// Key returns "namespace/name" of the task's pod.
func (t *TaskInfo) Key() string { return t.Pod.Namespace + "/" + t.Pod.Name }

// absentMinAvailable stands for "annotation not set" among the values the
// pods of a gang declare; a real annotation value can never be "\x00".
const absentMinAvailable = "\x00"

// JobInfo is a job and all its tasks, pending and bound, so that gang
// logic can weigh what is already bound against what is still waiting.
//
// The cache owns the JobInfo it stores; (*SchedulerCache).Job hands out
// clones.
type JobInfo struct {
	ID JobID
	// Tasks holds every task of the job by pod UID.
	Tasks map[types.UID]*TaskInfo

	// minAvailable is the parsed annotation, 0 when every pod is required.
	minAvailable int32
	// validationErr explains why the job's annotations were not usable.
	validationErr error
	// declared counts, per raw min-available value (absentMinAvailable for
	// "not set"), how many tasks declare it, so that adding or removing a
	// task re-validates in O(1).
	declared map[string]int
	// loggedErr is the validation error last logged, so that each distinct
	// problem is logged once, not once per pod event.
	loggedErr string
}

func newJobInfo(id JobID) *JobInfo {
	return &JobInfo{ID: id, Tasks: map[types.UID]*TaskInfo{}, declared: map[string]int{}}
}

// MinAvailable is the number of tasks that must be placeable together: the
// min-available annotation of a gang, every task of a gang without a usable
// one, and 1 for a single pod.
func (j *JobInfo) MinAvailable() int32 {
	if !j.ID.Gang {
		return 1
	}
	if j.minAvailable > 0 {
		return j.minAvailable
	}
	return int32(len(j.Tasks))
}

// ValidationError reports why the job's annotations could not be used (bad
// group name or min-available), or nil. A job with an error is treated as
// requiring all of its tasks.
func (j *JobInfo) ValidationError() error { return j.validationErr }

// Count returns how many tasks of the job are pending and how many are on
// a node: bound or assumed (placed by the scheduler, bind in flight),
// finished ones included. Counts tells them apart.
func (j *JobInfo) Count() (pending, bound int) {
	c := j.Counts()
	return c.Pending, c.Assumed + c.Bound
}

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
// what counts towards a gang's min-available.
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
	c.Tasks = make(map[types.UID]*TaskInfo, len(j.Tasks))
	for uid, t := range j.Tasks {
		c.Tasks[uid] = t
	}
	c.declared = make(map[string]int, len(j.declared))
	for v, n := range j.declared {
		c.declared[v] = n
	}
	return &c
}

// setTask adds or replaces t, keeping the min-available bookkeeping right.
func (j *JobInfo) setTask(t *TaskInfo) {
	if old, ok := j.Tasks[t.Pod.UID]; ok {
		j.undeclare(old)
	}
	j.Tasks[t.Pod.UID] = t
	if j.ID.Gang {
		j.declared[declaredMinAvailable(t.Pod)]++
		j.revalidate()
	}
}

// deleteTask removes the task with uid, if present.
func (j *JobInfo) deleteTask(uid types.UID) {
	if old, ok := j.Tasks[uid]; ok {
		j.undeclare(old)
		delete(j.Tasks, uid)
		if j.ID.Gang {
			j.revalidate()
		}
	}
}

func (j *JobInfo) undeclare(t *TaskInfo) {
	if !j.ID.Gang {
		return
	}
	v := declaredMinAvailable(t.Pod)
	if j.declared[v]--; j.declared[v] <= 0 {
		delete(j.declared, v)
	}
}

func declaredMinAvailable(pod *v1.Pod) string {
	if v, ok := pod.Annotations[MinAvailableAnnotation]; ok {
		return v
	}
	return absentMinAvailable
}

// revalidate recomputes minAvailable and validationErr from the values the
// tasks declare, and logs a new problem once.
func (j *JobInfo) revalidate() {
	j.minAvailable, j.validationErr = 0, nil
	var problems []string
	if errs := validation.IsDNS1123Subdomain(j.ID.Name); len(errs) > 0 {
		problems = append(problems, fmt.Sprintf("annotation %s=%q is not a valid name: %s", GroupNameAnnotation, j.ID.Name, strings.Join(errs, "; ")))
	}
	switch len(j.declared) {
	case 0:
	case 1:
		var v string
		for v = range j.declared {
		}
		if v == absentMinAvailable {
			break
		}
		if n, err := strconv.ParseInt(v, 10, 32); err != nil || n < 1 {
			problems = append(problems, fmt.Sprintf("annotation %s=%q must be an integer >= 1", MinAvailableAnnotation, v))
		} else {
			j.minAvailable = int32(n)
		}
	default:
		values := make([]string, 0, len(j.declared))
		for v := range j.declared {
			if v == absentMinAvailable {
				v = "<unset>"
			} else {
				v = strconv.Quote(v)
			}
			values = append(values, v)
		}
		sort.Strings(values)
		problems = append(problems, fmt.Sprintf("pods disagree on annotation %s: %s", MinAvailableAnnotation, strings.Join(values, ", ")))
	}
	if len(problems) == 0 {
		j.loggedErr = ""
		return
	}
	problem := strings.Join(problems, "; ")
	j.validationErr = fmt.Errorf("job %s: %s; requiring all pods of the job", j.ID, problem)
	if problem != j.loggedErr {
		j.loggedErr = problem
		klog.ErrorS(nil, "Invalid gang job annotations; requiring all pods of the job",
			"job", j.ID.String(), "problem", problem)
	}
}
