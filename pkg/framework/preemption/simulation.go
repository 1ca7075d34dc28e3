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
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
	frameworkruntime "github.com/batch-scheduler/batch-scheduler/pkg/framework/runtime"
)

// simulation is one attempt to make room for a cycle's job: it places the
// job's pending pods in the snapshot one after the other, each where it
// fits as it is or else on the node where the cheapest set of victims
// makes room, taking the victims off the snapshot as it goes. Every change
// is logged so that rollback puts the snapshot back.
type simulation struct {
	e        *Engine
	c        *Cycle
	snapshot Snapshot
	// policy says which pods may be victims (the PostFilter plugin's).
	policy framework.VictimPolicy
	pdbs   []budget
	// pdbUsed counts, per entry of pdbs, the disruptions of the chosen
	// victims.
	pdbUsed []int32
	// jobs caches the cache's JobInfos; subGangs holds the sub-gangs of
	// the multi-level gangs among them, nil until there is one.
	jobs     map[framework.JobID]*framework.JobInfo
	subGangs map[framework.JobID]*subGangs
	// gangs caches what the victim rules read of each gang (see
	// gangView); nil until asked.
	gangs map[framework.JobID]*gangView
	// scratch are the victim search's buffers, reused node after node.
	scratch victimScratch
	// victims are the chosen victims by UID; gangVictims counts them per
	// gang.
	victims     map[types.UID]*Victim
	order       []*Victim
	gangVictims map[framework.JobID]int
	placements  map[string]string
	placed      []*v1.Pod
	undo        []func()
	// changes counts the changes logged in undo and undone; miss is the
	// last pod no victims made room for, with changes then and its nodes:
	// a pod the profile judges alike gets the same answer while changes
	// has not moved.
	changes int
	miss    *simMiss
	// nodes are the nodes the job's pods may take (one placement of the
	// cycle's plan), nil for all.
	nodes []*framework.NodeInfo
	// going are the pods other jobs' preemptions are evicting that have
	// not started terminating: no longer victims to choose.
	going map[types.UID]bool
	// freed are the victims of other preemptions that free took off the
	// snapshot.
	freed []*framework.TaskInfo
	// budget, if set, bounds what the victims take from each group; taken
	// sums, per group, the requests of the victims chosen so far and of
	// the going pods.
	budget framework.VictimBudget
	taken  map[string]framework.ResourceAmounts
	// sample bounds how many candidate nodes each pod's search finds.
	sample framework.CandidateSample
	// groupDisruption takes the pods of a gang that lets them go one by
	// one (framework.DisruptSingly) one by one; without it every gang
	// goes whole.
	groupDisruption bool
	// wait, when set, makes the search a reservation's (see reserve.go):
	// the pods taken off are waited for, not evicted.
	wait *waitMode
}

// simMiss is a pod of the job that fit nowhere, even with victims gone.
type simMiss struct {
	pod     *v1.Pod
	nodes   []*framework.NodeInfo
	changes int
}

// Victim is a pod to evict and the preemptor pod it makes room for.
type Victim struct {
	Task      *framework.TaskInfo
	Preemptor *v1.Pod
	// Node is the node the preemptor is nominated to.
	Node string
	// ViolatesPDB is the prediction that a PDB refuses its eviction.
	ViolatesPDB bool
}

// SimulationResult is what a simulation found: whether the job can start
// (Fits), the victims in the order chosen, and the job's pods placed with
// their nodes (pod UID to node name).
type SimulationResult struct {
	Fits       bool
	Victims    []*Victim
	Placed     []*v1.Pod
	Placements map[string]string
	// Borrowed are the victims of other preemptions (UID → node) on the
	// nodes of Placements: the job's pods wait for them to go.
	Borrowed map[types.UID]string
	// ends are the expected ends of the pods a reservation waits for.
	ends map[types.UID]expectedEnd
}

// Simulate runs the victim search for c's job on the snapshot within b,
// with the going pods (other preemptions' victims still on their nodes)
// already counted as leaving: none is a victim to choose, and the room of
// each is free (see simulation.free). It tries each of c's placements
// in turn and puts the snapshot back as it was before returning; it
// nominates and evicts nothing.
func (e *Engine) Simulate(ctx context.Context, c *Cycle, b SearchBounds, going []*framework.TaskInfo) (SimulationResult, error) {
	return e.simulate(ctx, c, b, newGoingSet(going), nil)
}

// simulate is Simulate, run as a reservation's wait when wait is set.
func (e *Engine) simulate(ctx context.Context, c *Cycle, b SearchBounds, going goingSet, wait *waitMode) (SimulationResult, error) {
	sim := &simulation{e: e, c: c, snapshot: e.opts.Snapshot, policy: b.Victims, jobs: map[framework.JobID]*framework.JobInfo{},
		victims: map[types.UID]*Victim{}, gangVictims: map[framework.JobID]int{}, placements: map[string]string{},
		budget: b.Budget, taken: map[string]framework.ResourceAmounts{}, going: going.uids, sample: b.Sample, groupDisruption: b.GroupDisruption, wait: wait}
	for _, t := range going.tasks {
		sim.charge(t, 1)
	}
	if wait == nil {
		sim.free(going.leaving)
	}
	// Plugins that keep state of running pods (DynamicResources: the
	// devices of their claims) treat a running pod the simulation takes
	// off the snapshot as gone.
	framework.MarkEvictionSimulation(c.State)
	defer framework.UnmarkEvictionSimulation(c.State)
	if e.opts.PDBLister != nil && wait == nil {
		pdbs, err := e.opts.PDBLister.List(labels.Everything())
		if err != nil {
			klog.FromContext(ctx).Error(err, "Listing PodDisruptionBudgets for preemption; going on without them")
		}
		sim.pdbs = newBudgets(pdbs)
		sim.pdbUsed = make([]int32, len(pdbs))
	}
	var ok bool
	var err error
	var best *SimulationResult
	var bestCost waitCost
	for _, nodes := range c.Placements {
		// Each placement of a plan is tried on the snapshot as it is.
		mark := len(sim.undo)
		sim.nodes = nodes
		if ok, err = sim.run(ctx); err != nil || ok && wait == nil {
			break
		}
		if ok {
			// A wait tries every placement and keeps the one whose room
			// frees soonest (a gang that must share a rack waits for the
			// rack that frees first, not for the first rack of the plan).
			if cost := sim.waitCost(victimTasks(sim.order)); best == nil || cost.less(bestCost) {
				r := sim.result(true)
				best, bestCost = &r, cost
			}
			ok = false
		}
		sim.rollback(mark)
	}
	res := sim.result(ok)
	if best != nil && err == nil {
		res = *best
	}
	sim.rollback(0)
	return res, err
}

// result is the simulation's state as a SimulationResult.
func (sim *simulation) result(fits bool) SimulationResult {
	res := SimulationResult{Fits: fits, Victims: slices.Clone(sim.order), Placed: slices.Clone(sim.placed), Placements: maps.Clone(sim.placements)}
	if len(sim.freed) > 0 && len(sim.placements) > 0 {
		nodes := make(map[string]bool, len(sim.placements))
		for _, node := range sim.placements {
			nodes[node] = true
		}
		for _, t := range sim.freed {
			if nodes[t.NodeName] {
				if res.Borrowed == nil {
					res.Borrowed = map[types.UID]string{}
				}
				res.Borrowed[t.GetUID()] = t.NodeName
			}
		}
	}
	if sim.wait != nil {
		res.ends = sim.wait.ends
	}
	return res
}

// victimTasks returns the victims' tasks.
func victimTasks(vs []*Victim) []*framework.TaskInfo {
	out := make([]*framework.TaskInfo, len(vs))
	for i, v := range vs {
		out[i] = v.Task
	}
	return out
}

// run places the job's pending pods, preempting where needed, and reports
// whether the job could start: the Permit plugins accept the placements.
func (sim *simulation) run(ctx context.Context) (bool, error) {
	if len(sim.c.Job.SubGroups) > 0 {
		if ok, err := sim.placeSubGroups(ctx); ok || err != nil {
			return ok, err
		}
	} else {
		job := sim.c.Job
		for i, pod := range job.Pending {
			placed := len(sim.placed)
			if err := sim.placePod(ctx, pod); err != nil {
				return false, err
			}
			if sim.waitAccepts(ctx) {
				return true, nil
			}
			if left := len(job.Pending) - i - 1; left > 0 && len(sim.placed) == placed && sim.c.Framework.PermitOutOfReach(job, placed, left) {
				// No victims make room for this pod and the pods left
				// cannot bring the job to its quorum.
				return false, nil
			}
		}
	}
	if len(sim.placed) == 0 {
		return false, nil
	}
	st := sim.c.Framework.RunPermitPlugins(ctx, sim.c.State, sim.c.Job, sim.placements)
	if st.IsSuccess() {
		return true, nil
	}
	if st.IsRejected() {
		return false, nil
	}
	return false, fmt.Errorf("permit after preemption: %w", st.AsError())
}

// waitAccepts reports whether a wait may stop with the placements so far:
// a wait is for what lets the job start, so once the Permit plugins
// accept (an elastic gang's quorum), the pods left would only make it
// wait for more.
func (sim *simulation) waitAccepts(ctx context.Context) bool {
	if sim.wait == nil || len(sim.placed) == 0 || len(sim.placed) >= len(sim.c.Job.Pending) {
		return false
	}
	return sim.c.Framework.RunPermitPlugins(ctx, sim.c.State, sim.c.Job, sim.placements).IsSuccess()
}

// placePod places pod where it fits as the snapshot is, or else on the
// best node where victims make room; a pod that fits nowhere even so is
// left out. Where it fits is the cycle's own filter path
// (Framework.FilterPod) over the snapshot as the simulation left it.
func (sim *simulation) placePod(ctx context.Context, pod *v1.Pod) error {
	all := sim.snapshot.NodeInfos()
	nodes := all
	if sim.nodes != nil {
		nodes = sim.nodes
	}
	if m := sim.miss; m != nil && m.changes == sim.changes && framework.SameNodes(m.nodes, nodes) && sim.c.Framework.Alike(m.pod, pod) {
		// No victim made room for a pod the plugins cannot tell from
		// this one, and nothing changed since.
		return nil
	}
	found, err := sim.c.Framework.FilterPod(ctx, sim.c.State, pod, frameworkruntime.FilterScope{All: all, Nodes: sim.nodes, Lookup: sim.snapshot.Get})
	if err != nil {
		return err
	}
	if len(found.Feasible) > 0 {
		node := found.Feasible[0].Name()
		if sim.wait != nil {
			// A wait keeps to the nodes its reservation holds.
			for _, n := range found.Feasible {
				if sim.wait.held[n.Name()] {
					node = n.Name()
					break
				}
			}
		}
		sim.add(node, pod)
		return nil
	}
	// The state PreFilterPod just left for pod, over the snapshot with
	// every candidate victim on its node, is what each candidate node's
	// search starts from (see podFit).
	pf := sim.newPodFit(ctx, pod, found.PreFilter)
	var best *candidate
	limit, candidates, offset := sim.sample.Limit(len(nodes)), 0, 0
	if limit < len(nodes) {
		// A sample starts at a random node, so that successive
		// preemptions spread over the cluster.
		offset = rand.IntN(len(nodes))
	}
	for i := range nodes {
		if candidates == limit {
			break
		}
		node := nodes[(offset+i)%len(nodes)]
		if found.Diagnosis.Unresolvable(node.Name()) {
			// Evicting pods cannot help there (e.g. a node selector).
			continue
		}
		cand, err := sim.selectVictimsOnNode(ctx, pf, node)
		if err != nil {
			return err
		}
		if cand == nil {
			continue
		}
		if sim.wait == nil {
			sim.expandGangs(cand)
			if !sim.withinBudget(cand) {
				continue
			}
		}
		candidates++
		if sim.wait != nil && sim.betterWait(cand, best) || sim.wait == nil && better(cand, best) {
			best = cand
		}
	}
	if best == nil {
		// Every node was searched (a sample stops early only once it
		// has candidates), so the answer does not hang on where the
		// search started.
		sim.miss = &simMiss{pod: pod, nodes: nodes, changes: sim.changes}
		return nil
	}
	mark := len(sim.undo)
	allowed := sim.pdbAllowed()
	check := pf.check()
	for _, t := range best.victims {
		node, removed := sim.takeVictim(t, pod, best.node.Name(), allowed)
		if !removed {
			continue
		}
		if err := check.removed(ctx, t, node); err != nil {
			sim.rollback(mark)
			return err
		}
	}
	// The rest of a victim gang may run elsewhere; check pod still fits
	// (spreading constraints may mind pods leaving other nodes).
	ok, err := check.fits(ctx, best.node)
	if err != nil {
		return err
	}
	if !ok {
		sim.rollback(mark)
		return nil
	}
	sim.add(best.node.Name(), pod)
	return nil
}

// takeVictim takes victim t off its node in the snapshot for preemptor
// pod, nominated to node. It returns t's node and whether t was on it in
// the snapshot (and is no longer).
func (sim *simulation) takeVictim(t *framework.TaskInfo, pod *v1.Pod, node string, allowed []int32) (*framework.NodeInfo, bool) {
	v := &Victim{Task: t, Preemptor: pod, Node: node, ViolatesPDB: sim.consumePDBs(t, allowed)}
	sim.victims[t.GetUID()] = v
	sim.order = append(sim.order, v)
	if t.Job.Gang {
		sim.gangVictims[t.Job]++
	}
	var used []int
	for i, b := range sim.pdbs {
		if b.matches(t) {
			sim.pdbUsed[i]++
			used = append(used, i)
		}
	}
	removed := sim.snapshot.RemovePod(t.NodeName, t.GetUID())
	sim.charge(t, 1)
	sim.record(func() {
		sim.charge(t, -1)
		if removed {
			if ni, ok := sim.snapshot.Get(t.NodeName); ok {
				ni.AddTask(t)
			}
		}
		for _, i := range used {
			sim.pdbUsed[i]--
		}
		if t.Job.Gang {
			sim.gangVictims[t.Job]--
		}
		delete(sim.victims, t.GetUID())
		sim.order = sim.order[:len(sim.order)-1]
	})
	if !removed {
		return nil, false
	}
	ni, _ := sim.snapshot.Get(t.NodeName)
	return ni, true
}

// add places pod on node in the snapshot.
func (sim *simulation) add(node string, pod *v1.Pod) {
	sim.snapshot.AddTask(node, framework.NewAssumedTaskInfo(pod, node, sim.c.Job.ID))
	sim.placements[string(pod.UID)] = node
	sim.placed = append(sim.placed, pod)
	sim.record(func() {
		sim.snapshot.RemovePod(node, pod.UID)
		delete(sim.placements, string(pod.UID))
		sim.placed = sim.placed[:len(sim.placed)-1]
	})
}

// record logs a change of the simulation by the function that undoes it.
func (sim *simulation) record(undo func()) {
	sim.undo = append(sim.undo, undo)
	sim.changes++
}

// rollback undoes the changes after the first mark ones, newest first.
func (sim *simulation) rollback(mark int) {
	for i := len(sim.undo) - 1; i >= mark; i-- {
		sim.undo[i]()
		sim.changes++
	}
	sim.undo = sim.undo[:mark]
}

// job returns the cache's JobInfo of id, looked up once per simulation;
// the sub-gangs of a multi-level gang are counted out then, into
// sim.subGangs.
func (sim *simulation) job(id framework.JobID) *framework.JobInfo {
	if j, ok := sim.jobs[id]; ok {
		return j
	}
	j, _ := sim.e.opts.Jobs.Job(id)
	sim.jobs[id] = j
	if j == nil || !id.Gang {
		return j
	}
	if rules := j.SubGroupRules(); len(rules) > 0 {
		if sim.subGangs == nil {
			sim.subGangs = map[framework.JobID]*subGangs{}
		}
		sim.subGangs[id] = newSubGangs(j, rules, sim.going)
	}
	return j
}
