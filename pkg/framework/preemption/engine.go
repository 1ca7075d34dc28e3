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
	"errors"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	policylisters "k8s.io/client-go/listers/policy/v1"
	"k8s.io/client-go/tools/events"
	k8smetrics "k8s.io/component-base/metrics"
	"k8s.io/klog/v2"

	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
	frameworkruntime "github.com/batch-scheduler/batch-scheduler/pkg/framework/runtime"
)

// Preemption results, the label of the preemption attempts metric.
const (
	// ResultPreempted: victims were chosen and their eviction started.
	ResultPreempted = "preempted"
	// ResultUnhelpful: the job does not fit even after preempting every
	// pod it may; nothing was evicted.
	ResultUnhelpful = "unhelpful"
	// ResultBorrowed: the job takes room that other preemptions'
	// victims leave; nothing more was evicted.
	ResultBorrowed = "borrowed"
	// ResultFailed: an eviction was refused or failed.
	ResultFailed = "failed"
	// ResultError: the simulation failed with an error.
	ResultError = "error"
)

// Snapshot is the scheduling cycle's view of the nodes, which the
// simulation changes and puts back (pkg/cache's Snapshot implements it).
type Snapshot interface {
	NodeInfos() []*framework.NodeInfo
	Get(name string) (*framework.NodeInfo, bool)
	// AddTask places a task (of the job the simulation places) on node.
	AddTask(node string, t *framework.TaskInfo) bool
	RemovePod(node string, uid types.UID) bool
}

// Nominator holds the room preemption made for pending pods and the
// victims each preemptor job waits for (pkg/schedulingqueue's Nominator,
// beside the scheduling queue, implements it).
type Nominator interface {
	// Nominate replaces job's nominations with placements (pod UID →
	// node) of pods, waiting for victims (UID → node).
	Nominate(job framework.JobID, priority int32, pods []*v1.Pod, placements map[string]string, victims map[types.UID]string)
	// Reserve replaces job's nominations with placements of pods that
	// hold room reserved as r says (no victims), the room the running
	// pods awaits (UID → node) free once they end.
	Reserve(job framework.JobID, priority int32, pods []*v1.Pod, placements map[string]string, r framework.Reservation, awaits map[types.UID]string)
	// GiveUp drops job's nominations, releases their room and returns
	// the pods whose status.nominatedNodeName is to be cleared.
	GiveUp(job framework.JobID) []*v1.Pod
	// Reservation returns the reservation job's nominations hold, if
	// any.
	Reservation(job framework.JobID) (framework.Reservation, bool)
	// Placements returns where job's pods are nominated, pod UID to
	// node.
	Placements(job framework.JobID) map[types.UID]string
	// NotGoing says that victims (UID → node) were not evicted after
	// all (refused, or never sent): they are no longer going.
	NotGoing(victims map[types.UID]string)
	// Borrow records that job's nominations, just made, take the room
	// the victims of other preemptions (UID → node) leave: job waits for
	// them, while they are still going, as for its own.
	Borrow(job framework.JobID, victims map[types.UID]string)
	// WaitingFor counts the victims of job's last preemption still on
	// their nodes (looked up by nodes), with those it borrowed that are
	// still going.
	WaitingFor(job framework.JobID, nodes func(name string) (*framework.NodeInfo, bool)) int
	// GoingVictims returns the victims of every preemption still taking
	// room on their nodes: terminating, or whose eviction is under way
	// but does not show yet.
	GoingVictims(nodes func(name string) (*framework.NodeInfo, bool)) []*framework.TaskInfo
}

// JobLister returns the scheduler cache's record of a job, a copy.
type JobLister interface {
	Job(id framework.JobID) (*framework.JobInfo, bool)
}

// TaskLister is what a JobLister may also do (the scheduler's cache
// does): list a job's tasks, and say what the victim rules read of the
// job (JobInfo.VictimFacts), without copying the job. The victim search
// asks it of every gang on every node it searches.
type TaskLister interface {
	JobTasks(id framework.JobID) ([]*framework.TaskInfo, framework.VictimFacts, bool)
}

// Background runs the API calls of a preemption off the scheduling loop.
type Background interface {
	// Go runs f on a goroutine the scheduler waits for when it stops.
	Go(f func())
	// Acquire takes a place in the bound the scheduler puts on its API
	// calls in flight (the binds'); release gives it back.
	Acquire() (release func())
}

// Metrics are the counters the engine updates; nil ones are not counted.
type Metrics struct {
	// Attempts counts preemption attempts by result (Result*).
	Attempts *k8smetrics.CounterVec
	// Victims counts the pods evicted, by the PostFilter plugin that
	// asked ("" when none said: see framework.PluginRoomMaker).
	Victims *k8smetrics.CounterVec
}

// Options are an Engine's collaborators. All but PDBLister and Metrics
// are required.
type Options struct {
	Client   kubernetes.Interface
	Recorder events.EventRecorder
	// PDBLister lists the PodDisruptionBudgets preemption avoids
	// violating; nil: preemption predicts none (the Eviction API still
	// enforces them).
	PDBLister  policylisters.PodDisruptionBudgetLister
	Snapshot   Snapshot
	Jobs       JobLister
	Nominator  Nominator
	Background Background
	Metrics    Metrics
}

// Engine is the preemption machinery of one scheduler: for a cycle whose
// job found no placement, it simulates evictions on the cycle's snapshot
// through the cycle's own filter path, chooses victims, nominates the
// job's pods to the room and evicts the victims. The scheduler builds one
// and hands each cycle's PostFilter plugins a RoomMaker of it; the
// plugins bring the policy (see Evaluator).
type Engine struct {
	opts Options
}

// New returns an Engine over opts.
func New(opts Options) (*Engine, error) {
	if opts.Client == nil || opts.Recorder == nil || opts.Snapshot == nil || opts.Jobs == nil || opts.Nominator == nil || opts.Background == nil {
		return nil, errors.New("creating the preemption engine: client, recorder, snapshot, jobs, nominator and background are required")
	}
	return &Engine{opts: opts}, nil
}

// Cycle is what the engine needs of one scheduling cycle.
type Cycle struct {
	// Framework is the job's profile: its filter path, Permit plugins
	// and PodPreFilterExtensions run the simulation.
	Framework *frameworkruntime.Framework
	State     *framework.CycleState
	// Job is the job the cycle could not place; its Priority is the
	// priority of its nominations.
	Job *framework.Job
	// Placements are the sets of nodes the simulation tries in turn for
	// the job, best first (a placement plan's room); a nil set means
	// every node, and no set at all leaves nothing to try.
	Placements [][]*framework.NodeInfo

	// fitsElsewhere records that a simulation found the job fits as the
	// cluster is, placed differently than the cycle placed it.
	fitsElsewhere bool
}

// FitsElsewhere reports whether MakeRoom found that the job fits without
// victims when placed its way (its pods are nominated there): no plugin
// rejected the job for good, so any event may help.
func (c *Cycle) FitsElsewhere() bool { return c.fitsElsewhere }

// RoomMaker returns the framework.RoomMaker of cycle c, which the
// scheduler hands to the PostFilter plugins.
func (e *Engine) RoomMaker(c *Cycle) framework.RoomMaker {
	return &roomMaker{e: e, c: c}
}

// roomMaker is the framework.RoomMaker of one cycle.
type roomMaker struct {
	e *Engine
	c *Cycle
	// jobs caches Job's lookups.
	jobs map[framework.JobID]*framework.JobInfo
	// sample bounds the victim search (WithSample); zero for every node.
	sample framework.CandidateSample
	// plugin is the PostFilter plugin served (ForPlugin), "" for none.
	plugin string
	// groupDisruption follows each victim gang's disruption mode
	// (WithGroupDisruption).
	groupDisruption bool
}

// WithSample implements framework.RoomMaker.
func (r *roomMaker) WithSample(sample framework.CandidateSample) framework.RoomMaker {
	c := *r
	c.sample = sample
	return &c
}

// ForPlugin implements framework.PluginRoomMaker.
func (r *roomMaker) ForPlugin(name string) framework.RoomMaker {
	c := *r
	c.plugin = name
	return &c
}

// WithGroupDisruption implements framework.DisruptionRoomMaker.
func (r *roomMaker) WithGroupDisruption() framework.RoomMaker {
	c := *r
	c.groupDisruption = true
	return &c
}

// Job implements framework.RoomMaker.
func (r *roomMaker) Job(id framework.JobID) (*framework.JobInfo, bool) {
	if j, ok := r.jobs[id]; ok {
		return j, j != nil
	}
	j, ok := r.e.opts.Jobs.Job(id)
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
	return r.e.makeRoom(ctx, r.c, SearchBounds{Victims: policy, Budget: budget, Sample: r.sample, GroupDisruption: r.groupDisruption}, r.plugin)
}

// Reserve implements framework.RoomMaker.
func (r *roomMaker) Reserve(ctx context.Context, policy framework.ReservePolicy) (framework.Reservation, error) {
	return r.e.reserve(ctx, r.c, policy)
}

// Release implements framework.RoomMaker.
func (r *roomMaker) Release(ctx context.Context, job framework.JobID) {
	// The cycle's snapshot holds the room of other jobs' nominations
	// (the scheduler put their pods there): what is released is free for
	// the rest of this cycle too.
	if job != r.c.Job.ID {
		for uid, node := range r.e.opts.Nominator.Placements(job) {
			r.e.opts.Snapshot.RemovePod(node, uid)
		}
	}
	r.e.GiveUp(ctx, job)
}

// SearchBounds are what a PostFilter plugin bounds the victim search
// with: which pods may go (Victims), how much each group may lose
// (Budget, nil for no bound), how many nodes to try (Sample, zero for
// every node) and whether a victim gang that lets its pods go one by one
// loses only those needed (GroupDisruption; otherwise every victim gang
// keeps its quorum or goes whole).
type SearchBounds struct {
	Victims         framework.VictimPolicy
	Budget          framework.VictimBudget
	Sample          framework.CandidateSample
	GroupDisruption bool
}

// makeRoom is MakeRoom for cycle c, asked by plugin.
func (e *Engine) makeRoom(ctx context.Context, c *Cycle, b SearchBounds, plugin string) (framework.RoomOutcome, error) {
	logger := klog.FromContext(ctx)
	snapshot, nominator := e.opts.Snapshot, e.opts.Nominator
	if c.Job.Err != nil || len(snapshot.NodeInfos()) == 0 {
		return framework.RoomOutcome{}, nil
	}
	if left := nominator.WaitingFor(c.Job.ID, snapshot.Get); left > 0 {
		// The last preemption's victims are still going: preempting more
		// now would take too much.
		logger.V(3).Info("Waiting for preempted pods to go", "victims", left)
		return framework.RoomOutcome{Waiting: left}, nil
	}
	going := newGoingSet(nominator.GoingVictims(snapshot.Get))
	if !anyEligible(snapshot.NodeInfos(), c.Job.ID, b.Victims, going.uids) {
		// The common case of a cluster of one priority: nothing to try.
		e.count(ResultUnhelpful)
		e.giveUpUnlessReserved(ctx, c.Job.ID)
		return framework.RoomOutcome{}, nil
	}
	res, err := e.simulate(ctx, c, b, going, nil)
	if err != nil {
		e.count(ResultError)
		return framework.RoomOutcome{}, err
	}
	if res.Fits && len(res.Victims) == 0 && len(res.Borrowed) == 0 {
		// The job fits without preemption, placed the simulation's way
		// (first feasible node) rather than the cycle's (best score): the
		// next cycle follows these placements; any event retries it.
		nominator.Nominate(c.Job.ID, c.Job.Priority, res.Placed, res.Placements, nil)
		c.fitsElsewhere = true
		logger.V(2).Info("Job fits without preemption when placed differently; nominating its pods", "placements", len(res.Placements))
		return framework.RoomOutcome{Fits: true}, nil
	}
	if !res.Fits {
		e.count(ResultUnhelpful)
		e.giveUpUnlessReserved(ctx, c.Job.ID)
		logger.V(2).Info("Preemption cannot make room for the job", "priority", c.Job.Priority)
		return framework.RoomOutcome{}, nil
	}
	victims := map[types.UID]string{}
	for _, v := range res.Victims {
		victims[v.Task.GetUID()] = v.Task.NodeName
	}
	nominator.Nominate(c.Job.ID, c.Job.Priority, res.Placed, res.Placements, victims)
	nominator.Borrow(c.Job.ID, res.Borrowed)
	if len(res.Victims) == 0 {
		// Other preemptions' victims leave room enough: the job waits
		// for them rather than evicting more (a victim gang that goes
		// whole frees room on many nodes, far beyond what its preemptor
		// needs). Only the pods' nominated nodes are written.
		e.count(ResultBorrowed)
		logger.V(2).Info("Job takes the room other preemptions' victims leave; waiting for them", "borrowed", len(res.Borrowed), "placements", len(res.Placements))
		e.executePreemption(ctx, c.Job.ID, res, plugin)
		return framework.RoomOutcome{Fits: true, Waiting: len(res.Borrowed)}, nil
	}
	e.count(ResultPreempted)
	logger.V(2).Info("Preempting pods to make room for the job", "victims", len(res.Victims), "borrowed", len(res.Borrowed), "placements", len(res.Placements))
	e.executePreemption(ctx, c.Job.ID, res, plugin)
	return framework.RoomOutcome{Fits: true, Victims: len(res.Victims)}, nil
}

// giveUpUnlessReserved drops job's nominations unless they hold a
// reservation: a PostFilter plugin that finds no victims does not undo
// the room an earlier one reserved.
func (e *Engine) giveUpUnlessReserved(ctx context.Context, job framework.JobID) {
	if _, ok := e.opts.Nominator.Reservation(job); ok {
		return
	}
	e.GiveUp(ctx, job)
}

// count counts an attempt with result.
func (e *Engine) count(result string) {
	if e.opts.Metrics.Attempts != nil {
		e.opts.Metrics.Attempts.WithLabelValues(result).Inc()
	}
}

// anyEligible reports whether some bound pod of another job on nodes,
// neither terminating nor going, may be a victim by policy: without one,
// making room cannot help.
func anyEligible(nodes []*framework.NodeInfo, job framework.JobID, policy framework.VictimPolicy, going map[types.UID]bool) bool {
	for _, n := range nodes {
		for _, t := range n.Pods {
			if t.Counted && t.Status == framework.TaskBound && t.GetDeletionTimestamp() == nil && !going[t.GetUID()] && t.Job != job && policy(t) {
				return true
			}
		}
	}
	return false
}
