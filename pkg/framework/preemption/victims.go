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
	"cmp"
	"context"
	"maps"
	"math"
	"slices"
	"strings"
	"time"

	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
)

// candidate is a node where the preemptor pod fits once victims go.
type candidate struct {
	node *framework.NodeInfo
	// victims are the pods to evict: those of node (after reprieve) and,
	// last, the rest of any victim gang (or sub-gang of a multi-level
	// gang) that would otherwise be left below its quorum, wherever they
	// run.
	victims []*framework.TaskInfo
	// violations counts the victims whose eviction a PodDisruptionBudget
	// does not allow.
	violations int
	// rank caches what better compares of victims; nil until it does.
	rank *candidateRank
}

// candidateRank is what better compares of a candidate's victims, worked
// out once: a search compares each candidate with the best so far.
type candidateRank struct {
	highest  int32
	sum      int64
	earliest time.Time
}

// ranked returns c's rank; c's victims must not change after.
func (c *candidate) ranked() *candidateRank {
	if c.rank == nil {
		h := highest(c.victims)
		c.rank = &candidateRank{highest: h, sum: prioritySum(c.victims), earliest: earliestStart(c.victims, h)}
	}
	return c.rank
}

// startTime is when t's pod started, or, for a pod no kubelet reported
// started, when it was created.
func startTime(t *framework.TaskInfo) time.Time {
	if s := t.StartTime(); s != nil {
		return s.Time
	}
	return t.GetCreationTimestamp().Time
}

// moreImportant orders victims as kube-scheduler does: higher priority
// first, then the one that started earlier.
func moreImportant(a, b *framework.TaskInfo) bool {
	if pa, pb := a.Priority(), b.Priority(); pa != pb {
		return pa > pb
	}
	return startTime(a).Before(startTime(b))
}

// eligible reports whether t may be preempted by sim's job: a bound pod
// that still uses its node and is not already going (terminating, or
// another preemption's victim), of another job, that the victim policy
// allows (DefaultPreemption's: a priority strictly below the
// preemptor's) and whose group's budget, if any, allows more. A
// member of a gang that goes whole is eligible only if every running
// member of its gang is, since the gang may have to go whole.
func (sim *simulation) eligible(t *framework.TaskInfo) bool {
	if sim.wait != nil {
		return sim.waitEligible(t)
	}
	// The checks of t's own fields first: the lookups below are the
	// dearer part over every pod of every node searched.
	if !t.Counted || t.Status != framework.TaskBound || t.GetDeletionTimestamp() != nil ||
		t.Job == sim.c.Job.ID || !sim.policy(t) || sim.going[t.GetUID()] {
		return false
	}
	if _, chosen := sim.victims[t.GetUID()]; chosen {
		return false
	}
	if sim.budget != nil {
		if g := sim.budget.Group(t); g != "" && !sim.budget.Allows(g, sim.taken[g]) {
			return false
		}
	}
	if !t.Job.Gang {
		return true
	}
	return sim.gangMode(t.Job) != gangStays
}

// aboveQuorum reports whether t is a pod of a gang that runs more pods than
// its quorum, counting out the victims chosen so far: an elastic gang's
// extra pod, whose eviction leaves the gang running. A pod of a
// multi-level gang is one only when its sub-gang too keeps its quorum
// without it, and the whole its quorum in sub-gangs.
func (sim *simulation) aboveQuorum(t *framework.TaskInfo) bool {
	if !t.Job.Gang {
		return false
	}
	g := sim.gang(t.Job)
	if g == nil {
		return false
	}
	if s := sim.subGangs[t.Job]; s != nil {
		return s.spare(t, sim.victims)
	}
	return sim.staying(g)-sim.gangVictims[t.Job] > int(g.minAvailable)
}

// staying counts the running pods of gang g that are not already going
// (terminating, or another preemption's victims): what it keeps unless
// sim takes more. It is counted once per gang and simulation: it is asked
// for each candidate victim of the gang on each node searched.
func (sim *simulation) staying(g *gangView) int {
	if g.staying >= 0 {
		return g.staying
	}
	n := 0
	for _, m := range g.tasks {
		if m.Status != framework.TaskPending && m.Counted && m.GetDeletionTimestamp() == nil && !sim.going[m.GetUID()] {
			n++
		}
	}
	g.staying = n
	return n
}

// selectVictimsOnNode finds the fewest, least important pods of node
// whose eviction lets the pod of pf fit there, as kube-scheduler does:
// take every eligible pod off, check that the pod fits, then put them
// back, most important first, those whose eviction a PDB forbids before
// the others, keeping each that still lets the pod fit. nil means the pod
// does not fit on node even with every eligible pod gone. The node is
// left as it was. An elastic gang's pods above its quorum (of a
// multi-level gang, above its sub-gang's too: see aboveQuorum) count as
// less important than any other, so they go first.
//
// The checks of one node share one fitCheck (a clone of the pod's
// PreFilter state, updated by each pod taken off or put back), so nothing
// of one candidate node's search reaches the next.
func (sim *simulation) selectVictimsOnNode(ctx context.Context, pf *podFit, node *framework.NodeInfo) (*candidate, error) {
	// The buffers are the simulation's, reused node after node: nothing
	// of them outlives this call.
	potential := sim.scratch.potential[:0]
	for _, t := range node.Pods {
		if sim.eligible(t) {
			potential = append(potential, t)
		}
	}
	sim.scratch.potential = potential
	if len(potential) == 0 {
		return nil, nil
	}
	name := node.Name()
	check := pf.check()
	for i, t := range potential {
		sim.snapshot.RemovePod(name, t.GetUID())
		if err := check.removed(ctx, t, node); err != nil {
			restoreTasks(node, potential[:i+1])
			return nil, err
		}
	}
	ok, err := check.fits(ctx, node)
	if err != nil || !ok {
		restoreTasks(node, potential)
		return nil, err
	}
	sim.rankVictims(potential)
	violating, allowed := sim.splitByPDB(potential, sim.pdbAllowed())
	c := &candidate{node: node}
	victims := sim.scratch.victims[:0]
	for i, group := range [][]*framework.TaskInfo{violating, allowed} {
		for j, t := range group {
			// Put t back; it is a victim if the pod no longer fits.
			node.AddTask(t)
			fits, err := false, check.added(ctx, t, node)
			if err == nil {
				fits, err = check.fits(ctx, node)
			}
			if err == nil && !fits {
				sim.snapshot.RemovePod(name, t.GetUID())
				victims = append(victims, t)
				if i == 0 {
					c.violations++
				}
				err = check.removed(ctx, t, node)
			}
			if err != nil {
				// Put back what was still off the node.
				restoreTasks(node, victims)
				restoreTasks(node, group[j+1:])
				if i == 0 {
					restoreTasks(node, allowed)
				}
				sim.scratch.victims = victims
				return nil, err
			}
		}
	}
	restoreTasks(node, victims)
	sim.scratch.victims = victims
	c.victims = slices.Clone(victims)
	return c, nil
}

// restoreTasks puts ts back on node, which the victim search took them
// off. RemovePod marks the node changed: adding the tasks back directly
// keeps their accounting (Own) and is undone by the next update too.
func restoreTasks(node *framework.NodeInfo, ts []*framework.TaskInfo) {
	for _, t := range ts {
		node.AddTask(t)
	}
}

// rankVictims sorts the eligible pods of one node in the order the victim
// search puts them back: most important first, an elastic gang's pods
// above its quorum (aboveQuorum) after every other; for a reservation's
// wait, those that end soonest last.
func (sim *simulation) rankVictims(potential []*framework.TaskInfo) {
	if sim.wait != nil {
		slices.SortStableFunc(potential, func(a, b *framework.TaskInfo) int {
			return orderOf(sim.endsLater(a, b), sim.endsLater(b, a))
		})
		return
	}
	ranked := sim.scratch.ranked[:0]
	for _, t := range potential {
		ranked = append(ranked, rankedVictim{task: t, spare: sim.aboveQuorum(t)})
	}
	slices.SortStableFunc(ranked, func(a, b rankedVictim) int {
		if a.spare != b.spare {
			return orderOf(b.spare, a.spare)
		}
		return orderOf(moreImportant(a.task, b.task), moreImportant(b.task, a.task))
	})
	for i, r := range ranked {
		potential[i] = r.task
	}
	sim.scratch.ranked = ranked
}

// rankedVictim is an eligible pod and whether it is above its gang's
// quorum, as rankVictims sorts them.
type rankedVictim struct {
	task  *framework.TaskInfo
	spare bool
}

// orderOf turns "a before b" and "b before a" into a comparison result.
func orderOf(aFirst, bFirst bool) int {
	switch {
	case aFirst:
		return -1
	case bFirst:
		return 1
	}
	return 0
}

// victimScratch are buffers the victim search of a simulation reuses
// from one node to the next; nothing keeps a reference to them between
// calls.
type victimScratch struct {
	potential, victims, gangTaken, added []*framework.TaskInfo
	ranked                               []rankedVictim
}

// expandGangs adds to c the other running members of each victim gang
// that c's victims (with those sim chose before) would leave below its
// quorum: such a gang goes whole, unless it lets its pods go one by one
// (gangGoesSingly). A gang that keeps at least its quorum
// keeps its other members. Of a multi-level gang, a sub-gang c's victims
// would leave below its quorum goes whole, and the whole gang goes when
// what is left misses its quorum in pods or in sub-gangs (see
// subGangs.expand). It then recounts c's PDB violations over all its
// victims.
func (sim *simulation) expandGangs(c *candidate) {
	// The victims of gangs that go whole, gang by gang: a few per gang,
	// searched linearly. Any fixed order of the gangs will do; the
	// fields compare faster than String.
	taken := sim.scratch.gangTaken[:0]
	for _, t := range c.victims {
		if t.Job.Gang && sim.gangMode(t.Job) != gangGoesSingly {
			taken = append(taken, t)
		}
	}
	slices.SortStableFunc(taken, func(a, b *framework.TaskInfo) int {
		x, y := a.Job, b.Job
		return cmp.Or(strings.Compare(x.Namespace, y.Namespace), strings.Compare(x.Name, y.Name), strings.Compare(string(x.Owner), string(y.Owner)))
	})
	sim.scratch.gangTaken = taken
	own := c.victims[:len(c.victims):len(c.victims)]
	added := sim.scratch.added[:0]
	var in map[types.UID]bool
	for len(taken) > 0 {
		id := taken[0].Job
		n := 1
		for n < len(taken) && taken[n].Job == id {
			n++
		}
		ownOfGang := taken[:n]
		taken = taken[n:]
		g := sim.gang(id)
		if g == nil {
			continue
		}
		if s := sim.subGangs[id]; s != nil {
			if in == nil {
				in = make(map[types.UID]bool, len(own))
				for _, t := range own {
					in[t.GetUID()] = true
				}
			}
			added = append(added, s.expand(own, sim.victims, in)...)
			continue
		}
		left := sim.staying(g) - sim.gangVictims[id] - len(ownOfGang)
		if left <= 0 || left >= int(g.minAvailable) {
			continue
		}
		rest := sim.gangRest(g)
		for i, uid := range rest.uids {
			if !slices.ContainsFunc(ownOfGang, func(t *framework.TaskInfo) bool { return t.GetUID() == uid }) {
				added = append(added, rest.members[i])
			}
		}
	}
	sim.scratch.added = added
	if len(added) > 0 {
		c.victims = append(slices.Clip(own), added...)
	}
	c.violations = 0
	if len(sim.pdbs) > 0 {
		allowed := sim.pdbAllowed()
		for _, t := range c.victims {
			if sim.consumePDBs(t, allowed) {
				c.violations++
			}
		}
	}
}

// gangRest returns the members of gang g that a candidate taking some of
// them may have to take too: those running that are neither going nor
// chosen already, by pod name. They are listed once per gang while the
// simulation's victims stay as they are (sim.changes): every candidate
// node the search tries holds members of the same gangs.
func (sim *simulation) gangRest(g *gangView) gangRest {
	if g.rest.members != nil && g.rest.changes == sim.changes {
		return g.rest
	}
	rest := make([]*framework.TaskInfo, 0, len(g.tasks))
	for _, m := range g.tasks {
		if !m.OnNode() || !m.Counted || m.GetDeletionTimestamp() != nil || sim.going[m.GetUID()] {
			continue
		}
		if _, chosen := sim.victims[m.GetUID()]; chosen {
			continue
		}
		rest = append(rest, m)
	}
	slices.SortFunc(rest, func(a, b *framework.TaskInfo) int { return strings.Compare(a.GetName(), b.GetName()) })
	r := gangRest{changes: sim.changes, members: rest, uids: make([]types.UID, len(rest))}
	for i, m := range rest {
		r.uids[i] = m.GetUID()
	}
	g.rest = r
	return r
}

// gangRest is what simulation.gangRest listed of a gang, as of changes:
// the members and, side by side, their UIDs.
type gangRest struct {
	changes int
	members []*framework.TaskInfo
	uids    []types.UID
}

// pdbAllowed returns how many more disruptions each PDB allows, given the
// victims sim has already chosen.
func (sim *simulation) pdbAllowed() []int32 {
	allowed := make([]int32, len(sim.pdbs))
	for i, b := range sim.pdbs {
		allowed[i] = b.pdb.Status.DisruptionsAllowed - sim.pdbUsed[i]
	}
	return allowed
}

// splitByPDB splits pods, in order, into those whose eviction some PDB
// does not allow and the others, consuming allowed (per sim.pdbs) as it
// goes. A PDB with an empty selector matches nothing, and a pod the PDB
// already counts as disrupted does not consume it, as in kube-scheduler.
func (sim *simulation) splitByPDB(pods []*framework.TaskInfo, allowed []int32) (violating, ok []*framework.TaskInfo) {
	if len(sim.pdbs) == 0 {
		return nil, pods
	}
	for _, t := range pods {
		if sim.consumePDBs(t, allowed) {
			violating = append(violating, t)
		} else {
			ok = append(ok, t)
		}
	}
	return violating, ok
}

// consumePDBs takes pod's disruption from every PDB matching it and
// reports whether one of them had none left.
func (sim *simulation) consumePDBs(pod framework.PodMeta, allowed []int32) bool {
	violates := false
	for i, b := range sim.pdbs {
		if !b.matches(pod) {
			continue
		}
		allowed[i]--
		if allowed[i] < 0 {
			violates = true
		}
	}
	return violates
}

// budget is a PodDisruptionBudget with its selector parsed.
type budget struct {
	pdb *policyv1.PodDisruptionBudget
	// selector is nil for a PDB that matches nothing: an empty or invalid
	// selector.
	selector labels.Selector
}

// newBudgets parses the selectors of pdbs once per preemption.
func newBudgets(pdbs []*policyv1.PodDisruptionBudget) []budget {
	out := make([]budget, len(pdbs))
	for i, pdb := range pdbs {
		out[i].pdb = pdb
		if pdb.Spec.Selector == nil {
			continue
		}
		if sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector); err == nil && !sel.Empty() {
			out[i].selector = sel
		}
	}
	return out
}

// matches reports whether the budget counts a disruption of pod.
func (b budget) matches(pod framework.PodMeta) bool {
	if b.selector == nil || b.pdb.Namespace != pod.GetNamespace() {
		return false
	}
	if _, disrupted := b.pdb.Status.DisruptedPods[pod.GetName()]; disrupted {
		return false
	}
	return b.selector.Matches(labels.Set(pod.GetLabels()))
}

// better reports whether a is a better candidate than b, by
// kube-scheduler's criteria in order: fewer PDB violations, a lower
// highest victim priority, a lower sum of victim priorities, fewer
// victims, and a later start of the earliest-started victim among those
// of the highest priority. b nil loses.
func better(a, b *candidate) bool {
	if b == nil {
		return true
	}
	if a.violations != b.violations {
		return a.violations < b.violations
	}
	ra, rb := a.ranked(), b.ranked()
	if ra.highest != rb.highest {
		return ra.highest < rb.highest
	}
	if ra.sum != rb.sum {
		return ra.sum < rb.sum
	}
	if len(a.victims) != len(b.victims) {
		return len(a.victims) < len(b.victims)
	}
	return ra.earliest.After(rb.earliest)
}

func highest(ts []*framework.TaskInfo) int32 {
	h := int32(math.MinInt32)
	for _, t := range ts {
		h = max(h, t.Priority())
	}
	return h
}

// prioritySum adds the priorities shifted to be non-negative, so that
// many pods of a negative priority do not beat few of the same.
func prioritySum(ts []*framework.TaskInfo) int64 {
	var sum int64
	for _, t := range ts {
		sum += int64(t.Priority()) + math.MaxInt32 + 1
	}
	return sum
}

func earliestStart(ts []*framework.TaskInfo, priority int32) time.Time {
	var earliest time.Time
	for _, t := range ts {
		if t.Priority() != priority {
			continue
		}
		if s := startTime(t); earliest.IsZero() || s.Before(earliest) {
			earliest = s
		}
	}
	return earliest
}

// charge adds t's requests (sign 1) to, or takes them from (sign -1), what
// the victims take from t's budget group.
func (sim *simulation) charge(t *framework.TaskInfo, sign int64) {
	if sim.budget == nil {
		return
	}
	g := sim.budget.Group(t)
	if g == "" {
		return
	}
	taken := sim.taken[g]
	if taken == nil {
		taken = framework.ResourceAmounts{}
		sim.taken[g] = taken
	}
	for name, v := range framework.AmountsOf(t.QueueRequests()) {
		taken[name] += sign * v
	}
}

// withinBudget reports whether c's victims stay within sim's budget: taken
// job by job (a victim gang whole), each job's pods are taken only while
// their group's budget allows more, so a group loses at most one job
// beyond it.
func (sim *simulation) withinBudget(c *candidate) bool {
	if sim.budget == nil {
		return true
	}
	acc := map[string]framework.ResourceAmounts{}
	seen := map[framework.JobID]bool{}
	for _, t := range c.victims {
		g := sim.budget.Group(t)
		if g == "" {
			continue
		}
		if acc[g] == nil {
			acc[g] = maps.Clone(sim.taken[g])
			if acc[g] == nil {
				acc[g] = framework.ResourceAmounts{}
			}
		}
		if !seen[t.Job] {
			if !sim.budget.Allows(g, acc[g]) {
				return false
			}
			seen[t.Job] = true
		}
		for name, v := range framework.AmountsOf(t.QueueRequests()) {
			acc[g][name] += v
		}
	}
	return true
}
