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

package schedulingqueue

import (
	"container/heap"
	"fmt"
	"sort"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
)

// location is where a job is in the queue.
type location int

const (
	inActive location = iota
	inBackoff
	inUnschedulable
	inFlight
	awaitingBinding
)

func (l location) String() string {
	switch l {
	case inActive:
		return "active"
	case inBackoff:
		return "backoff"
	case inUnschedulable:
		return "unschedulable"
	case inFlight:
		return "inFlight"
	case awaitingBinding:
		return "awaitingBinding"
	}
	return fmt.Sprintf("location(%d)", int(l))
}

// jobEntry is the queue's record of one job with at least one pending pod.
type jobEntry struct {
	framework.QueuedJob

	where location
	// heapIndex is the entry's index in activeQ or backoffQ, whichever
	// holds it.
	heapIndex int
	// podIndex maps a pod UID to its index in Pods.
	podIndex map[types.UID]int
	// backoffExpiry is when the job's backoff after its last failed attempt
	// ends.
	backoffExpiry time.Time
	// strictBackoff is set when that attempt failed with an error (or its
	// assumption expired) rather than because the job did not fit: such a
	// job waits its backoff out even when the scheduler has nothing else
	// to do (see Pop).
	strictBackoff bool
	// unschedulableSince is when the job was last parked as unschedulable.
	unschedulableSince time.Time
	// lastFailure is the Reason of the last failed attempt.
	lastFailure string
	// changedInFlight records that pending pods of the job were added or
	// changed while it was being scheduled, so that its attempt may have
	// missed them.
	changedInFlight bool
	// anyEvent and events are Attempt.AnyEvent and Attempt.Events of the
	// last failed attempt: what may move the job out of the unschedulable
	// queue.
	anyEvent bool
	events   []framework.PluginEvent
	// rejectedBy and profile are Attempt.Plugins and Attempt.Profile of
	// the last failed attempt.
	rejectedBy []string
	profile    string
	// waitsForRoom: the last attempt waited for room (Attempt.ForRoom);
	// the entry is in roomWaiters under its Queue.
	waitsForRoom bool
}

func podPriority(pod *v1.Pod) int32 {
	if pod.Spec.Priority != nil {
		return *pod.Spec.Priority
	}
	return 0
}

// setPod adds pod to the entry, or replaces the pod with its UID.
func (e *jobEntry) setPod(pod *v1.Pod) {
	if i, ok := e.podIndex[pod.UID]; ok {
		old := e.Pods[i]
		e.Pods[i] = pod
		if p := podPriority(pod); p > e.Priority {
			e.Priority = p
		} else if podPriority(old) == e.Priority {
			e.recomputePriority()
		}
		return
	}
	e.podIndex[pod.UID] = len(e.Pods)
	e.Pods = append(e.Pods, pod)
	if p := podPriority(pod); len(e.Pods) == 1 || p > e.Priority {
		e.Priority = p
	}
}

// deletePod removes the pod with uid from the entry, if present.
func (e *jobEntry) deletePod(uid types.UID) {
	i, ok := e.podIndex[uid]
	if !ok {
		return
	}
	old := e.Pods[i]
	last := len(e.Pods) - 1
	e.Pods[i] = e.Pods[last]
	e.podIndex[e.Pods[i].UID] = i
	e.Pods[last] = nil
	e.Pods = e.Pods[:last]
	delete(e.podIndex, uid)
	if podPriority(old) == e.Priority {
		e.recomputePriority()
	}
}

func (e *jobEntry) recomputePriority() {
	e.Priority = 0
	for i, p := range e.Pods {
		if pp := podPriority(p); i == 0 || pp > e.Priority {
			e.Priority = pp
		}
	}
}

// snapshot returns a copy of the job for a caller, with Pods sorted by name.
func (e *jobEntry) snapshot() *framework.QueuedJob {
	qj := e.QueuedJob
	qj.Pods = append([]*v1.Pod(nil), e.Pods...)
	sort.Slice(qj.Pods, func(i, j int) bool { return qj.Pods[i].Name < qj.Pods[j].Name })
	return &qj
}

// jobHeap is a binary heap of jobEntries that keeps each entry's heapIndex
// current, so that an entry can be fixed or removed in O(log n).
type jobHeap struct {
	items []*jobEntry
	less  func(a, b *jobEntry) bool
}

var _ heap.Interface = &jobHeap{}

func (h *jobHeap) Len() int           { return len(h.items) }
func (h *jobHeap) Less(i, j int) bool { return h.less(h.items[i], h.items[j]) }
func (h *jobHeap) Swap(i, j int) {
	h.items[i], h.items[j] = h.items[j], h.items[i]
	h.items[i].heapIndex = i
	h.items[j].heapIndex = j
}
func (h *jobHeap) Push(x any) {
	e := x.(*jobEntry)
	e.heapIndex = len(h.items)
	h.items = append(h.items, e)
}
func (h *jobHeap) Pop() any {
	last := len(h.items) - 1
	e := h.items[last]
	h.items[last] = nil
	h.items = h.items[:last]
	e.heapIndex = -1
	return e
}

func (h *jobHeap) peek() *jobEntry { return h.items[0] }

// sorted returns the entries in the heap's order, without changing it.
func (h *jobHeap) sorted() []*jobEntry {
	out := append([]*jobEntry(nil), h.items...)
	sort.Slice(out, func(i, j int) bool { return h.less(out[i], out[j]) })
	return out
}
