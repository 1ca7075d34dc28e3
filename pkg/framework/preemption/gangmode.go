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

// gangView is what a simulation reads of one victim gang, looked up once
// per simulation: every node searched holds members of the same gangs,
// and the victim rules ask of each member. The tasks are the cache's,
// shared, not copied. Nothing here changes during a simulation (the
// members, the policy and the going pods do not) but rest, which follows
// the victims chosen.
type gangView struct {
	tasks        []*framework.TaskInfo
	minAvailable int32
	mode         gangMode
	// staying counts the running members not going (see
	// simulation.staying); -1 until asked.
	staying int
	// rest is what gangRest listed last; rest.members is nil until then.
	rest gangRest
}

// gang returns the view of gang, nil when the cache has no such job. A
// gang of sub-gangs is also looked up whole (simulation.job), which
// counts out its sub-gangs.
func (sim *simulation) gang(id framework.JobID) *gangView {
	if g, known := sim.gangs[id]; known {
		return g
	}
	var g *gangView
	tl, lists := sim.e.opts.Jobs.(TaskLister)
	if lists && sim.jobs[id] == nil {
		tasks, facts, found := tl.JobTasks(id)
		switch {
		case !found:
		case facts.SubGangs:
			g = sim.viewOf(sim.job(id))
		default:
			g = sim.newGangView(tasks, facts)
		}
	} else {
		g = sim.viewOf(sim.job(id))
	}
	if sim.gangs == nil {
		sim.gangs = map[framework.JobID]*gangView{}
	}
	sim.gangs[id] = g
	return g
}

// viewOf returns the view of job, a copy of the cache's record; nil for
// nil.
func (sim *simulation) viewOf(job *framework.JobInfo) *gangView {
	if job == nil {
		return nil
	}
	tasks := make([]*framework.TaskInfo, 0, len(job.Tasks))
	for _, t := range job.Tasks {
		tasks = append(tasks, t)
	}
	return sim.newGangView(tasks, job.VictimFacts())
}

// newGangView returns the view of the gang of tasks and facts, with its
// gangMode worked out.
func (sim *simulation) newGangView(tasks []*framework.TaskInfo, facts framework.VictimFacts) *gangView {
	// A running member that is not bound yet, or that the policy keeps,
	// keeps a gang that goes whole.
	keeps := func(m *framework.TaskInfo) bool {
		return m.OnNode() && m.Counted && (m.Status != framework.TaskBound || !sim.policy(m))
	}
	return &gangView{tasks: tasks, minAvailable: facts.MinAvailable, staying: -1,
		mode: sim.modeOf(facts.Disruption, slices.ContainsFunc(tasks, keeps))}
}

// gangMode says whether, and how, the running members of gang may go.
// A gang the cache no longer has stays.
func (sim *simulation) gangMode(gang framework.JobID) gangMode {
	if g := sim.gang(gang); g != nil {
		return g.mode
	}
	return gangStays
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
