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
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/batch-scheduler/batch-scheduler/pkg/resources"
)

// The fields a pod names its queue with, in the order of precedence (see
// QueueNameForPod and docs/queues.md).
const (
	// QueueLabel is the project's own label (or annotation) naming the
	// Queue (batch-scheduler.io/v1alpha1) of a pod's job.
	QueueLabel = "batch-scheduler.io/queue"
	// VolcanoQueueAnnotation is Volcano's annotation naming a
	// scheduling.volcano.sh Queue.
	VolcanoQueueAnnotation = "scheduling.volcano.sh/queue-name"
	// KAIQueueLabel is KAI-Scheduler's label naming its queue.
	KAIQueueLabel = "kai.scheduler/queue"
	// KueueQueueLabel names the Kueue LocalQueue a pod was admitted
	// through. It is never read as a queue of this scheduler: Kueue
	// admits the workload, and its quota is Kueue's business.
	KueueQueueLabel = "kueue.x-k8s.io/queue-name"
)

// DefaultQueue is the queue of jobs that name none. Without a Queue of
// that name it is a child of the root with weight 1 and neither
// guarantee nor limit.
const DefaultQueue = "default"

// QueueNameForPod returns the queue pod names, and where it names it (for
// messages), or "" when it names none: the project's label, then the same
// key as an annotation, then Volcano's annotation, then KAI-Scheduler's
// label.
func QueueNameForPod(pod PodMeta) (name, via string) {
	podLabels, annotations := pod.GetLabels(), pod.GetAnnotations()
	if v := podLabels[QueueLabel]; v != "" {
		return v, "label " + QueueLabel
	}
	if v := annotations[QueueLabel]; v != "" {
		return v, "annotation " + QueueLabel
	}
	if v := annotations[VolcanoQueueAnnotation]; v != "" {
		return v, "annotation " + VolcanoQueueAnnotation
	}
	if v := podLabels[KAIQueueLabel]; v != "" {
		return v, "label " + KAIQueueLabel
	}
	return "", ""
}

// ResourceAmounts is an amount per resource in the units of
// pkg/resources (CPU in millicores, memory and storage in bytes, other
// resources as counts); an absent resource is zero, or, in a limit,
// unlimited. The pod count is never part of it: queues share resources,
// not pod slots.
type ResourceAmounts map[v1.ResourceName]int64

// AmountsOf converts r, leaving out zero amounts and the pod count.
func AmountsOf(r resources.Resource) ResourceAmounts {
	a := ResourceAmounts{}
	put := func(name v1.ResourceName, v int64) {
		if v != 0 {
			a[name] = v
		}
	}
	put(v1.ResourceCPU, r.MilliCPU)
	put(v1.ResourceMemory, r.Memory)
	put(v1.ResourceEphemeralStorage, r.EphemeralStorage)
	for name, v := range r.Scalar {
		put(name, v)
	}
	return a
}

// AmountsOfList converts a ResourceList as AmountsOf converts a Resource.
func AmountsOfList(rl v1.ResourceList) ResourceAmounts {
	return AmountsOf(resources.FromList(rl))
}

// Clone returns a copy of a.
func (a ResourceAmounts) Clone() ResourceAmounts {
	c := make(ResourceAmounts, len(a))
	for k, v := range a {
		c[k] = v
	}
	return c
}

// ToList renders a as a ResourceList, CPU in millicores and memory and
// storage as binary-SI byte counts.
func (a ResourceAmounts) ToList() v1.ResourceList {
	l := v1.ResourceList{}
	for name, v := range a {
		l[name] = *amountQuantity(name, v)
	}
	return l
}

// FormatAmount renders the amount of name for people: "2" or "1500m" cores,
// "4Gi" of memory, a count otherwise.
func FormatAmount(name v1.ResourceName, v int64) string {
	return amountQuantity(name, v).String()
}

func amountQuantity(name v1.ResourceName, v int64) *resource.Quantity {
	switch name {
	case v1.ResourceCPU:
		return resource.NewMilliQuantity(v, resource.DecimalSI)
	case v1.ResourceMemory, v1.ResourceEphemeralStorage:
		return resource.NewQuantity(v, resource.BinarySI)
	}
	return resource.NewQuantity(v, resource.DecimalSI)
}

// String renders a sorted by resource name, e.g. "cpu=2 memory=4Gi".
func (a ResourceAmounts) String() string {
	names := make([]string, 0, len(a))
	for n := range a {
		names = append(names, string(n))
	}
	sort.Strings(names)
	var b strings.Builder
	for i, n := range names {
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "%s=%s", n, FormatAmount(v1.ResourceName(n), a[v1.ResourceName(n)]))
	}
	return b.String()
}

// The types below are tenant queues (Queue objects, owned by pkg/tenancy)
// as a scheduling cycle sees them: "queue" in QueueSpec, QueueState,
// QueueSnapshot and DefaultQueue names a tenant queue, never the
// scheduling queue of pending jobs (pkg/schedulingqueue; QueuedJob is its
// entry).

// QueueSpec is a tenant queue as an event handler reports it to the cache,
// from a Queue of this project or of another scheduler's API.
type QueueSpec struct {
	Name string
	// Parent names the parent queue; empty for a child of the root.
	Parent string
	// Weight is the queue's part of what its parent has left after
	// guarantees, relative to its siblings'; <= 0 counts as 1.
	Weight int64
	// Guarantee is reserved for the queue when its jobs ask for it.
	Guarantee ResourceAmounts
	// Limit bounds what the queue's jobs use together, per resource it
	// names; nil or an absent resource is unlimited.
	Limit ResourceAmounts
	// Borrow lets the queue use more than its entitlement when siblings
	// leave capacity idle; Lend lets siblings use its unused guarantee;
	// Reclaimable lets other queues evict what it borrowed.
	Borrow, Lend, Reclaimable bool
	// Source names the object for messages, e.g. "Queue team-a" or
	// "Queue.scheduling.volcano.sh team-a"; API is the API group it comes
	// from (tenancy.SourceOwn, tenancy.SourceVolcano; pkg/tenancy sets
	// it), empty for the implicit default queue.
	Source, API string
	// Err, when set, says why the object is unusable (e.g. a negative
	// amount); the queue is left out and its jobs wait with this reason.
	Err error
}

// QueueState is one queue as a scheduling cycle sees it: its spec, what
// its jobs use and wait for, and its computed shares. See
// docs/queues.md for the model.
type QueueState struct {
	QueueSpec
	// Depth is 1 for a child of the root. Children are the names of the
	// queue's children, sorted; a queue with children takes no jobs.
	Depth    int
	Children []string
	// Allocated is what the queue's running (and assumed) pods request,
	// its subtree's included; Pending what its waiting pods request.
	Allocated, Pending ResourceAmounts
	// Releasing is the part of Allocated its terminating pods (deletion
	// requested, a reclaim's victims say) still request: what the queue
	// is about to give back.
	Releasing ResourceAmounts
	// PendingJobs and RunningJobs count the jobs of the queue itself (not
	// its subtree) that have pods waiting, and pods running.
	PendingJobs, RunningJobs int
	// FirstWaiter is the job of the queue itself that waits for room and
	// comes first (highest priority, then oldest); nil when none waits.
	FirstWaiter *RoomWaiter
	// Guaranteed is the guarantee honoured (at most the limit, scaled
	// down when the siblings' guarantees exceed the parent's share).
	// Entitlement is the static share: Guaranteed plus the weighted part
	// of the parent's share left after the siblings' guarantees, whatever
	// anyone asks for. FairShare is what the queue may use now: the
	// weighted dominant-resource-fair division of the parent's share
	// among the siblings that ask for it.
	Guaranteed, Entitlement, FairShare ResourceAmounts
}

// RoomWaiter is a job that waits for room (see RoomRejecter): the first
// of its queue in precedence, which anti-starvation protects.
type RoomWaiter struct {
	ID       JobID
	Priority int32
	// Since is when the job first entered the scheduling queue.
	Since time.Time
}

// QueueSnapshot is every tenant queue at one moment, as pkg/tenancy
// computed it for a scheduling cycle. It is immutable: do not modify it.
type QueueSnapshot struct {
	// Capacity is what the scheduler may use in total, the root's share:
	// the nodes' allocatable less what others use there, within the node
	// caps (grants) where there are caps.
	Capacity ResourceAmounts
	// Queues holds the valid queues by name.
	Queues map[string]*QueueState
	// Invalid holds the queues left out, each with the reason (an unknown
	// parent, a cycle, a bad amount).
	Invalid map[string]error
}

// Path returns the queue named name and its ancestors, the root's child
// first; nil when there is no valid queue of that name.
func (s *QueueSnapshot) Path(name string) []*QueueState {
	if s == nil {
		return nil
	}
	q, ok := s.Queues[name]
	if !ok {
		return nil
	}
	path := make([]*QueueState, q.Depth)
	for i := q.Depth - 1; i >= 0 && q != nil; i-- {
		path[i] = q
		q = s.Queues[q.Parent]
	}
	return path
}

// Siblings returns the queues with the same parent as q, q excluded.
func (s *QueueSnapshot) Siblings(q *QueueState) []*QueueState {
	var out []*QueueState
	if p, ok := s.Queues[q.Parent]; ok && q.Parent != "" {
		for _, name := range p.Children {
			if c := s.Queues[name]; c != nil && c != q {
				out = append(out, c)
			}
		}
		return out
	}
	for _, c := range s.Queues {
		if c.Parent == "" && c != q {
			out = append(out, c)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Ancestor reports whether a is q or one of q's ancestors.
func (s *QueueSnapshot) Ancestor(a, q string) bool {
	for n := 0; q != "" && n <= len(s.Queues); n++ {
		if q == a {
			return true
		}
		qs, ok := s.Queues[q]
		if !ok {
			return false
		}
		q = qs.Parent
	}
	return false
}

// EventQueueChange: a tenant queue's spec, or the shares computed from
// what the tenant queues ask for and what the scheduler may use, changed.
// Raised by pkg/tenancy (and by the scheduling queue when the first job
// of a tenant queue waiting for room stops waiting) with a *QueueChange as
// newObj (oldObj nil).
var EventQueueChange = ClusterEvent{Resource: QueueResource, ActionType: Add | UpdateGeneric | Delete, Label: "QueueChange"}

// QueueResource is the resource of EventQueueChange.
const QueueResource EventResource = "Queue"

// QueueChange is the object EventQueueChange is raised with.
type QueueChange struct {
	// Queue names the queue whose spec changed; empty when the shares
	// were recomputed.
	Queue string
}
