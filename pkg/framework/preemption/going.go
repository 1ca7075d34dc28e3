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

package preemption

import (
	"k8s.io/apimachinery/pkg/types"

	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
)

// goingSet is what a preemption knows of the victims other preemptions
// evict (Nominator.GoingVictims): built once for the checks before its
// simulation and for the simulation.
type goingSet struct {
	// tasks are those whose eviction does not show yet (no deletion
	// timestamp), and uids their UIDs: no longer victims to choose, and
	// already taken from their budget group.
	tasks []*framework.TaskInfo
	uids  map[types.UID]bool
	// leaving are all of them, terminating or not, still taking room on
	// their nodes: room that frees without evicting anything more, which
	// a simulation may hand to its job (see simulation.free).
	leaving []*framework.TaskInfo
}

func newGoingSet(victims []*framework.TaskInfo) goingSet {
	g := goingSet{uids: make(map[types.UID]bool, len(victims)), leaving: victims}
	for _, t := range victims {
		if t.GetDeletionTimestamp() == nil {
			g.tasks = append(g.tasks, t)
			g.uids[t.GetUID()] = true
		}
	}
	return g
}

// free takes leaving, the victims of other preemptions, off their nodes
// in the snapshot: their room frees without evicting anything more, so a
// pod that fits there once they are gone waits for them (the result's
// Borrowed) rather than evicting others. A victim gang that goes whole
// frees room on many nodes besides the one its preemptor needed, and
// concurrent preemptions would otherwise each evict as much again. The
// room preemption made for other jobs stays theirs: the cycle holds
// their nominated pods on the snapshot. A reservation's wait does not
// free them: it waits for running pods by their expected ends.
func (sim *simulation) free(leaving []*framework.TaskInfo) {
	start := len(sim.freed)
	for _, t := range leaving {
		if sim.snapshot.RemovePod(t.NodeName, t.GetUID()) {
			sim.freed = append(sim.freed, t)
		}
	}
	if len(sim.freed) == start {
		return
	}
	// One change undoes them all: they are freed before anything else.
	sim.record(func() {
		for _, t := range sim.freed[start:] {
			if ni, ok := sim.snapshot.Get(t.NodeName); ok {
				ni.AddTask(t)
			}
		}
		sim.freed = sim.freed[:start]
	})
}
