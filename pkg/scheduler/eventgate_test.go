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

package scheduler

import (
	"fmt"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

func TestEventGate(t *testing.T) {
	now := time.Date(2026, 12, 3, 0, 0, 0, 0, time.UTC)
	g := newEventGate()
	g.now = func() time.Time { return now }
	steps := []struct {
		after time.Duration
		uid   types.UID
		msg   string
		want  bool
	}{
		{uid: "a", msg: "gang ns/g: 0 of 4 tasks could be placed", want: true},
		{after: time.Second, uid: "a", msg: "gang ns/g: 0 of 4 tasks could be placed"},
		{uid: "a", msg: "gang ns/g: 3 of 4 tasks could be placed"},
		{uid: "b", msg: "gang ns/g: 3 of 4 tasks could be placed", want: true},
		{uid: "a", msg: "waiting for tasks: 3 of min-available 4 exist", want: true},
		{after: eventRepeat, uid: "a", msg: "waiting for tasks: 3 of min-available 4 exist", want: true},
		{after: eventRepeat - time.Millisecond, uid: "a", msg: "waiting for tasks: 2 of min-available 4 exist"},
	}
	for i, s := range steps {
		now = now.Add(s.after)
		if got := g.allow(s.uid, s.msg); got != s.want {
			t.Errorf("step %d: allow(%s, %q) = %v, want %v", i, s.uid, s.msg, got, s.want)
		}
	}
	// Entries older than the interval are swept once there are many:
	// only the newer ones stay.
	for i := range minEventSweep {
		g.allow(types.UID(fmt.Sprint("old-", i)), "m")
	}
	now = now.Add(eventRepeat)
	const newer = 1100
	for i := range newer {
		g.allow(types.UID(fmt.Sprint("new-", i)), "m")
	}
	if n := len(g.last); n != newer {
		t.Errorf("%d entries after the sweep, want the %d newer ones", n, newer)
	}
}

// A gang failing cycle after cycle with the same verdict records its
// pods' events once per interval, and at once when the verdict changes.
func TestRepeatedFailuresRecordOneEvent(t *testing.T) {
	h := newHarnessWith(t, harnessConfig{postFilter: []string{}})
	h.sched.events.repeat = time.Hour
	h.addNode("n1", "2")
	for i := range 3 {
		h.addPod(gangPod(fmt.Sprintf("g-%d", i), "g", "3", "1"))
	}
	h.cycle()
	h.requeueAll()
	h.cycle()
	if evts := eventsWith(h.events(), "Warning FailedScheduling "); len(evts) != 3 {
		t.Errorf("got %d FailedScheduling events after two failed cycles, want 3: %q", len(evts), evts)
	}
	h.addNode("n2", "0.5")
	h.requeueAll()
	h.cycle()
	// "0/2 nodes" is another message but for its numbers; the gang's
	// verdict is the same: still no new event.
	if evts := eventsWith(h.events(), "Warning FailedScheduling "); len(evts) != 0 {
		t.Errorf("got %d more events, want none: %q", len(evts), evts)
	}
}
