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
	"sort"
	"time"
)

// Dump describes the scheduling queue, for debugging.
type Dump struct {
	Lengths Lengths `json:"lengths"`
	// Active is in the order jobs will be popped.
	Active []JobDump `json:"active"`
	// Backoff is in the order backoffs expire.
	Backoff []JobDump `json:"backoff"`
	// Unschedulable, InFlight and AwaitingBinding are sorted by ID.
	Unschedulable    []JobDump `json:"unschedulable"`
	InFlight         []JobDump `json:"inFlight"`
	AwaitingBinding  []JobDump `json:"awaitingBinding"`
	SchedulingCycle  int64     `json:"schedulingCycle"`
	MoveRequestCycle int64     `json:"moveRequestCycle"`
}

// JobDump describes one job in the queue.
type JobDump struct {
	ID                 string     `json:"id"`
	PendingPods        int        `json:"pendingPods"`
	Priority           int32      `json:"priority"`
	Attempts           int        `json:"attempts"`
	Timestamp          time.Time  `json:"timestamp"`
	BackoffExpiry      *time.Time `json:"backoffExpiry,omitempty"`
	UnschedulableSince *time.Time `json:"unschedulableSince,omitempty"`
	LastFailure        string     `json:"lastFailure,omitempty"`
	// Events are those that may move the job out of the unschedulable
	// queue, as "<plugin>:<event>" (Attempt.Events), or ["*"] when any
	// event does (Attempt.AnyEvent).
	Events []string `json:"events,omitempty"`
}

// Dump returns a picture of the queue, taken under its lock.
func (q *SchedulingQueue) Dump() Dump {
	q.lock.Lock()
	defer q.lock.Unlock()
	d := Dump{
		Lengths:          q.lengthsLocked(),
		Active:           []JobDump{},
		Backoff:          []JobDump{},
		Unschedulable:    []JobDump{},
		InFlight:         []JobDump{},
		AwaitingBinding:  []JobDump{},
		SchedulingCycle:  q.schedulingCycle,
		MoveRequestCycle: q.moveRequestCycle,
	}
	for _, e := range q.activeQ.sorted() {
		d.Active = append(d.Active, e.dump())
	}
	for _, e := range q.backoffQ.sorted() {
		d.Backoff = append(d.Backoff, e.dump())
	}
	parked := make([]*jobEntry, 0, len(q.jobs)-q.activeQ.Len()-q.backoffQ.Len())
	for _, e := range q.jobs {
		if e.where != inActive && e.where != inBackoff {
			parked = append(parked, e)
		}
	}
	sort.Slice(parked, func(i, j int) bool { return parked[i].ID.String() < parked[j].ID.String() })
	for _, e := range parked {
		switch e.where {
		case inUnschedulable:
			d.Unschedulable = append(d.Unschedulable, e.dump())
		case inFlight:
			d.InFlight = append(d.InFlight, e.dump())
		case awaitingBinding:
			d.AwaitingBinding = append(d.AwaitingBinding, e.dump())
		}
	}
	return d
}

func (e *jobEntry) dump() JobDump {
	jd := JobDump{
		ID:          e.ID.String(),
		PendingPods: len(e.Pods),
		Priority:    e.Priority,
		Attempts:    e.Attempts,
		Timestamp:   e.Timestamp,
		LastFailure: e.lastFailure,
	}
	if !e.backoffExpiry.IsZero() {
		t := e.backoffExpiry
		jd.BackoffExpiry = &t
	}
	if e.where == inUnschedulable {
		t := e.unschedulableSince
		jd.UnschedulableSince = &t
	}
	if e.anyEvent {
		jd.Events = []string{"*"}
	}
	for _, pe := range e.events {
		jd.Events = append(jd.Events, pe.Plugin+":"+pe.Event.String())
	}
	return jd
}
