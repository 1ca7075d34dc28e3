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
	"slices"

	"k8s.io/klog/v2"

	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
)

// maxInFlightEvents bounds the events recorded while jobs are in flight;
// past it, any move request counts as relevant to them.
const maxInFlightEvents = 1000

// inFlightEvent is a move request seen while jobs were in flight.
type inFlightEvent struct {
	// cycle is the scheduling cycle when the event was seen: it concerns
	// the jobs popped in that cycle or before.
	cycle int64
	event framework.ClusterEvent
}

// MoveAllToActiveOrBackoffQueue moves the jobs waiting in the
// unschedulable queue that event may help: those whose last attempt was
// rejected by a plugin that registered a matching event and whose
// queueing hint, given oldObj and newObj, answers Queue (see
// framework.QueueingHintFn), and those whose attempt allows any event.
// They go to the active queue, or to backoff while their backoff lasts.
//
// It also records a move request, so that a job in flight whose attempt
// fails is retried after its backoff instead of waiting for an event it
// may have missed. Hints are not run for those: a matching event is
// enough.
func (q *SchedulingQueue) MoveAllToActiveOrBackoffQueue(event framework.ClusterEvent, oldObj, newObj any) {
	q.lock.Lock()
	defer q.lock.Unlock()
	q.moveRequestCycle = q.schedulingCycle
	q.recordInFlightEventLocked(event)
	if len(q.unschedulable) == 0 || !q.mayInterestParkedLocked(event) {
		return
	}
	logger := klog.Background()
	q.moveUnschedulableLocked(event, func(e *jobEntry) bool {
		return q.worthRequeuingLocked(logger, e, event, oldObj, newObj)
	})
}

// worthRequeuingLocked reports whether event may help the job e: its
// attempt allows any event, or a plugin that rejected it registered a
// matching event whose hint answers Queue.
func (q *SchedulingQueue) worthRequeuingLocked(logger klog.Logger, e *jobEntry, event framework.ClusterEvent, oldObj, newObj any) bool {
	if e.anyEvent {
		return true
	}
	for _, pe := range e.events {
		hint, matched, err := pe.Hint(logger, event, &e.QueuedJob, oldObj, newObj)
		if !matched {
			continue
		}
		if err != nil {
			logger.Error(err, "Queueing hint failed; retrying the job", "plugin", pe.Plugin, "event", event.String(), "job", e.ID.String())
		}
		if hint == framework.Queue {
			if loggerV := logger.V(5); loggerV.Enabled() {
				loggerV.Info("Event may help a waiting job", "plugin", pe.Plugin, "event", event.String(), "job", e.ID.String())
			}
			return true
		}
	}
	return false
}

// recordInFlightEventLocked remembers event for the jobs in flight.
func (q *SchedulingQueue) recordInFlightEventLocked(event framework.ClusterEvent) {
	if q.numInFlight == 0 || q.inFlightEventsLost {
		return
	}
	if n := len(q.inFlightEvents); n > 0 && q.inFlightEvents[n-1] == (inFlightEvent{q.schedulingCycle, event}) {
		return
	}
	if len(q.inFlightEvents) == maxInFlightEvents {
		klog.V(4).InfoS("Too many cluster events while jobs are in flight; any of them will count as relevant", "events", maxInFlightEvents)
		q.inFlightEvents, q.inFlightEventsLost = nil, true
		return
	}
	q.inFlightEvents = append(q.inFlightEvents, inFlightEvent{q.schedulingCycle, event})
}

// missedEventLocked reports whether a move request that may help e, popped
// in cycle, came while it was being scheduled. e's anyEvent and events are
// those of the attempt that just ended.
func (q *SchedulingQueue) missedEventLocked(e *jobEntry, cycle int64) bool {
	if q.moveRequestCycle < cycle {
		return false
	}
	if e.anyEvent || e.where != inFlight || q.inFlightEventsLost {
		// Any event counts, or the events were not recorded for e (it was
		// no longer in flight, or too many came).
		return true
	}
	for _, ev := range q.inFlightEvents {
		if ev.cycle < cycle {
			continue
		}
		for _, pe := range e.events {
			if ev.event.Matches(pe.Event) {
				return true
			}
		}
	}
	return false
}

// leaveFlightLocked is called when e is about to leave the in-flight state
// (if it is in it).
func (q *SchedulingQueue) leaveFlightLocked(e *jobEntry) {
	if e.where != inFlight {
		return
	}
	q.numInFlight--
	if q.numInFlight == 0 {
		q.inFlightEvents, q.inFlightEventsLost = q.inFlightEvents[:0], false
	}
}

// moveUnschedulableLocked requeues the unschedulable jobs that pass ok.
func (q *SchedulingQueue) moveUnschedulableLocked(event framework.ClusterEvent, ok func(e *jobEntry) bool) {
	moved := 0
	for _, e := range q.unschedulable {
		if ok(e) {
			q.requeueLocked(e)
			moved++
		}
	}
	if moved > 0 {
		klog.V(4).InfoS("Moved unschedulable jobs", "event", event.String(), "jobs", moved)
		q.updateGaugesLocked()
	}
}

// noteParkedLocked adds delta to parkedInterest for each resource e's
// attempt registered an event of, once per resource; e's events do not
// change while it is parked.
func (q *SchedulingQueue) noteParkedLocked(e *jobEntry, delta int) {
	if e.anyEvent {
		q.addInterestLocked(framework.WildCard, delta)
		return
	}
	for i, pe := range e.events {
		if !slices.ContainsFunc(e.events[:i], func(o framework.PluginEvent) bool { return o.Event.Resource == pe.Event.Resource }) {
			q.addInterestLocked(pe.Event.Resource, delta)
		}
	}
}

func (q *SchedulingQueue) addInterestLocked(r framework.EventResource, delta int) {
	if n := q.parkedInterest[r] + delta; n > 0 {
		q.parkedInterest[r] = n
	} else {
		delete(q.parkedInterest, r)
	}
}
