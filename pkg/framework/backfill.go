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
)

const (
	// BackfilledIntoAnnotation is set on a pod, by the binding that puts
	// it on its node, when another job's reservation holds room there
	// that the scheduler let the pod's job use (it backfills: it is
	// expected to end before that job is expected to start). The pod may
	// have fitted beside the reserved room too; the annotation says the
	// room was not held from it. Its value is the reserving job's ID.
	BackfilledIntoAnnotation = "batch-scheduler.io/backfilled-into"
	// BackfillDeadlineAnnotation goes with BackfilledIntoAnnotation: when
	// the reservation expected its job to start, as the scheduler saw it
	// when it placed the pod (RFC 3339, UTC). The pod's expected runtime,
	// counted from its placement, ends by then.
	BackfillDeadlineAnnotation = "batch-scheduler.io/backfill-deadline"
)

// Backfill is a reservation whose room on a node a cycle left free for
// its job to use, because the job ends before the reservation's own job
// is expected to start.
type Backfill struct {
	// Job holds the reservation; Start is when it is expected to start.
	Job   JobID
	Start time.Time
}

// Annotations returns what a binding of a pod placed in b's room sets on
// the pod: BackfilledIntoAnnotation and BackfillDeadlineAnnotation.
func (b Backfill) Annotations() map[string]string {
	return map[string]string{
		BackfilledIntoAnnotation:   b.Job.String(),
		BackfillDeadlineAnnotation: b.Start.UTC().Format(time.RFC3339Nano),
	}
}

// backfillsKey holds, in a cycle's CycleState, the reservations the
// cycle's job may backfill, by node.
const backfillsKey StateKey = "framework/backfills"

// backfills is the data under backfillsKey.
type backfills map[string]Backfill

// Clone implements StateData: the map is written only while the cycle
// starts (NoteBackfill), before any plugin reads it.
func (b backfills) Clone() StateData { return b }

// NoteBackfill records in state that the cycle left b's room on node
// free for its job to backfill. Of several reservations on one node, the
// one expected to start first is kept: it is the one the job must not
// delay. The scheduler calls it before the cycle's plugins run.
func NoteBackfill(state *CycleState, node string, b Backfill) {
	var m backfills
	if d, ok := state.Read(backfillsKey); ok {
		m, _ = d.(backfills)
	}
	if m == nil {
		m = backfills{}
		state.Write(backfillsKey, m)
	}
	if old, ok := m[node]; ok && !b.Start.Before(old.Start) {
		return
	}
	m[node] = b
}

// BackfillOn returns the reservation whose room on node state's cycle
// left free for its job (NoteBackfill). A Bind plugin of a pod placed on
// node sets its Annotations on the binding, so that the pod tells why it
// runs on room another job holds.
func BackfillOn(state *CycleState, node string) (Backfill, bool) {
	if state == nil {
		return Backfill{}, false
	}
	d, ok := state.Read(backfillsKey)
	if !ok {
		return Backfill{}, false
	}
	b, ok := d.(backfills)[node]
	return b, ok
}
