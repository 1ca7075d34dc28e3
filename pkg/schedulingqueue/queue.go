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

package schedulingqueue

import (
	"container/heap"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	k8smetrics "k8s.io/component-base/metrics"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
	"github.com/batch-scheduler/batch-scheduler/pkg/metrics"
)

// Defaults of Options.
const (
	DefaultInitialBackoff       = 1 * time.Second
	DefaultMaxBackoff           = 10 * time.Second
	DefaultUnschedulableTimeout = 5 * time.Minute

	backoffFlushPeriod       = 1 * time.Second
	unschedulableFlushPeriod = 30 * time.Second
)

// Errors of the queue's methods, for errors.Is.
var (
	// ErrQueueClosed is returned by Pop once the queue has been closed.
	ErrQueueClosed = errors.New("scheduling queue is closed")
	// ErrAlreadyQueued: AddUnschedulable for a job that already waits (e.g.
	// a second pod of one gang whose bind failed). The job is retried
	// anyway; callers may treat it as informational.
	ErrAlreadyQueued = errors.New("already waiting in the scheduling queue")
)

// Attempt describes a failed scheduling attempt, for AddUnschedulable.
type Attempt struct {
	// Reason says briefly why the job could not be placed; it is kept for
	// the debug dump.
	Reason string
	// Err is set when the attempt failed with an error rather than because
	// the job did not fit. Such a job is retried after its backoff instead
	// of waiting for a cluster event.
	Err error
	// Events are the events registered by the plugins that rejected the
	// job, with their queueing hints. While the job waits in the
	// unschedulable queue, it moves only when a raised event matches one
	// of them and that plugin's hint answers Queue. Empty means that no
	// event helps (only changes of the job's own pending pods, and the
	// unschedulable timeout, retry it).
	Events []framework.PluginEvent
	// AnyEvent makes every event move the job, whatever Events say: for
	// attempts that no plugin can account for (there were no nodes at all,
	// say).
	AnyEvent bool
	// ForRoom says that the job waits for room (resources on the nodes,
	// or in its queue), not only for a constraint to be met: it may be
	// starved by smaller jobs taking the room it needs (see
	// RoomWaiters).
	ForRoom bool
	// Reserved says that room is held for the job until running pods end
	// (a reservation, or the nominations of a preemption whose victims
	// are going): waiting for it is not failing, so its backoff stays at
	// the initial one however often it was tried, and it is retried soon
	// after the room frees.
	Reserved bool
	// Plugins are the plugins that rejected the job in this attempt, for
	// the unschedulable_jobs metric.
	Plugins []string
	// Profile is the scheduler name of the job's pods, for that metric.
	Profile string
}

// Lengths is the number of jobs in each part of the queue.
type Lengths struct {
	Active        int `json:"active"`
	Backoff       int `json:"backoff"`
	Unschedulable int `json:"unschedulable"`
	// InFlight jobs have been popped and are being scheduled.
	InFlight int `json:"inFlight"`
	// AwaitingBinding jobs were scheduled (Done) and wait for the informer
	// to report their pods bound.
	AwaitingBinding int `json:"awaitingBinding"`
}

// Options configure a SchedulingQueue. The zero value is usable.
type Options struct {
	// Clock drives backoffs and timeouts. Default: the real clock.
	Clock clock.WithTicker
	// Less orders the active queue. Default: framework.DefaultLess.
	Less framework.LessFunc
	// InitialBackoff and MaxBackoff bound a job's exponential backoff
	// after failed attempts. Defaults: DefaultInitialBackoff and
	// DefaultMaxBackoff.
	InitialBackoff time.Duration
	MaxBackoff     time.Duration
	// UnschedulableTimeout is how long a job waits in the unschedulable
	// queue before it is retried without an event. Default:
	// DefaultUnschedulableTimeout.
	UnschedulableTimeout time.Duration
	// Metrics the queue reports its lengths and its oldest job's wait
	// to. nil creates a private, unregistered set. The wait is computed
	// at scrape time, by the last queue created with the set.
	Metrics *metrics.Metrics
}

// Validate defaults o in place and checks it.
func (o *Options) Validate() error {
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	if o.Less == nil {
		o.Less = framework.DefaultLess
	}
	if o.InitialBackoff == 0 {
		o.InitialBackoff = DefaultInitialBackoff
	}
	if o.MaxBackoff == 0 {
		o.MaxBackoff = DefaultMaxBackoff
	}
	if o.UnschedulableTimeout == 0 {
		o.UnschedulableTimeout = DefaultUnschedulableTimeout
	}
	switch {
	case o.InitialBackoff < 0 || o.MaxBackoff < 0 || o.UnschedulableTimeout < 0:
		return fmt.Errorf("scheduling queue: backoffs and timeouts must not be negative (initial backoff %v, max backoff %v, unschedulable timeout %v)",
			o.InitialBackoff, o.MaxBackoff, o.UnschedulableTimeout)
	case o.InitialBackoff > o.MaxBackoff:
		return fmt.Errorf("scheduling queue: initial backoff %v exceeds max backoff %v", o.InitialBackoff, o.MaxBackoff)
	}
	if o.Metrics == nil {
		m, err := metrics.New(nil)
		if err != nil {
			return fmt.Errorf("scheduling queue: %w", err)
		}
		o.Metrics = m
	}
	return nil
}

// SchedulingQueue holds the jobs that have pending pods, each as one unit.
//
// A job is in exactly one of: the active queue (a heap ordered by the
// LessFunc, from which Pop takes), the backoff queue (a heap ordered by
// backoff expiry), the unschedulable queue (a map; the job waits for a
// cluster event that may help it, or for the unschedulable timeout), in
// flight (popped, being scheduled) or awaiting binding (scheduled, its pods
// not yet reported bound).
//
// Pending pods are added, changed and removed by the cache (PodChanged,
// PodRemoved), which holds its own lock while it calls the queue; the
// scheduling loop pops jobs and ends their cycles; event handlers raise
// events (MoveAllToActiveOrBackoffQueue) through the cache.
type SchedulingQueue struct {
	clock                clock.WithTicker
	less                 framework.LessFunc
	initialBackoff       time.Duration
	maxBackoff           time.Duration
	unschedulableTimeout time.Duration

	// lock guards every field below. It is a leaf: nothing that takes
	// another lock is called while it is held. The LessFunc and the
	// plugins' QueueingHintFns run under it, and must not call back into
	// the queue or the cache.
	lock sync.Mutex
	// cond is signalled, with lock held, when a job enters the active queue
	// and when the queue closes, and broadcast when a Pop's ctx ends.
	cond          *sync.Cond
	jobs          map[framework.JobID]*jobEntry
	activeQ       jobHeap
	backoffQ      jobHeap
	unschedulable map[framework.JobID]*jobEntry
	// parkedInterest counts, per resource, the jobs in unschedulable that
	// registered an event of it (WildCard for those that take any event),
	// so that a cluster event no parked job can want skips the scan of
	// unschedulable (most binds, at scale).
	parkedInterest map[framework.EventResource]int
	// schedulingCycle counts Pops. moveRequestCycle is the value of
	// schedulingCycle at the last move request: a job that failed in a
	// cycle at or before it may have missed the event and is not parked as
	// unschedulable.
	schedulingCycle  int64
	moveRequestCycle int64
	// numInFlight counts the jobs in flight. While there are any, move
	// requests are recorded in inFlightEvents, so that AddUnschedulable
	// can tell whether one of them may have helped the job; when it
	// overflows, inFlightEventsLost is set and any move request counts.
	// Both are reset when no job is in flight.
	numInFlight        int
	inFlightEvents     []inFlightEvent
	inFlightEventsLost bool
	closed             bool
	// jobTenantQueues are the tenant queues of the jobs outside the
	// default one (SetJobTenantQueue), whether or not they are queued;
	// tenantRanks the order of the tenant queues (SetTenantQueueRanks).
	jobTenantQueues map[framework.JobID]string
	tenantRanks     map[string]int
	// roomWaiters index, per tenant queue ("" for the default one), the
	// jobs whose last attempt waited for room; firstWaiter caches the
	// first of each in precedence (see RoomWaiters), nil when unknown.
	roomWaiters map[string]map[framework.JobID]*jobEntry
	firstWaiter map[string]*jobEntry

	activeGauge, backoffGauge, unschedulableGauge k8smetrics.GaugeMetric
}

// New returns an empty queue. Run starts its flush loops.
func New(opts Options) (*SchedulingQueue, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	q := &SchedulingQueue{
		clock:                opts.Clock,
		less:                 opts.Less,
		initialBackoff:       opts.InitialBackoff,
		maxBackoff:           opts.MaxBackoff,
		unschedulableTimeout: opts.UnschedulableTimeout,
		jobs:                 map[framework.JobID]*jobEntry{},
		unschedulable:        map[framework.JobID]*jobEntry{},
		parkedInterest:       map[framework.EventResource]int{},
		moveRequestCycle:     -1,
		jobTenantQueues:      map[framework.JobID]string{},
		roomWaiters:          map[string]map[framework.JobID]*jobEntry{},
		firstWaiter:          map[string]*jobEntry{},
		activeGauge:          opts.Metrics.PendingJobs.WithLabelValues(metrics.QueueActive),
		backoffGauge:         opts.Metrics.PendingJobs.WithLabelValues(metrics.QueueBackoff),
		unschedulableGauge:   opts.Metrics.PendingJobs.WithLabelValues(metrics.QueueUnschedulable),
	}
	q.cond = sync.NewCond(&q.lock)
	q.activeQ.less = q.lessActiveLocked
	q.backoffQ.less = func(a, b *jobEntry) bool { return a.backoffExpiry.Before(b.backoffExpiry) }
	opts.Metrics.PendingJobOldest.SetSource(q.oldestPendingSeconds)
	opts.Metrics.UnschedulableJobs.SetSource(q.unschedulableByPlugin)
	return q, nil
}

// Pop removes and returns the job at the head of the active queue, waiting
// until there is one. When the active queue is empty, a job backing off
// after an attempt where it did not fit (the neediest tenant queue's
// oldest, see firstLenientBackoffLocked) is taken before its backoff ends:
// the backoff keeps it from crowding out other jobs, and there are none,
// while capacity an event just freed would otherwise stay idle until it
// ends (up to MaxBackoff). Jobs backing off after an error wait it out.
// Pop fails when ctx ends or the queue is closed. The job is then in
// flight: the caller must end its cycle with Done or AddUnschedulable.
func (q *SchedulingQueue) Pop(ctx context.Context) (*framework.QueuedJob, error) {
	// Wake the waiter below when ctx ends; taking the lock first makes sure
	// the broadcast cannot slip in between its check of ctx and its Wait.
	stop := context.AfterFunc(ctx, func() {
		q.lock.Lock()
		defer q.lock.Unlock()
		q.cond.Broadcast()
	})
	defer stop()

	q.lock.Lock()
	defer q.lock.Unlock()
	for q.activeQ.Len() == 0 {
		if q.closed {
			return nil, ErrQueueClosed
		}
		if ctx.Err() != nil {
			return nil, fmt.Errorf("waiting for a job in the scheduling queue: %w", context.Cause(ctx))
		}
		if e := q.firstLenientBackoffLocked(); e != nil {
			q.moveToActiveLocked(e)
			break
		}
		q.cond.Wait()
	}
	e := heap.Pop(&q.activeQ).(*jobEntry)
	q.schedulingCycle++
	e.where = inFlight
	q.numInFlight++
	e.Attempts++
	e.Cycle = q.schedulingCycle
	e.changedInFlight = false
	q.updateGaugesLocked()
	return e.snapshot(), nil
}

// AddUnschedulable ends the scheduling cycle of a popped job that could not
// be placed, or whose binding failed after Done. The job waits in the
// unschedulable queue for a cluster event that may help it (one of
// attempt.Events), unless such an event was reported (or its pending pods
// changed) during its cycle or the attempt failed with an error: then it
// is retried after its backoff. A job whose pods have all left the queue
// meanwhile is forgotten. It is an error to call it for a job that is
// queued already.
//
// If job was popped again since (it is in flight in a newer cycle, whose
// outcome is still to come), the newer cycle is made to retry the job when
// it ends, as if its pods had changed.
func (q *SchedulingQueue) AddUnschedulable(job *framework.QueuedJob, attempt Attempt) error {
	q.lock.Lock()
	defer q.lock.Unlock()
	e, ok := q.jobs[job.ID]
	if !ok {
		klog.V(4).InfoS("Job left the scheduling queue during its scheduling cycle", "job", job.ID.String())
		return nil
	}
	if e.where != inFlight && e.where != awaitingBinding {
		return fmt.Errorf("parking job %s as unschedulable: it is already in the %s queue: %w", job.ID, e.where, ErrAlreadyQueued)
	}
	if e.where == inFlight && e.Cycle != job.Cycle {
		klog.V(4).InfoS("Attempt of a job failed while a newer attempt is in flight; the newer one will be retried",
			"job", job.ID.String(), "cycle", job.Cycle, "newerCycle", e.Cycle, "reason", attempt.Reason, "err", attempt.Err)
		e.changedInFlight = true
		return nil
	}
	now := q.clock.Now()
	e.Timestamp = now
	backoff := q.backoffDuration(e.Attempts)
	if attempt.Reserved {
		backoff = q.initialBackoff
	}
	e.backoffExpiry = now.Add(backoff)
	e.strictBackoff = attempt.Err != nil
	e.lastFailure = attempt.Reason
	if attempt.Err != nil && e.lastFailure == "" {
		e.lastFailure = attempt.Err.Error()
	}
	e.events = slices.Clone(attempt.Events)
	e.anyEvent = attempt.AnyEvent
	e.rejectedBy, e.profile = slices.Clone(attempt.Plugins), attempt.Profile
	q.setWaitsForRoomLocked(e, attempt.ForRoom && attempt.Err == nil)
	missedEvent := e.changedInFlight || q.missedEventLocked(e, job.Cycle)
	e.changedInFlight = false
	q.leaveFlightLocked(e)
	switch {
	case attempt.Err != nil:
		q.moveToBackoffLocked(e)
	case missedEvent:
		q.requeueLocked(e)
	default:
		q.detachLocked(e)
		e.where = inUnschedulable
		e.unschedulableSince = now
		q.unschedulable[e.ID] = e
		q.noteParkedLocked(e, 1)
	}
	klog.V(4).InfoS("Job could not be scheduled", "job", job.ID.String(), "queue", e.where.String(),
		"attempts", e.Attempts, "reason", e.lastFailure, "err", attempt.Err)
	q.updateGaugesLocked()
	return nil
}

// Done ends the scheduling cycle of a popped job that was scheduled. Its
// pods stay in the queue, awaiting binding, until the informer reports them
// bound (RemovePendingPod); the job is popped again only if pending pods of
// it are added or change, or an assumption of one expires. If that already
// happened during the cycle, the job goes back to the active queue at once.
// A bind that fails later is reported with AddUnschedulable.
func (q *SchedulingQueue) Done(id framework.JobID) {
	q.lock.Lock()
	defer q.lock.Unlock()
	e, ok := q.jobs[id]
	if !ok || e.where != inFlight {
		return
	}
	q.leaveFlightLocked(e)
	q.setWaitsForRoomLocked(e, false)
	if e.changedInFlight {
		e.changedInFlight = false
		q.moveToActiveLocked(e)
	} else {
		e.where = awaitingBinding
	}
	q.updateGaugesLocked()
}

// Run flushes the backoff queue every second and the unschedulable queue
// every 30 seconds until ctx ends; then it closes the queue.
func (q *SchedulingQueue) Run(ctx context.Context) {
	backoffTicker := q.clock.NewTicker(backoffFlushPeriod)
	defer backoffTicker.Stop()
	unschedulableTicker := q.clock.NewTicker(unschedulableFlushPeriod)
	defer unschedulableTicker.Stop()
	defer q.Close()
	for {
		select {
		case <-ctx.Done():
			return
		case <-backoffTicker.C():
			q.flushBackoffCompleted()
		case <-unschedulableTicker.C():
			q.flushUnschedulableLeftover()
		}
	}
}

// Close makes every current and future Pop fail with ErrQueueClosed once
// the active queue is empty.
func (q *SchedulingQueue) Close() {
	q.lock.Lock()
	defer q.lock.Unlock()
	q.closed = true
	q.cond.Broadcast()
}

// flushBackoffCompleted moves the jobs whose backoff has expired to the
// active queue.
func (q *SchedulingQueue) flushBackoffCompleted() {
	q.lock.Lock()
	defer q.lock.Unlock()
	now := q.clock.Now()
	moved := false
	for q.backoffQ.Len() > 0 && !now.Before(q.backoffQ.peek().backoffExpiry) {
		q.moveToActiveLocked(q.backoffQ.peek())
		moved = true
	}
	if moved {
		q.updateGaugesLocked()
	}
}

// flushUnschedulableLeftover requeues the jobs that waited in the
// unschedulable queue longer than the unschedulable timeout.
func (q *SchedulingQueue) flushUnschedulableLeftover() {
	q.lock.Lock()
	defer q.lock.Unlock()
	now := q.clock.Now()
	q.moveUnschedulableLocked(framework.EventUnschedulableTimeout, func(e *jobEntry) bool {
		return now.Sub(e.unschedulableSince) > q.unschedulableTimeout
	})
}

// Lengths returns the number of jobs in each part of the queue.
func (q *SchedulingQueue) Lengths() Lengths {
	q.lock.Lock()
	defer q.lock.Unlock()
	return q.lengthsLocked()
}

func (q *SchedulingQueue) lengthsLocked() Lengths {
	l := Lengths{
		Active:        q.activeQ.Len(),
		Backoff:       q.backoffQ.Len(),
		Unschedulable: len(q.unschedulable),
	}
	for _, e := range q.jobs {
		switch e.where {
		case inFlight:
			l.InFlight++
		case awaitingBinding:
			l.AwaitingBinding++
		}
	}
	return l
}

func (q *SchedulingQueue) backoffDuration(attempts int) time.Duration {
	d := q.initialBackoff
	for i := 1; i < attempts && d < q.maxBackoff; i++ {
		d *= 2
	}
	return min(d, q.maxBackoff)
}

// requeueLocked moves e to the backoff queue while it is backing off, to the
// active queue otherwise.
func (q *SchedulingQueue) requeueLocked(e *jobEntry) {
	if q.clock.Now().Before(e.backoffExpiry) {
		q.moveToBackoffLocked(e)
	} else {
		q.moveToActiveLocked(e)
	}
}

func (q *SchedulingQueue) moveToActiveLocked(e *jobEntry) {
	if e.where == inActive {
		return
	}
	q.detachLocked(e)
	q.pushActiveLocked(e)
}

func (q *SchedulingQueue) pushActiveLocked(e *jobEntry) {
	e.where = inActive
	heap.Push(&q.activeQ, e)
	q.cond.Signal()
}

func (q *SchedulingQueue) moveToBackoffLocked(e *jobEntry) {
	if e.where == inBackoff {
		return
	}
	q.detachLocked(e)
	e.where = inBackoff
	heap.Push(&q.backoffQ, e)
	if !e.strictBackoff {
		// An idle Pop may take it now.
		q.cond.Signal()
	}
}

// firstLenientBackoffLocked returns, among the jobs of the backoff
// queue that did not fail with an error, the first by leniently (the
// tenant queue of the lowest rank, then the highest priority, then the
// job that first entered the queue longest ago, then the backoff that
// ends first), or nil. The rank comes first as it does in the active
// queue: room an event frees while nothing is active goes to the
// neediest queue's jobs, not to whichever job's backoff is shortest (a
// queue of many small jobs would otherwise take turns by number, not by
// share). Within a queue the oldest job goes first, as its standing says:
// by backoff, the jobs that failed least often (the newest) would take
// every freed room and the oldest wait for the anti-starvation rule. Each
// job in the backoff queue was moved there by an event that may help it,
// so this retries a job once per such event, not in a loop. It scans the
// backoff queue, which Pop does only when the active queue is empty.
func (q *SchedulingQueue) firstLenientBackoffLocked() *jobEntry {
	var best *jobEntry
	for _, e := range q.backoffQ.items {
		if !e.strictBackoff && (best == nil || q.leniently(e, best)) {
			best = e
		}
	}
	return best
}

// leniently orders the jobs of the backoff queue for a Pop that finds the
// active queue empty (firstLenientBackoffLocked).
func (q *SchedulingQueue) leniently(a, b *jobEntry) bool {
	if ra, rb := q.tenantRanks[a.Queue], q.tenantRanks[b.Queue]; ra != rb {
		return ra < rb
	}
	if a.Priority != b.Priority {
		return a.Priority > b.Priority
	}
	if !a.InitialTimestamp.Equal(b.InitialTimestamp) {
		return a.InitialTimestamp.Before(b.InitialTimestamp)
	}
	return a.backoffExpiry.Before(b.backoffExpiry)
}

// detachLocked takes e out of the heap or map that holds it. Its where is
// left for the caller to set.
func (q *SchedulingQueue) detachLocked(e *jobEntry) {
	switch e.where {
	case inActive:
		heap.Remove(&q.activeQ, e.heapIndex)
	case inBackoff:
		heap.Remove(&q.backoffQ, e.heapIndex)
	case inUnschedulable:
		delete(q.unschedulable, e.ID)
		q.noteParkedLocked(e, -1)
	}
}

// mayInterestParkedLocked reports whether some parked job registered an
// event of event's resource, or takes any event.
func (q *SchedulingQueue) mayInterestParkedLocked(event framework.ClusterEvent) bool {
	return event.Resource == framework.WildCard || q.parkedInterest[event.Resource] > 0 || q.parkedInterest[framework.WildCard] > 0
}

func (q *SchedulingQueue) updateGaugesLocked() {
	q.activeGauge.Set(float64(q.activeQ.Len()))
	q.backoffGauge.Set(float64(q.backoffQ.Len()))
	q.unschedulableGauge.Set(float64(len(q.unschedulable)))
}
