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
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// eventRepeat is the least time between two FailedScheduling events of
// one pod that say the same but for the numbers of the message: a gang of
// 100 pods waiting for its preemption's victims to go fails a cycle every
// second or so, and each failure would record 100 events that say what
// the last 100 said.
const eventRepeat = messageRewrite

// minEventSweep is the least size of eventGate.last at which old entries
// are swept.
const minEventSweep = 1024

// eventGate decides which FailedScheduling events are recorded: a pod's
// event is left out when its last one, less than repeat ago, said the
// same but for the numbers (sameButNumbers). Any other message is
// recorded at once, as the condition writer writes it.
//
// mu guards last and sweepAt; it is held only to read and update them.
type eventGate struct {
	now    func() time.Time
	repeat time.Duration

	mu      sync.Mutex
	last    map[types.UID]sentEvent
	sweepAt int
}

// sentEvent is the last event recorded for a pod.
type sentEvent struct {
	msg string
	at  time.Time
}

func newEventGate() *eventGate {
	return &eventGate{now: time.Now, repeat: eventRepeat, last: map[types.UID]sentEvent{}, sweepAt: minEventSweep}
}

// allow reports whether the pod of uid gets an event saying msg now, and
// if so remembers it.
func (g *eventGate) allow(uid types.UID, msg string) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	now := g.now()
	if e, ok := g.last[uid]; ok && now.Sub(e.at) < g.repeat && sameButNumbers(e.msg, msg) {
		return false
	}
	if len(g.last) >= g.sweepAt {
		for id, e := range g.last {
			if now.Sub(e.at) >= g.repeat {
				delete(g.last, id)
			}
		}
		g.sweepAt = max(minEventSweep, 2*len(g.last))
	}
	g.last[uid] = sentEvent{msg: msg, at: now}
	return true
}
