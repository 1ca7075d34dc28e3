package scheduler

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"sync"
	"time"

	frameworkruntime "github.com/batch-scheduler/batch-scheduler/pkg/framework/runtime"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"

	"github.com/batch-scheduler/batch-scheduler/pkg/cache"
	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
)

// Options configure a Scheduler.
type Options struct {
	Cache  *cache.SchedulerCache
	Client kubernetes.Interface
	// Profiles maps each scheduler name to its framework. A pod whose
	// spec.schedulerName has no profile is not scheduled (the cache only
	// queues pods of our names, so this is a configuration error caught at
	// start-up).
	Profiles map[string]*frameworkruntime.Framework
	Recorder events.EventRecorder
	Metrics  *Metrics

	// BindConcurrency bounds the bind calls in flight (default 16).
	BindConcurrency int
	// BindAttempts is how often a failing bind is tried before it is
	// rolled back (default 3), waiting BindBackoff, doubled each time
	// (default 100ms), in between.
	BindAttempts int
	BindBackoff  time.Duration
}

// Scheduler is the scheduling loop.
type Scheduler struct {
	opts     Options
	cache    *cache.SchedulerCache
	queue    *cache.SchedulingQueue
	snapshot *cache.Snapshot
	metrics  *Metrics

	// bindSlots bounds concurrent binds (and status updates); bindWG waits
	// for them on shutdown.
	bindSlots chan struct{}
	bindWG    sync.WaitGroup
}

// New validates opts and returns a Scheduler.
func New(opts Options) (*Scheduler, error) {
	if opts.Cache == nil || opts.Client == nil || opts.Recorder == nil {
		return nil, errors.New("creating the scheduler: cache, client and event recorder are required")
	}
	if len(opts.Profiles) == 0 {
		return nil, errors.New("creating the scheduler: no profiles")
	}
	if opts.BindConcurrency <= 0 {
		opts.BindConcurrency = 16
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
	return &Scheduler{
		opts:      opts,
		cache:     opts.Cache,
		queue:     opts.Cache.Queue(),
		snapshot:  cache.NewSnapshot(),
		metrics:   opts.Metrics,
		bindSlots: make(chan struct{}, opts.BindConcurrency),
	}, nil
}

// Run schedules jobs until ctx is done, then waits for binds in flight.
func (s *Scheduler) Run(ctx context.Context) {
	klog.InfoS("Starting the scheduling loop", "profiles", len(s.opts.Profiles))
	wait.UntilWithContext(ctx, s.scheduleOne, 0)
	s.bindWG.Wait()
	klog.InfoS("Scheduling loop stopped")
}

// cycle is the state of one scheduling cycle.
type cycle struct {
	qj      *cache.QueuedJob
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
}

// scheduleOne runs one cycle: pop a job, place it, assume and bind or
// report why not.
func (s *Scheduler) scheduleOne(ctx context.Context) {
	qj, err := s.queue.Pop(ctx)
	if err != nil {
		if ctx.Err() == nil {
			klog.ErrorS(err, "Popping a job from the scheduling queue")
		}
		return
	}
	c, err := s.newCycle(qj)
	if err != nil {
		klog.ErrorS(err, "Cannot schedule job", "job", qj.ID)
		s.requeue(c, qj, err)
		return
	}
	if c == nil {
		// Nothing left to place (every pod was bound or assumed meanwhile).
		s.queue.Done(qj.ID)
		return
	}
	klog.V(3).InfoS("Attempting to schedule job", "job", qj.ID, "pending", len(c.job.Pending), "bound", c.job.Bound, "minAvailable", c.job.MinAvailable)

	if err := s.cache.UpdateSnapshot(s.snapshot); err != nil {
		s.requeue(c, qj, fmt.Errorf("updating the snapshot: %w", err))
		return
	}
	if st := c.fwk.RunPreFilterPlugins(ctx, c.state, c.job); !st.IsSuccess() {
		if st.IsRejected() {
			c.noteRejection(st)
			s.unschedulable(ctx, c, st.Message())
			return
		}
		s.requeue(c, qj, fmt.Errorf("pre-filter: %w", st.AsError()))
		return
	}

	for _, pod := range c.job.Pending {
		if err := s.placePod(ctx, c, pod); err != nil {
			s.undoPlacements(ctx, c)
			s.requeue(c, qj, err)
			return
		}
	}

	if st := c.fwk.RunPermitPlugins(ctx, c.state, c.job, c.placements); !st.IsSuccess() {
		s.undoPlacements(ctx, c)
		if st.IsRejected() {
			c.noteRejection(st)
			s.unschedulable(ctx, c, st.Message())
			return
		}
		s.requeue(c, qj, fmt.Errorf("permit: %w", st.AsError()))
		return
	}
	if len(c.placed) == 0 {
		// Permit let an empty placement through (no plugin enforces
		// min-available): nothing fits.
		s.unschedulable(ctx, c, "")
		return
	}
	s.assumeAndBind(ctx, c)
}

// newCycle builds the cycle for qj; nil when nothing is left to place.
func (s *Scheduler) newCycle(qj *cache.QueuedJob) (*cycle, error) {
	if len(qj.Pods) == 0 {
		return nil, nil
	}
	profile := qj.Pods[0].Spec.SchedulerName
	fwk, ok := s.opts.Profiles[profile]
	c := &cycle{qj: qj, fwk: fwk, profile: profile, state: framework.NewCycleState(), start: time.Now(),
		placements: map[string]string{}, failures: map[string]string{}, rejectedBy: map[string]bool{}}
	if !ok {
		return c, fmt.Errorf("no profile for scheduler name %q", profile)
	}
	info, ok := s.cache.Job(qj.ID)
	if !ok {
		return nil, nil
	}
	job := &framework.Job{ID: qj.ID, MinAvailable: info.MinAvailable(), Err: info.ValidationError()}
	for _, t := range info.Tasks {
		switch t.Status {
		case cache.TaskBound, cache.TaskAssumed:
			if t.Counted {
				job.Bound++
			}
		}
	}
	for _, pod := range qj.Pods {
		if t, ok := info.Tasks[pod.UID]; ok && t.Status == cache.TaskPending {
			job.Pending = append(job.Pending, pod)
		}
	}
	if len(job.Pending) == 0 {
		return nil, nil
	}
	c.job = job
	return c, nil
}

// placePod filters and scores the nodes for pod and reserves the best one.
// A pod that fits nowhere is recorded in c.failures; only errors are
// returned.
func (s *Scheduler) placePod(ctx context.Context, c *cycle, pod *v1.Pod) error {
	nodes := s.snapshot.NodeInfos()
	if len(nodes) == 0 {
		c.failures[podKey(pod)] = "no nodes available to schedule pods"
		return nil
	}
	feasible, diagnosis, err := c.fwk.FindFeasibleNodes(ctx, c.state, pod, nodes)
	if err != nil {
		return fmt.Errorf("filtering nodes for pod %s: %w", podKey(pod), err)
	}
	if len(feasible) == 0 {
		c.failures[podKey(pod)] = diagnosis.Message(len(nodes))
		for _, name := range diagnosis.RejectingPlugins() {
			c.rejectedBy[name] = true
		}
		return nil
	}
	node := feasible[0]
	if len(feasible) > 1 {
		if st := c.fwk.RunPreScorePlugins(ctx, c.state, pod, feasible); !st.IsSuccess() {
			return fmt.Errorf("pre-score for pod %s: %w", podKey(pod), st.AsError())
		}
		scores, st := c.fwk.RunScorePlugins(ctx, c.state, pod, feasible)
		if !st.IsSuccess() {
			return fmt.Errorf("scoring nodes for pod %s: %w", podKey(pod), st.AsError())
		}
		node = pickHighest(feasible, scores)
	}
	if st := c.fwk.RunReservePlugins(ctx, c.state, pod, node.Name()); !st.IsSuccess() {
		if st.IsRejected() {
			c.failures[podKey(pod)] = st.Message()
			c.noteRejection(st)
			return nil
		}
		return fmt.Errorf("reserving node %s for pod %s: %w", node.Name(), podKey(pod), st.AsError())
	}
	// Later pods of the job see this one on the node.
	node.AddPod(pod)
	c.placements[string(pod.UID)] = node.Name()
	c.placed = append(c.placed, pod)
	return nil
}

// pickHighest returns the node with the highest total score, breaking ties
// at random so that equal nodes share the load.
func pickHighest(nodes []*cache.NodeInfo, scores []framework.NodeScore) *cache.NodeInfo {
	best, ties := 0, 1
	for i := 1; i < len(scores); i++ {
		switch {
		case scores[i].Score > scores[best].Score:
			best, ties = i, 1
		case scores[i].Score == scores[best].Score:
			ties++
			if rand.IntN(ties) == 0 {
				best = i
			}
		}
	}
	for _, n := range nodes {
		if n.Name() == scores[best].Name {
			return n
		}
	}
	return nodes[0]
}

// undoPlacements unreserves every placement of the cycle and takes the pods
// off the snapshot.
func (s *Scheduler) undoPlacements(ctx context.Context, c *cycle) {
	for i := len(c.placed) - 1; i >= 0; i-- {
		pod := c.placed[i]
		nodeName := c.placements[string(pod.UID)]
		c.fwk.RunUnreservePlugins(ctx, c.state, pod, nodeName)
		if ni, ok := s.snapshot.Get(nodeName); ok {
			ni.RemovePod(pod.UID)
		}
	}
	c.placed, c.placements = nil, map[string]string{}
}

func (c *cycle) noteRejection(st *framework.Status) {
	if p := st.Plugin(); p != "" {
		c.rejectedBy[p] = true
	}
}

// unschedulable reports why the job could not be placed and parks it until
// an event its rejecting plugins care about.
func (s *Scheduler) unschedulable(ctx context.Context, c *cycle, jobMessage string) {
	s.metrics.Attempts.WithLabelValues(resultUnschedulable, c.profile).Inc()
	s.metrics.AttemptDuration.WithLabelValues(resultUnschedulable).Observe(time.Since(c.start).Seconds())
	s.park(ctx, c, c.job.Pending, jobMessage)
}

// park reports why pods, pending pods of the job, were not placed and
// parks the job until an event its rejecting plugins care about.
func (s *Scheduler) park(ctx context.Context, c *cycle, pods []*v1.Pod, jobMessage string) {
	var pluginNames []string
	for p := range c.rejectedBy {
		pluginNames = append(pluginNames, p)
	}
	sort.Strings(pluginNames)
	evts := c.fwk.EventsToRegisterFor(pluginNames...)
	summary := ""
	if c.job.ID.Gang {
		summary = jobMessage
	}
	for _, pod := range pods {
		msg := podMessage(c, pod, jobMessage)
		if summary == "" {
			summary = msg
		}
		s.reportUnschedulable(ctx, pod, msg)
	}
	klog.V(2).InfoS("Job is unschedulable", "job", c.job.ID, "pods", len(pods), "reason", summary, "rejectedBy", pluginNames)
	if err := s.queue.AddUnschedulable(c.qj, cache.Attempt{Reason: summary, Events: evts}); err != nil {
		klog.ErrorS(err, "Parking an unschedulable job", "job", c.job.ID)
	}
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
	if c.job.Err != nil {
		jobMessage = strings.TrimSpace(jobMessage + " (" + c.job.Err.Error() + ")")
	}
	switch {
	case own != "" && jobMessage != "":
		return jobMessage + "; " + own
	case own != "":
		return own
	case jobMessage != "":
		return jobMessage
	}
	return "no node could be chosen"
}

// requeue puts a job whose cycle failed with an error back after backoff.
func (s *Scheduler) requeue(c *cycle, qj *cache.QueuedJob, err error) {
	profile := ""
	if c != nil {
		profile = c.profile
		s.metrics.AttemptDuration.WithLabelValues(resultError).Observe(time.Since(c.start).Seconds())
	}
	s.metrics.Attempts.WithLabelValues(resultError, profile).Inc()
	klog.ErrorS(err, "Scheduling cycle failed; retrying after backoff", "job", qj.ID)
	if qerr := s.queue.AddUnschedulable(qj, cache.Attempt{Reason: err.Error(), Err: err}); qerr != nil {
		klog.ErrorS(qerr, "Requeueing a job", "job", qj.ID)
	}
}

func podKey(pod *v1.Pod) string { return pod.Namespace + "/" + pod.Name }
