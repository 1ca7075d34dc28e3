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
	"time"

	v1 "k8s.io/api/core/v1"
)

// QueuedJob is a job as the scheduling queue sees it. The queue's Pop
// returns a copy that the caller owns; the Pods in it are shared and
// read-only.
type QueuedJob struct {
	ID JobID
	// Pods are the job's pods that the informer reports pending: those
	// still to be scheduled and those the scheduler has assumed but that
	// are not reported bound yet; the job's JobInfo tells them apart. Pop
	// sorts them by name; in the view passed to a LessFunc or a
	// QueueingHintFn they are in no particular order.
	Pods []*v1.Pod
	// Priority is the highest spec.priority among Pods (nil counts as 0).
	Priority int32
	// Timestamp is when the job last entered the queue: when its first pod
	// was created (or first seen, if its creation time is missing or in
	// the future), or when it was put back after a failed attempt.
	Timestamp time.Time
	// InitialTimestamp is when the job first entered the queue.
	InitialTimestamp time.Time
	// Attempts counts how often the job has been popped.
	Attempts int
	// Cycle is the scheduling cycle of the last Pop, which the queue
	// compares with its last move request when the attempt ends.
	Cycle int64
	// Queue is the tenant queue of the job (see docs/queues.md), empty for
	// the default queue.
	Queue string
}

// LessFunc orders the active queue: it reports whether a is popped before
// b. It runs under the queue's lock, must be fast, must not keep or modify
// its arguments, and must not call back into the queue or the cache.
type LessFunc func(a, b *QueuedJob) bool

// DefaultLess pops the highest priority first and, within a priority, the
// job that entered the queue first (FIFO). Ties are broken by JobID so
// that the order is deterministic.
func DefaultLess(a, b *QueuedJob) bool {
	if a.Priority != b.Priority {
		return a.Priority > b.Priority
	}
	if !a.Timestamp.Equal(b.Timestamp) {
		return a.Timestamp.Before(b.Timestamp)
	}
	if a.ID.Namespace != b.ID.Namespace {
		return a.ID.Namespace < b.ID.Namespace
	}
	if a.ID.Name != b.ID.Name {
		return a.ID.Name < b.ID.Name
	}
	return !a.ID.Gang && b.ID.Gang
}
