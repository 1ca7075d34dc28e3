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
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/batch-scheduler/batch-scheduler/pkg/framework/preemption"
	frameworkruntime "github.com/batch-scheduler/batch-scheduler/pkg/framework/runtime"
	"github.com/batch-scheduler/batch-scheduler/pkg/schedulingqueue"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	policylisters "k8s.io/client-go/listers/policy/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"

	"github.com/batch-scheduler/batch-scheduler/pkg/cache"
	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
)

// Options configure a Scheduler.
type Options struct {
	Cache  Cache
	Queue  Queue
	Client kubernetes.Interface
	// Profiles maps each scheduler name to its framework. A pod whose
	// spec.schedulerName has no profile is not scheduled (the cache only
	// queues pods of our names, so this is a configuration error caught at
	// start-up).
	Profiles map[string]*frameworkruntime.Framework
	Recorder events.EventRecorder
	Metrics  *Metrics
	// PDBLister lists the PodDisruptionBudgets preemption avoids
	// violating; nil: preemption predicts none (the Eviction API still
	// enforces them).
	PDBLister policylisters.PodDisruptionBudgetLister

	// BindConcurrency is the most bind calls (with the status writes and
	// evictions that share the budget) in flight (default
	// DefaultBindConcurrency). Below it the bound adapts: it starts at 16,
	// grows while calls succeed with the bound in full use, and halves
	// when the API server answers 429 or 5xx or a call times out (see
	// bindLimiter).
	BindConcurrency int
	// BindAttempts is how often a failing bind is tried before it is
	// rolled back (default 3), waiting BindBackoff, doubled each time
	// (default 100ms), in between.
	BindAttempts int
	BindBackoff  time.Duration

	// PercentageOfNodesToScore is the share of the nodes a pod's Filter
	// and Score look at in clusters of more than 100 nodes, as
	// kube-scheduler's percentageOfNodesToScore: 0 (the default) adapts
	// it to the cluster (50% less 1% per 125 nodes, at least 5% and at
	// least 100 nodes), 100 looks at every node. See nodeWindow.
	PercentageOfNodesToScore int
	// ProfilePercentageOfNodesToScore overrides PercentageOfNodesToScore
	// for the profiles (scheduler names) it lists.
	ProfilePercentageOfNodesToScore map[string]int
	// NoRankingReuse makes every pod filter and score its window of nodes
	// afresh, even one alike to the pod placed before it (see ranking):
	// for comparison, and as a way out should a plugin claim
	// framework.NodeLocal wrongly.
	NoRankingReuse bool
}

// DefaultBindConcurrency is the default of Options.BindConcurrency: enough
// binds in flight to keep an API server busy (on 2 cores the raw binding
// rate is best at 16 to 64 callers); an API server that cannot take them
// answers 429 (priority and fairness) and the bound adapts down.
const DefaultBindConcurrency = 64

// Scheduler is the scheduling loop.
type Scheduler struct {
	opts     Options
	cache    Cache
	queue    Queue
	snapshot *cache.Snapshot
	metrics  *Metrics
	// attempts caches children of metrics (see attemptTimers).
	attempts attemptTimers
	// nominated holds the room preemption made for pending pods.
	nominated *schedulingqueue.Nominator
	// victimWait is how long a job whose quorum waits for its
	// preemption's victims is parked without a placement tried (see
	// awaitVictims); 0 tries every retry whole.
	victimWait time.Duration
	// preemption is the preemption library's engine, whose RoomMaker the
	// PostFilter plugins make room through.
	preemption *preemption.Engine
	// ignored remembers the pods told about ignored annotations.
	ignored *ignoredReports
	// conditions writes the pending pods' PodScheduled conditions.
	conditions *conditionWriter
	// events leaves out FailedScheduling events that repeat the last.
	events *eventGate
	// standing is where the pending jobs stand (standing.go).
	standing *standings

	// binds bounds concurrent binds (and status updates and evictions);
	// bindWG waits for them on shutdown.
	binds  *bindLimiter
	bindWG sync.WaitGroup
	// nextStartNode is where the next pod's window of nodes starts
	// (nodeWindow); window is that window's buffer. Only the loop
	// uses them.
	nextStartNode int
	window        []*framework.NodeInfo
	// ranking is the ranking of nodes of the last pod placed, for the
	// next pod alike to it (ranking.go); nil when there is none to reuse.
	// Only the loop uses it. spareRanking is the last ranking built, whose
	// memory the next one reuses.
	ranking, spareRanking *ranking
	// pendingBinds counts the pods assumed whose bind has not finished;
	// bindDone gets a token (if it has room) each time one finishes. The
	// loop waits for room before it pops a job (see waitForBindRoom).
	pendingBinds atomic.Int64
	bindDone     chan struct{}
}

// New validates opts and returns a Scheduler.
func New(opts Options) (*Scheduler, error) {
	if opts.Cache == nil || opts.Queue == nil || opts.Client == nil || opts.Recorder == nil {
		return nil, errors.New("creating the scheduler: cache, queue, client and event recorder are required")
	}
	if len(opts.Profiles) == 0 {
		return nil, errors.New("creating the scheduler: no profiles")
	}
	if opts.BindConcurrency <= 0 {
		opts.BindConcurrency = DefaultBindConcurrency
	}
	if opts.BindAttempts <= 0 {
		opts.BindAttempts = 3
	}
	if opts.BindBackoff <= 0 {
		opts.BindBackoff = 100 * time.Millisecond
	}
	if opts.Metrics == nil {
		m, err := NewMetrics(nil)
		if err != nil {
			return nil, err
		}
		opts.Metrics = m
	}
	s := &Scheduler{
		opts:       opts,
		cache:      opts.Cache,
		queue:      opts.Queue,
		snapshot:   cache.NewSnapshot(),
		metrics:    opts.Metrics,
		attempts:   newAttemptTimers(opts.Profiles),
		nominated:  schedulingqueue.NewNominator(opts.Queue),
		victimWait: defaultVictimWait,
		ignored:    newIgnoredReports(),
		standing:   newStandings(opts.Queue),
		binds:      newBindLimiter(opts.BindConcurrency, func(limit int) { opts.Metrics.BindLimit.Set(float64(limit)) }),
		bindDone:   make(chan struct{}, 1),
	}
	s.conditions = newConditionWriter(s)
	s.events = newEventGate()
	engine, err := preemption.New(preemption.Options{Client: opts.Client, Recorder: opts.Recorder, PDBLister: opts.PDBLister,
		Snapshot: s.snapshot, Jobs: opts.Cache, Nominator: s.nominated, Background: background{s: s},
		Metrics: preemption.Metrics{Attempts: opts.Metrics.PreemptionAttempts, Victims: opts.Metrics.PreemptionVictims}})
	if err != nil {
		return nil, fmt.Errorf("creating the scheduler: %w", err)
	}
	s.preemption = engine
	return s, nil
}

// Run schedules jobs until ctx is done, then waits for binds in flight.
func (s *Scheduler) Run(ctx context.Context) {
	logger := klog.FromContext(ctx)
	logger.Info("Starting the scheduling loop", "profiles", len(s.opts.Profiles))
	wait.UntilWithContext(ctx, s.scheduleOne, 0)
	s.bindWG.Wait()
	logger.Info("Scheduling loop stopped")
}

// cycle is the state of one scheduling cycle.
type cycle struct {
	qj      *framework.QueuedJob
	job     *framework.Job
	fwk     *frameworkruntime.Framework
	profile string
	state   *framework.CycleState
	start   time.Time

	// placements maps pod UID to node; placed lists the pods in order.
	placements map[string]string
	placed     []*v1.Pod
	// failures maps the key of each pod that found no node to why.
	failures map[string]string
	// rejectedBy collects the plugins that rejected something.
	rejectedBy map[string]bool
	// noNodes records that a pod found no node to try at all: no plugin
	// rejected it, so any event may help.
	noNodes bool
	// preemption says what preemption did for the job, when it did
	// something; it ends each pod's message.
	preemption string
	// unresolvable records a rejection that no change of room helps
	// (UnschedulableAndUnresolvable at PreFilter, Reserve or Permit).
	unresolvable bool
	// plan is the placement plan of the PlacementPlugin planBy, nil when
	// the job is placed over all nodes; nodes are the nodes of the
	// placement being tried (nil: all), placement its name once one was
	// admitted.
	plan      *framework.PlacementPlan
	planBy    string
	nodes     []*framework.NodeInfo
	placement string

	// miss is the last pod of the attempt that fit nowhere; changes
	// counts the placements the cycle made and undid. A pod the profile
	// judges alike to miss's gets its verdict without filtering as long
	// as changes has not moved and the candidate nodes are the same.
	miss    *podMiss
	changes int
}

// scheduleOne runs one cycle: pop a job, place it, assume and bind or
// report why not.
//
// Every log line of the cycle, the plugins' included, carries the job: the
// cycle's context holds a logger with its key, and so do the binds it
// starts.
func (s *Scheduler) scheduleOne(ctx context.Context) {
	if !s.waitForBindRoom(ctx) {
		return
	}
	qj, err := s.queue.Pop(ctx)
	if err != nil {
		if ctx.Err() == nil {
			klog.FromContext(ctx).Error(err, "Popping a job from the scheduling queue")
		}
		return
	}
	logger := klog.FromContext(ctx).WithValues("job", qj.ID.String())
	ctx = klog.NewContext(ctx, logger)
	c, err := s.newCycle(qj)
	if err != nil {
		logger.Error(err, "Cannot schedule job")
		s.requeue(ctx, c, qj, err)
		return
	}
	if c == nil {
		// Nothing left to place (every pod was bound or assumed meanwhile).
		s.queue.Done(qj.ID)
		return
	}
	s.reportIgnoredSignals(ctx, c.job.Pending, c.job.RuntimeBounds)
	logger.V(3).Info("Attempting to schedule job", "pending", len(c.job.Pending), "bound", c.job.Bound, "minAvailable", c.job.MinAvailable)

	if err := s.cache.UpdateSnapshot(s.snapshot); err != nil {
		s.requeue(ctx, c, qj, fmt.Errorf("updating the snapshot: %w", err))
		return
	}
	if s.awaitVictims(ctx, c) {
		return
	}
	s.holdNominated(ctx, c)
	if st := c.fwk.RunPreFilterPlugins(ctx, c.state, c.job); !st.IsSuccess() {
		if st.IsRejected() {
			c.noteRejection(st)
			s.unschedulable(ctx, c, st.Message())
			return
		}
		s.requeue(ctx, c, qj, fmt.Errorf("pre-filter: %w", st.AsError()))
		return
	}

	plan, planBy, st := c.fwk.RunPlacementPlugins(ctx, c.state, c.job, s.snapshot.NodeInfos())
	if !st.IsSuccess() {
		if st.IsRejected() {
			c.noteRejection(st)
			s.unschedulable(ctx, c, st.Message())
			return
		}
		s.requeue(ctx, c, qj, fmt.Errorf("placement: %w", st.AsError()))
		return
	}
	c.plan, c.planBy = plan, planBy

	st, err = s.placeJob(ctx, c)
	if err != nil {
		s.requeue(ctx, c, qj, err)
		return
	}
	if !st.IsSuccess() {
		c.noteRejection(st)
		s.postFilter(ctx, c)
		s.unschedulable(ctx, c, st.Message())
		return
	}
	if len(c.placed) == 0 {
		// Permit let an empty placement through (no plugin enforces
		// min-available): nothing fits.
		s.postFilter(ctx, c)
		s.unschedulable(ctx, c, "")
		return
	}
	s.nominated.Placed(c.job.ID, c.placed)
	s.started(c.job.ID, time.Now())
	s.assumeAndBind(ctx, c)
}

// pluginMetricsSampleShare is the share of cycles whose plugin calls are
// timed (batch_scheduler_plugin_execution_duration_seconds): enough for
// percentiles within minutes on a busy scheduler, without timing every
// Filter call on every node.
const pluginMetricsSampleShare = 0.1

// newCycle builds the cycle for qj; nil when nothing is left to place.
// The job's pods come from the cache (Cache.CycleJob), the one home of
// pending pods; qj only says which job the queue chose.
func (s *Scheduler) newCycle(qj *framework.QueuedJob) (*cycle, error) {
	job, ok := s.cache.CycleJob(qj.ID)
	if !ok {
		return nil, nil
	}
	job.Priority, job.Since = qj.Priority, qj.InitialTimestamp
	profile := job.Pending[0].Spec.SchedulerName
	fwk, ok := s.opts.Profiles[profile]
	state := framework.NewCycleState()
	state.SetRecordPluginMetrics(rand.Float64() < pluginMetricsSampleShare)
	// The snapshot tells plugins, for every node at once, whether any
	// pod with pod (anti-)affinity may be there.
	framework.WriteAffinityCensus(state, s.snapshot)
	c := &cycle{qj: qj, job: job, fwk: fwk, profile: profile, state: state, start: time.Now(),
		placements: map[string]string{}, failures: map[string]string{}, rejectedBy: map[string]bool{}}
	if !ok {
		return c, fmt.Errorf("no profile for scheduler name %q", profile)
	}
	return c, nil
}

// placePod filters and scores the nodes for pod and reserves the best one.
// A pod that fits nowhere is recorded in c.failures; only errors are
// returned.
func (s *Scheduler) placePod(ctx context.Context, c *cycle, pod *v1.Pod) error {
	all := s.snapshot.NodeInfos()
	nodes := c.candidateNodes(all)
	if len(nodes) == 0 {
		c.failures[podKey(pod)] = "no nodes available to schedule pods"
		c.noNodes = true
		return nil
	}
	if m := c.miss; m != nil && m.changes == c.changes && framework.SameNodes(m.nodes, nodes) && c.fwk.Alike(m.pod, pod) {
		// Nothing changed since a pod the plugins cannot tell from this
		// one fit nowhere: neither does this one.
		klog.FromContext(ctx).V(5).Info("Pod alike to one that fit nowhere; not filtered again", "pod", klog.KObj(pod), "like", klog.KObj(m.pod))
		c.failures[podKey(pod)] = m.failure
		return nil
	}
	if node, ok := s.reuseRanking(ctx, c, pod, all); ok {
		return s.reserve(ctx, c, pod, node)
	}
	// The nodes hold the job's pods placed so far in this cycle; the
	// per-pod PreFilter plugins count what they look at over the whole
	// cluster (a spread over zones, say), whichever nodes the pod may take.
	found, err := c.fwk.FilterPod(ctx, c.state, pod, frameworkruntime.FilterScope{All: all, Nodes: c.nodes, First: s.nodeWindow(c, pod, nodes), Lookup: s.snapshot.Get})
	if err != nil {
		return err
	}
	if st := found.PreFilter; st != nil {
		// As kube-scheduler words a PreFilter rejection.
		c.failures[podKey(pod)] = fmt.Sprintf("0/%d nodes are available: %s.", len(nodes), st.Message())
		c.noteRejection(st)
		c.noteMiss(pod, nodes)
		return nil
	}
	feasible, diagnosis := found.Feasible, found.Diagnosis
	if len(feasible) == 0 {
		c.failures[podKey(pod)] = diagnosis.Message(len(nodes))
		for _, name := range diagnosis.RejectingPlugins() {
			c.rejectedBy[name] = true
		}
		c.noteMiss(pod, nodes)
		return nil
	}
	node := feasible[0]
	if nominated := nodeNamed(feasible, s.nominatedNode(pod)); nominated != nil {
		// Preemption made room there, for the whole job: go there.
		node = nominated
	} else if len(feasible) > 1 {
		if st := c.fwk.RunPreScorePlugins(ctx, c.state, pod, feasible); !st.IsSuccess() {
			return fmt.Errorf("pre-score for pod %s: %w", podKey(pod), st.AsError())
		}
		scores, st := s.keepRanking(ctx, c, pod, feasible)
		if !st.IsSuccess() {
			return fmt.Errorf("scoring nodes for pod %s: %w", podKey(pod), st.AsError())
		}
		node = pickHighest(feasible, scores)
	}
	return s.reserve(ctx, c, pod, node)
}

// reserve runs the Reserve plugins for pod of c on node and, when they
// admit it, places pod there in the snapshot and the cycle.
func (s *Scheduler) reserve(ctx context.Context, c *cycle, pod *v1.Pod, node *framework.NodeInfo) error {
	if st := c.fwk.RunReservePlugins(ctx, c.state, pod, node.Name()); !st.IsSuccess() {
		if st.IsRejected() {
			c.failures[podKey(pod)] = st.Message()
			c.noteRejection(st)
			return nil
		}
		return fmt.Errorf("reserving node %s for pod %s: %w", node.Name(), podKey(pod), st.AsError())
	}
	// Later pods of the job see this one on the node.
	s.snapshot.AddTask(node.Name(), framework.NewAssumedTaskInfo(pod, node.Name(), c.job.ID))
	c.placements[string(pod.UID)] = node.Name()
	c.placed = append(c.placed, pod)
	c.changes++
	return nil
}

// nodeNamed returns the node of nodes called name, or nil.
func nodeNamed(nodes []*framework.NodeInfo, name string) *framework.NodeInfo {
	if name == "" {
		return nil
	}
	for _, n := range nodes {
		if n.Name() == name {
			return n
		}
	}
	return nil
}

// withNote appends note to msg, if any.
func withNote(msg, note string) string {
	switch {
	case note == "":
		return msg
	case msg == "":
		return note
	}
	return msg + "; " + note
}

// pickHighest returns the node with the highest total score, breaking ties
// at random so that equal nodes share the load. One random draw per pod,
// not one per tie: in a cluster of equal nodes every node ties.
func pickHighest(nodes []*framework.NodeInfo, scores []framework.NodeScore) *framework.NodeInfo {
	if len(scores) == 0 {
		return nodes[0]
	}
	best, ties := scores[0].Score, 0
	for _, sc := range scores {
		switch {
		case sc.Score > best:
			best, ties = sc.Score, 1
		case sc.Score == best:
			ties++
		}
	}
	pick := rand.IntN(ties)
	for i, sc := range scores {
		if sc.Score != best {
			continue
		}
		if pick > 0 {
			pick--
			continue
		}
		// The framework scores the nodes in their order.
		if i < len(nodes) && nodes[i].Name() == sc.Name {
			return nodes[i]
		}
		for _, n := range nodes {
			if n.Name() == sc.Name {
				return n
			}
		}
		break
	}
	return nodes[0]
}

func (c *cycle) noteRejection(st *framework.Status) {
	if p := st.Plugin(); p != "" {
		c.rejectedBy[p] = true
	}
	if st.Code() == framework.UnschedulableAndUnresolvable {
		c.unresolvable = true
	}
}

// waitsForRoom reports whether the job failed for want of room: a plugin
// that rejects for room rejected it, and nothing rejected it for good.
func (c *cycle) waitsForRoom(pluginNames []string) bool {
	if c.unresolvable || c.noNodes {
		return false
	}
	for _, name := range pluginNames {
		if c.fwk.WaitsForRoom(name) {
			return true
		}
	}
	return false
}

// unschedulable reports why the job could not be placed and parks it until
// an event its rejecting plugins care about.
func (s *Scheduler) unschedulable(ctx context.Context, c *cycle, jobMessage string) {
	s.recordAttempt(resultUnschedulable, c.profile, c.start)
	s.park(ctx, c, c.job.Pending, jobMessage, true)
}

// podMessage says why pod was not scheduled: its own node diagnosis, the
// job's verdict, or both.
func podMessage(c *cycle, pod *v1.Pod, jobMessage string) string {
	own := c.failures[podKey(pod)]
	if own != "" && !c.job.ID.Gang {
		// The verdict on a single pod's job ("0 of 1 tasks could be
		// placed") only repeats that the pod found no node.
		jobMessage = ""
	}
	if c.job.Err != nil && !strings.Contains(jobMessage, c.job.Err.Error()) {
		jobMessage = strings.TrimSpace(jobMessage + " (" + c.job.Err.Error() + ")")
	}
	switch {
	case own != "" && jobMessage != "":
		return withNote(jobMessage+"; "+own, c.preemption)
	case own != "":
		return withNote(own, c.preemption)
	case jobMessage != "":
		return withNote(jobMessage, c.preemption)
	}
	return withNote("no node could be chosen", c.preemption)
}

// requeue puts a job whose cycle failed with an error back after backoff.
func (s *Scheduler) requeue(ctx context.Context, c *cycle, qj *framework.QueuedJob, err error) {
	profile, start := "", time.Now()
	if c != nil {
		profile, start = c.profile, c.start
	}
	s.recordAttempt(resultError, profile, start)
	logger := klog.FromContext(ctx)
	logger.Error(err, "Scheduling cycle failed; retrying after backoff")
	if qerr := s.queue.AddUnschedulable(qj, schedulingqueue.Attempt{Reason: err.Error(), Err: err}); qerr != nil {
		logger.Error(qerr, "Requeueing a job")
	}
}

func podKey(pod *v1.Pod) string { return pod.Namespace + "/" + pod.Name }
