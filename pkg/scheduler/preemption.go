package scheduler

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"sort"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
)

// Preemption results, the label of the preemption attempts metric.
const (
	// preemptionPreempted: victims were chosen and their eviction started.
	preemptionPreempted = "preempted"
	// preemptionUnhelpful: the job does not fit even after preempting
	// every pod it may; nothing was evicted.
	preemptionUnhelpful = "unhelpful"
	// preemptionFailed: an eviction was refused or failed.
	preemptionFailed = "failed"
	// preemptionError: the simulation failed with an error.
	preemptionError = "error"
)

// simulation is one attempt to make room for a cycle's job: it places the
// job's pending pods in the snapshot one after the other, each where it
// fits as it is or else on the node where the cheapest set of victims
// makes room, taking the victims off the snapshot as it goes. Every change
// is logged so that restore puts the snapshot back.
type simulation struct {
	s        *Scheduler
	c        *cycle
	priority int32
	// policy says which pods may be victims (the PostFilter plugin's).
	policy framework.VictimPolicy
	pdbs   []budget
	// pdbUsed counts, per entry of pdbs, the disruptions of the chosen
	// victims.
	pdbUsed []int32
	// jobs caches the cache's JobInfos.
	jobs map[framework.JobID]*framework.JobInfo
	// victims are the chosen victims by UID; gangVictims counts them per
	// gang.
	victims     map[types.UID]*plannedVictim
	order       []*plannedVictim
	gangVictims map[framework.JobID]int
	placements  map[string]string
	placed      []*v1.Pod
	undo        []func()
	// nodes are the nodes the job's pods may take (one placement of the
	// cycle's plan), nil for all.
	nodes []*framework.NodeInfo
	// going are the pods other jobs' preemptions are evicting that have
	// not started terminating: no longer victims to choose.
	going map[types.UID]bool
	// budget, if set, bounds what the victims take from each group; taken
	// sums, per group, the requests of the victims chosen so far and of
	// the going pods.
	budget framework.VictimBudget
	taken  map[string]framework.ResourceAmounts
	// sample bounds how many candidate nodes each pod's search finds.
	sample framework.CandidateSample
}

// plannedVictim is a pod to evict and the preemptor pod it makes room for.
type plannedVictim struct {
	task      *framework.TaskInfo
	preemptor *v1.Pod
	// node is the node the preemptor is nominated to.
	node string
	// violatesPDB is the prediction that a PDB refuses its eviction.
	violatesPDB bool
}

// postFilter runs after a cycle found no placement for c's job (no pod,
// or fewer than its quorum, placed; the cycle's placements are undone):
// the profile's PostFilter plugins may make room, and what they did ends
// the pods' unschedulable messages (c.preemption). The job is parked by
// the caller either way; the victims' deletion brings it back.
func (s *Scheduler) postFilter(ctx context.Context, c *cycle) {
	if !c.fwk.HasPostFilterPlugins() {
		return
	}
	res, st, waitOn := c.fwk.RunPostFilterPlugins(ctx, c.state, c.job, &roomMaker{s: s, c: c})
	if !st.IsSuccess() && !st.IsRejected() {
		klog.FromContext(ctx).Error(st.AsError(), "PostFilter failed")
	}
	if st.IsRejected() {
		// Every plugin declined: what those that may change their mind
		// wait for (Reclaim's queue shares moving, say) may help the job
		// too.
		for _, name := range waitOn {
			c.rejectedBy[name] = true
		}
	}
	if res != nil {
		c.preemption = res.Message
	}
}

// roomMaker is the framework.RoomMaker of one cycle.
type roomMaker struct {
	s *Scheduler
	c *cycle
	// jobs caches Job's lookups.
	jobs map[framework.JobID]*framework.JobInfo
	// sample bounds the victim search (WithSample); zero for every node.
	sample framework.CandidateSample
}

// WithSample implements framework.RoomMaker.
func (r *roomMaker) WithSample(sample framework.CandidateSample) framework.RoomMaker {
	return &roomMaker{s: r.s, c: r.c, jobs: r.jobs, sample: sample}
}

// Job implements framework.RoomMaker.
func (r *roomMaker) Job(id framework.JobID) (*framework.JobInfo, bool) {
	if j, ok := r.jobs[id]; ok {
		return j, j != nil
	}
	j, ok := r.s.cache.Job(id)
	if r.jobs == nil {
		r.jobs = map[framework.JobID]*framework.JobInfo{}
	}
	if !ok {
		j = nil
	}
	r.jobs[id] = j
	return j, ok
}

// MakeRoom implements framework.RoomMaker.
func (r *roomMaker) MakeRoom(ctx context.Context, policy framework.VictimPolicy) (framework.RoomOutcome, error) {
	return r.MakeRoomWithin(ctx, policy, nil)
}

// MakeRoomWithin implements framework.RoomMaker.
func (r *roomMaker) MakeRoomWithin(ctx context.Context, policy framework.VictimPolicy, budget framework.VictimBudget) (framework.RoomOutcome, error) {
	if policy == nil {
		return framework.RoomOutcome{}, errors.New("making room: no victim policy")
	}
	return r.s.makeRoom(ctx, r.c, policy, budget, r.sample)
}

// makeRoom is MakeRoom for cycle c.
func (s *Scheduler) makeRoom(ctx context.Context, c *cycle, policy framework.VictimPolicy, budget framework.VictimBudget, sample framework.CandidateSample) (framework.RoomOutcome, error) {
	logger := klog.FromContext(ctx)
	if c.job.Err != nil || len(s.snapshot.NodeInfos()) == 0 {
		return framework.RoomOutcome{}, nil
	}
	if left := s.nominated.waitingFor(c.job.ID, s.snapshot); left > 0 {
		// The last preemption's victims are still going: preempting more
		// now would take too much.
		logger.V(3).Info("Waiting for preempted pods to go", "victims", left)
		return framework.RoomOutcome{Waiting: left}, nil
	}
	going := s.nominated.goingVictims(s.snapshot)
	goingUIDs := make(map[types.UID]bool, len(going))
	for _, t := range going {
		goingUIDs[t.Pod.UID] = true
	}
	if !anyEligible(s.snapshot.NodeInfos(), c.job.ID, policy, goingUIDs) {
		// The common case of a cluster of one priority: nothing to try.
		s.metrics.PreemptionAttempts.WithLabelValues(preemptionUnhelpful).Inc()
		s.giveUp(ctx, c.job.ID)
		return framework.RoomOutcome{}, nil
	}
	res, err := s.simulate(ctx, c, searchBounds{policy: policy, budget: budget, sample: sample}, going, goingUIDs)
	ok, order, placed, placements := res.ok, res.order, res.placed, res.placements
	if err != nil {
		s.metrics.PreemptionAttempts.WithLabelValues(preemptionError).Inc()
		return framework.RoomOutcome{}, err
	}
	if ok && len(order) == 0 {
		// The job fits without preemption, placed the simulation's way
		// (first feasible node) rather than the cycle's (best score): the
		// next cycle follows these placements; any event retries it.
		s.nominated.nominate(c.job.ID, c.qj.Priority, placed, placements, nil)
		c.noNodes = true
		logger.V(2).Info("Job fits without preemption when placed differently; nominating its pods", "placements", len(placements))
		return framework.RoomOutcome{Fits: true}, nil
	}
	if !ok {
		s.metrics.PreemptionAttempts.WithLabelValues(preemptionUnhelpful).Inc()
		s.giveUp(ctx, c.job.ID)
		logger.V(2).Info("Preemption cannot make room for the job", "priority", c.qj.Priority)
		return framework.RoomOutcome{}, nil
	}
	victims := map[types.UID]string{}
	for _, v := range order {
		victims[v.task.Pod.UID] = v.task.NodeName
	}
	s.nominated.nominate(c.job.ID, c.qj.Priority, placed, placements, victims)
	s.metrics.PreemptionAttempts.WithLabelValues(preemptionPreempted).Inc()
	logger.V(2).Info("Preempting pods to make room for the job", "victims", len(order), "placements", len(placements))
	s.executePreemption(ctx, c.job.ID, placed, placements, order)
	return framework.RoomOutcome{Fits: true, Victims: len(order)}, nil
}

// simulationResult is what a simulation found: whether the job can start
// (ok), the victims in the order chosen, and the job's pods placed with
// their nodes (pod UID to node name).
type simulationResult struct {
	ok         bool
	order      []*plannedVictim
	placed     []*v1.Pod
	placements map[string]string
}

// searchBounds are what the PostFilter plugin bounds the victim search
// with: which pods may go (policy), how much each group may lose (budget,
// nil for no bound) and how many nodes to try (sample).
type searchBounds struct {
	policy framework.VictimPolicy
	budget framework.VictimBudget
	sample framework.CandidateSample
}

// simulate runs the victim search for c's job on the snapshot, within b,
// with the going pods (goingUIDs, their UIDs) already counted as leaving.
// It tries each placement of the cycle's plan in turn, and puts the
// snapshot back as it was before returning.
func (s *Scheduler) simulate(ctx context.Context, c *cycle, b searchBounds,
	going []*framework.TaskInfo, goingUIDs map[types.UID]bool) (simulationResult, error) {
	sim := &simulation{s: s, c: c, priority: c.qj.Priority, policy: b.policy, jobs: map[framework.JobID]*framework.JobInfo{},
		victims: map[types.UID]*plannedVictim{}, gangVictims: map[framework.JobID]int{}, placements: map[string]string{},
		budget: b.budget, taken: map[string]framework.ResourceAmounts{}, going: goingUIDs, sample: b.sample}
	for _, t := range going {
		sim.charge(t, 1)
	}
	// Plugins that keep state of running pods (DynamicResources: the
	// devices of their claims) treat a running pod the simulation takes
	// off the snapshot as gone.
	framework.MarkEvictionSimulation(c.state)
	defer framework.UnmarkEvictionSimulation(c.state)
	if s.opts.PDBLister != nil {
		pdbs, err := s.opts.PDBLister.List(labels.Everything())
		if err != nil {
			klog.FromContext(ctx).Error(err, "Listing PodDisruptionBudgets for preemption; going on without them")
		}
		sim.pdbs = newBudgets(pdbs)
		sim.pdbUsed = make([]int32, len(pdbs))
	}
	var ok bool
	var err error
	for _, nodes := range c.roomPlacements() {
		// Each placement of a plan is tried on the snapshot as it is.
		mark := len(sim.undo)
		sim.nodes = nodes
		if ok, err = sim.run(ctx); ok || err != nil {
			break
		}
		sim.rollback(mark)
	}
	res := simulationResult{ok: ok, order: slices.Clone(sim.order), placed: slices.Clone(sim.placed), placements: maps.Clone(sim.placements)}
	sim.rollback(0)
	return res, err
}

// anyEligible reports whether some bound pod of another job on nodes,
// neither terminating nor going, may be a victim by policy: without one,
// making room cannot help.
func anyEligible(nodes []*framework.NodeInfo, job framework.JobID, policy framework.VictimPolicy, going map[types.UID]bool) bool {
	for _, n := range nodes {
		for _, t := range n.Pods {
			if t.Counted && t.Status == framework.TaskBound && t.Pod.DeletionTimestamp == nil && !going[t.Pod.UID] && t.Job != job && policy(t) {
				return true
			}
		}
	}
	return false
}

// run places the job's pending pods, preempting where needed, and reports
// whether the job could start: the Permit plugins accept the placements.
func (sim *simulation) run(ctx context.Context) (bool, error) {
	for _, pod := range sim.c.job.Pending {
		if err := sim.placePod(ctx, pod); err != nil {
			return false, err
		}
	}
	if len(sim.placed) == 0 {
		return false, nil
	}
	st := sim.c.fwk.RunPermitPlugins(ctx, sim.c.state, sim.c.job, sim.placements)
	if st.IsSuccess() {
		return true, nil
	}
	if st.IsRejected() {
		return false, nil
	}
	return false, fmt.Errorf("permit after preemption: %w", st.AsError())
}

// placePod places pod where it fits as the snapshot is, or else on the
// best node where victims make room; a pod that fits nowhere even so is
// left out.
func (sim *simulation) placePod(ctx context.Context, pod *v1.Pod) error {
	fwk, all := sim.c.fwk, sim.s.snapshot.NodeInfos()
	nodes := all
	if sim.nodes != nil {
		nodes = sim.nodes
	}
	var (
		statuses  map[string]*framework.Status
		preFilter *framework.Status
	)
	if fwk.HasPodPreFilterPlugins() {
		preFilter = fwk.RunPreFilterPodPlugins(ctx, sim.c.state, pod, all)
		if !preFilter.IsSuccess() && !preFilter.IsRejected() {
			return fmt.Errorf("pre-filter for pod %s: %w", podKey(pod), preFilter.AsError())
		}
	}
	rejected := preFilter.IsRejected()
	if !rejected {
		feasible, diagnosis, err := fwk.FindFeasibleNodes(ctx, sim.c.state, pod, nodes)
		if err != nil {
			return fmt.Errorf("filtering nodes for pod %s: %w", podKey(pod), err)
		}
		if len(feasible) > 0 {
			sim.add(feasible[0].Name(), pod)
			return nil
		}
		statuses = diagnosis.NodeToStatus
	}
	// The state PreFilterPod just left for pod, over the snapshot with
	// every candidate victim on its node, is what each candidate node's
	// search starts from (see podFit).
	pf := sim.newPodFit(ctx, pod, preFilter)
	var best *candidate
	limit, found, offset := sim.sample.Limit(len(nodes)), 0, 0
	if limit < len(nodes) {
		// A sample starts at a random node, so that successive
		// preemptions spread over the cluster.
		offset = rand.IntN(len(nodes))
	}
	for i := range nodes {
		if found == limit {
			break
		}
		node := nodes[(offset+i)%len(nodes)]
		if st := statuses[node.Name()]; st != nil && st.Code() == framework.UnschedulableAndUnresolvable {
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
		sim.expandGangs(cand)
		if !sim.withinBudget(cand) {
			continue
		}
		found++
		if better(cand, best) {
			best = cand
		}
	}
	if best == nil {
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
	v := &plannedVictim{task: t, preemptor: pod, node: node, violatesPDB: sim.consumePDBs(t.Pod, allowed)}
	sim.victims[t.Pod.UID] = v
	sim.order = append(sim.order, v)
	if t.Job.Gang {
		sim.gangVictims[t.Job]++
	}
	var used []int
	for i, b := range sim.pdbs {
		if b.matches(t.Pod) {
			sim.pdbUsed[i]++
			used = append(used, i)
		}
	}
	removed := sim.s.snapshot.RemovePod(t.NodeName, t.Pod.UID)
	sim.charge(t, 1)
	sim.undo = append(sim.undo, func() {
		sim.charge(t, -1)
		if removed {
			if ni, ok := sim.s.snapshot.Get(t.NodeName); ok {
				ni.AddTask(t)
			}
		}
		for _, i := range used {
			sim.pdbUsed[i]--
		}
		if t.Job.Gang {
			sim.gangVictims[t.Job]--
		}
		delete(sim.victims, t.Pod.UID)
		sim.order = sim.order[:len(sim.order)-1]
	})
	if !removed {
		return nil, false
	}
	ni, _ := sim.s.snapshot.Get(t.NodeName)
	return ni, true
}

// add places pod on node in the snapshot.
func (sim *simulation) add(node string, pod *v1.Pod) {
	sim.s.snapshot.AddPod(node, pod)
	sim.placements[string(pod.UID)] = node
	sim.placed = append(sim.placed, pod)
	sim.undo = append(sim.undo, func() {
		sim.s.snapshot.RemovePod(node, pod.UID)
		delete(sim.placements, string(pod.UID))
		sim.placed = sim.placed[:len(sim.placed)-1]
	})
}

// rollback undoes the changes after the first mark ones, newest first.
func (sim *simulation) rollback(mark int) {
	for i := len(sim.undo) - 1; i >= mark; i-- {
		sim.undo[i]()
	}
	sim.undo = sim.undo[:mark]
}

// sortedVictims returns victims in the order they are evicted: those a
// PDB is predicted to protect first, so that a refusal stops the
// preemption before anything else goes; then job by job, so that the
// evictions of one victim gang are sent together and the gang spends as
// little time below its quorum as its own evictions take, not as long as
// the whole preemption's (a plan lists its victims node by node, and a
// gang spread over many nodes would otherwise lose its pods from the
// first call to the last); within a job, by node and name.
func sortedVictims(victims []*plannedVictim) []*plannedVictim {
	out := append([]*plannedVictim(nil), victims...)
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.violatesPDB != b.violatesPDB {
			return a.violatesPDB
		}
		if a.task.Job != b.task.Job {
			return a.task.Job.String() < b.task.Job.String()
		}
		if a.task.NodeName != b.task.NodeName {
			return a.task.NodeName < b.task.NodeName
		}
		return podKey(a.task.Pod) < podKey(b.task.Pod)
	})
	return out
}
