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
	"slices"

	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
)

// gangMode is what a simulation found of a gang's running members.
type gangMode uint8

const (
	// gangStays: a running member is not bound yet, or the victim policy
	// keeps it, so a gang that goes whole cannot go.
	gangStays gangMode = iota
	// gangGoesWhole: every running member may go, together.
	gangGoesWhole
	// gangGoesSingly: the gang lets preemption take its pods one by one
	// (framework.DisruptSingly); each is judged as a pod of no gang.
	gangGoesSingly
)

// gangMode says whether, and how, the running members of gang may go.
// Asked for each member on each node searched, it is worked out once per
// simulation: the members and the policy do not change during one.
func (sim *simulation) gangMode(gang framework.JobID) gangMode {
	if m, known := sim.gangModes[gang]; known {
		return m
	}
	// A running member that is not bound yet, or that the policy keeps,
	// keeps a gang that goes whole.
	keeps := func(m *framework.TaskInfo) bool {
		return m.OnNode() && m.Counted && (m.Status != framework.TaskBound || !sim.policy(m))
	}
	mode := gangStays
	if tl, lists := sim.e.opts.Jobs.(TaskLister); lists && sim.jobs[gang] == nil {
		// The members alone, not a copy of the gang's record: most
		// gangs asked about are never chosen.
		if tasks, d, found := tl.JobTasks(gang); found {
			mode = sim.modeOf(d, slices.ContainsFunc(tasks, keeps))
		}
	} else if info := sim.job(gang); info != nil {
		kept := false
		for _, m := range info.Tasks {
			if kept = keeps(m); kept {
				break
			}
		}
		mode = sim.modeOf(info.Disruption(), kept)
	}
	if sim.gangModes == nil {
		sim.gangModes = map[framework.JobID]gangMode{}
	}
	sim.gangModes[gang] = mode
	return mode
}

// modeOf is the gangMode of a gang whose group says d, and of whose
// running members some are kept (bound, allowed by the policy) or not.
func (sim *simulation) modeOf(d framework.Disruption, kept bool) gangMode {
	switch {
	case d == framework.DisruptSingly && sim.groupDisruption:
		return gangGoesSingly
	case kept:
		return gangStays
	}
	return gangGoesWhole
}
