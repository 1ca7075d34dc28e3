package cache

import (
	"container/heap"
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/batch-scheduler/batch-scheduler/pkg/eventhandlers"
	"github.com/batch-scheduler/batch-scheduler/pkg/metrics"
)

// Defaults of the scheduling queue.
const (
	DefaultInitialBackoff       = 1 * time.Second
	DefaultMaxBackoff           = 10 * time.Second
	DefaultUnschedulableTimeout = 5 * time.Minute

	backoffFlushPeriod       = 1 * time.Second
	unschedulableFlushPeriod = 30 * time.Second

	// maxInFlightEvents bounds the events recorded while jobs are in
	// flight; past it, any move request counts as relevant to them.
	maxInFlightEvents = 1000
)

// ErrQueueClosed is returned by Pop once the queue has been closed.
var ErrQueueClosed = errors.New("scheduling queue is closed")

// QueuedJob is a job as the scheduling queue sees it. Pop returns a copy
// that the caller owns; the Pods in it are shared and read-only.
type QueuedJob struct {
	ID JobID
	// Pods are the job's pods that the informer reports pending: those
	// still to be scheduled and those the scheduler has assumed (see
	// SchedulerCache.AssumePod) but that are not reported bound yet; the
	// job's JobInfo tells them apart. Pop sorts them by name; in the view
	// passed to a LessFunc they are in no particular order.
	Pods []*v1.Pod
	// Priority is the highest spec.priority among Pods (nil counts as 0).
	Priority int32
	// Timestamp is when the job last entered the queue: when its first pod
	// was created (or first seen, if its creation time is missing or in
	// the future), or when it was put back after a failed attempt.
	Timestamp time.Time
	// InitialTimestamp is when the job first entered the queue.
	InitialTimestamp time.Time
	// Attempts counts how often the job has been popped.
	Attempts int
	// Cycle is the scheduling cycle of the last Pop, which AddUnschedulable
	// compares with the last move request.
	Cycle int64
}

// LessFunc orders the active queue: it reports whether a is popped before
// b. It runs under the queue's lock, must be fast, must not keep or modify
// its arguments, and must not call back into the queue or the cache.
type LessFunc func(a, b *QueuedJob) bool

// DefaultLess pops the highest priority first and, within a priority, the
// job that entered the queue first (FIFO). Ties are broken by JobID so
// that the order is deterministic.
func DefaultLess(a, b *QueuedJob) bool {
	if a.Priority != b.Priority {
		return a.Priority > b.Priority
	}
	if !a.Timestamp.Equal(b.Timestamp) {
		return a.Timestamp.Before(b.Timestamp)
	}
	if a.ID.Namespace != b.ID.Namespace {
		return a.ID.Namespace < b.ID.Namespace
	}
	if a.ID.Name != b.ID.Name {
		return a.ID.Name < b.ID.Name
	}
	return !a.ID.Gang && b.ID.Gang
}

// Attempt describes a failed scheduling attempt, for AddUnschedulable.
type Attempt struct {
	// Reason says briefly why the job could not be placed; it is kept for
	// the debug dump.
	Reason string
	// Err is set when the attempt failed with an error rather than because
	// the job did not fit. Such a job is retried after its backoff instead
	// of waiting for a cluster event.
	Err error
	// Events are the cluster events after which the job may fit: the union
	// of what the plugins that rejected it registered (EventsToRegister).
	// While the job waits in the unschedulable queue, only a move request
	// whose event matches one of them (ClusterEvent.Match; an event whose
	// Resource is WildCard matches any resource) moves it. nil or empty
	// means any event. The unschedulable timeout ignores them.
	Events []eventhandlers.ClusterEvent
}

// QueueLengths is the number of jobs in each part of the queue.
type QueueLengths struct {
	Active        int `json:"active"`
	Backoff       int `json:"backoff"`
	Unschedulable int `json:"unschedulable"`
	// InFlight jobs have been popped and are being scheduled.
	InFlight int `json:"inFlight"`
	// AwaitingBinding jobs were scheduled (Done) and wait for the informer
	// to report their pods bound.
	AwaitingBinding int `json:"awaitingBinding"`
}

// location is where a job is in the queue.
type location int

const (
	inActive location = iota
	inBackoff
	inUnschedulable
	inFlight
	awaitingBinding
)

func (l location) String() string {
	switch l {
	case inActive:
		return "active"
	case inBackoff:
		return "backoff"
	case inUnschedulable:
		return "unschedulable"
	case inFlight:
		return "inFlight"
	case awaitingBinding:
		return "awaitingBinding"
	}
	return fmt.Sprintf("location(%d)", int(l))
}

// jobEntry is the queue's record of one job with at least one pending pod.
type jobEntry struct {
	QueuedJob

	where location
	// heapIndex is the entry's index in activeQ or backoffQ, whichever
	// holds it.
	heapIndex int
	// podIndex maps a pod UID to its index in Pods.
	podIndex map[types.UID]int
	// backoffExpiry is when the job's backoff after its last failed attempt
	// ends.
	backoffExpiry time.Time
	// unschedulableSince is when the job was last parked as unschedulable.
	unschedulableSince time.Time
	// lastFailure is the Reason of the last failed attempt.
	lastFailure string
	// changedInFlight records that pending pods of the job were added or
	// changed while it was being scheduled, so that its attempt may have
	// missed them.
	changedInFlight bool
	// events are the Attempt.Events of the last failed attempt: what may
	// move the job out of the unschedulable queue.
	events []eventhandlers.ClusterEvent
}

// inFlightEvent is a move request seen while jobs were in flight.
type inFlightEvent struct {
	// cycle is the scheduling cycle when the event was seen: it concerns
	// the jobs popped in that cycle or before.
	cycle int64
	event eventhandlers.ClusterEvent
}

// eventMatches reports whether event may help a job that waits for wants:
// wants is empty (any event), or event matches one of them. An event whose
// Resource is WildCard stands for a change of anything and matches every
// want with a common action.
func eventMatches(event eventhandlers.ClusterEvent, wants []eventhandlers.ClusterEvent) bool {
	if len(wants) == 0 {
		return true
	}
	for _, want := range wants {
		if event.Match(want) || (event.Resource == eventhandlers.WildCard && event.ActionType&want.ActionType != 0) {
			return true
		}
	}
	return false
}

func podPriority(pod *v1.Pod) int32 {
	if pod.Spec.Priority != nil {
		return *pod.Spec.Priority
	}
	return 0
}

// setPod adds pod to the entry, or replaces the pod with its UID.
func (e *jobEntry) setPod(pod *v1.Pod) {
	if i, ok := e.podIndex[pod.UID]; ok {
		old := e.Pods[i]
		e.Pods[i] = pod
		if p := podPriority(pod); p > e.Priority {
			e.Priority = p
		} else if podPriority(old) == e.Priority {
			e.recomputePriority()
		}
		return
	}
	e.podIndex[pod.UID] = len(e.Pods)
	e.Pods = append(e.Pods, pod)
	if p := podPriority(pod); len(e.Pods) == 1 || p > e.Priority {
		e.Priority = p
	}
}

// deletePod removes the pod with uid from the entry, if present.
func (e *jobEntry) deletePod(uid types.UID) {
	i, ok := e.podIndex[uid]
	if !ok {
		return
	}
	old := e.Pods[i]
	last := len(e.Pods) - 1
	e.Pods[i] = e.Pods[last]
	e.podIndex[e.Pods[i].UID] = i
	e.Pods[last] = nil
	e.Pods = e.Pods[:last]
	delete(e.podIndex, uid)
	if podPriority(old) == e.Priority {
		e.recomputePriority()
	}
}

func (e *jobEntry) recomputePriority() {
	e.Priority = 0
	for i, p := range e.Pods {
		if pp := podPriority(p); i == 0 || pp > e.Priority {
			e.Priority = pp
		}
	}
}

// snapshot returns a copy of the job for a caller, with Pods sorted by name.
func (e *jobEntry) snapshot() *QueuedJob {
	qj := e.QueuedJob
	qj.Pods = append([]*v1.Pod(nil), e.Pods...)
	sort.Slice(qj.Pods, func(i, j int) bool { return qj.Pods[i].Name < qj.Pods[j].Name })
	return &qj
}

// jobHeap is a binary heap of jobEntries that keeps each entry's heapIndex
// current, so that an entry can be fixed or removed in O(log n).
type jobHeap struct {
	items []*jobEntry
	less  func(a, b *jobEntry) bool
}

var _ heap.Interface = &jobHeap{}

func (h *jobHeap) Len() int           { return len(h.items) }
func (h *jobHeap) Less(i, j int) bool { return h.less(h.items[i], h.items[j]) }
func (h *jobHeap) Swap(i, j int) {
	h.items[i], h.items[j] = h.items[j], h.items[i]
	h.items[i].heapIndex = i
	h.items[j].heapIndex = j
}
func (h *jobHeap) Push(x any) {
	e := x.(*jobEntry)
	e.heapIndex = len(h.items)
	h.items = append(h.items, e)
}
func (h *jobHeap) Pop() any {
	last := len(h.items) - 1
	e := h.items[last]
	h.items[last] = nil
	h.items = h.items[:last]
	e.heapIndex = -1
	return e
}

func (h *jobHeap) peek() *jobEntry { return h.items[0] }

// sorted returns the entries in the heap's order, without changing it.
func (h *jobHeap) sorted() []*jobEntry {
	out := append([]*jobEntry(nil), h.items...)
	sort.Slice(out, func(i, j int) bool { return h.less(out[i], out[j]) })
	return out
}

// queueConfig configures a SchedulingQueue.
type queueConfig struct {
	clock                clock.WithTicker
	less                 LessFunc
	initialBackoff       time.Duration
	maxBackoff           time.Duration
	unschedulableTimeout time.Duration
	metrics              *metrics.Metrics
}

// SchedulingQueue holds the jobs that have pending pods, each as one unit.
//
// A job is in exactly one of: the active queue (a heap ordered by the
// LessFunc, from which Pop takes), the backoff queue (a heap ordered by
// backoff expiry), the unschedulable queue (a map; the job waits for a
// cluster event or for the unschedulable timeout), in flight (popped, being
// scheduled) or awaiting binding (scheduled, its pods not yet reported
// bound).
//
// The cache adds, updates and removes pending pods while holding its own
// lock; see the package documentation for the lock order.
type SchedulingQueue struct {
	clock                clock.WithTicker
	less                 LessFunc
	initialBackoff       time.Duration
	maxBackoff           time.Duration
	unschedulableTimeout time.Duration

	// lock guards every field below. Nothing that takes another lock is
	// called while holding it; the LessFunc and PreEnqueueChecks run under
	// it and must not call back into the queue or the cache.
	lock sync.Mutex
	// cond is signalled, with lock held, when a job enters the active queue
	// and when the queue closes, and broadcast when a Pop's ctx ends.
	cond          *sync.Cond
	jobs          map[JobID]*jobEntry
	activeQ       jobHeap
	backoffQ      jobHeap
	unschedulable map[JobID]*jobEntry
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

	activeGauge, backoffGauge, unschedulableGauge prometheus.Gauge
}

func newSchedulingQueue(cfg queueConfig) *SchedulingQueue {
	less := cfg.less
	if less == nil {
		less = DefaultLess
	}
	q := &SchedulingQueue{
		clock:                cfg.clock,
		less:                 less,
		initialBackoff:       cfg.initialBackoff,
		maxBackoff:           cfg.maxBackoff,
		unschedulableTimeout: cfg.unschedulableTimeout,
		jobs:                 map[JobID]*jobEntry{},
		unschedulable:        map[JobID]*jobEntry{},
		moveRequestCycle:     -1,
		activeGauge:          cfg.metrics.PendingJobs.WithLabelValues(metrics.QueueActive),
		backoffGauge:         cfg.metrics.PendingJobs.WithLabelValues(metrics.QueueBackoff),
		unschedulableGauge:   cfg.metrics.PendingJobs.WithLabelValues(metrics.QueueUnschedulable),
	}
	q.cond = sync.NewCond(&q.lock)
	q.activeQ.less = func(a, b *jobEntry) bool { return q.less(&a.QueuedJob, &b.QueuedJob) }
	q.backoffQ.less = func(a, b *jobEntry) bool { return a.backoffExpiry.Before(b.backoffExpiry) }
	return q
}

// Pop removes and returns the job at the head of the active queue, waiting
// until there is one. It fails when ctx ends or the queue is closed. The
// job is then in flight: the caller must end its cycle with Done or
// AddUnschedulable.
func (q *SchedulingQueue) Pop(ctx context.Context) (*QueuedJob, error) {
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
func (q *SchedulingQueue) AddUnschedulable(job *QueuedJob, attempt Attempt) error {
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
	e.backoffExpiry = now.Add(q.backoffDuration(e.Attempts))
	e.lastFailure = attempt.Reason
	if attempt.Err != nil && e.lastFailure == "" {
		e.lastFailure = attempt.Err.Error()
	}
	e.events = slices.Clone(attempt.Events)
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
func (q *SchedulingQueue) Done(id JobID) {
	q.lock.Lock()
	defer q.lock.Unlock()
	e, ok := q.jobs[id]
	if !ok || e.where != inFlight {
		return
	}
	q.leaveFlightLocked(e)
	if e.changedInFlight {
		e.changedInFlight = false
		q.moveToActiveLocked(e)
	} else {
		e.where = awaitingBinding
	}
	q.updateGaugesLocked()
}

// MoveAllToActiveOrBackoffQueue implements eventhandlers.PendingPodQueue.
// It also records a move request, so that jobs in flight that fail are
// retried after their backoff instead of waiting for an event they missed.
//
// Only jobs whose last attempt's Events match event are moved (see
// Attempt.Events); preCheck is asked only about those.
func (q *SchedulingQueue) MoveAllToActiveOrBackoffQueue(event eventhandlers.ClusterEvent, preCheck eventhandlers.PreEnqueueCheck) {
	q.lock.Lock()
	defer q.lock.Unlock()
	q.moveRequestCycle = q.schedulingCycle
	q.recordInFlightEventLocked(event)
	q.moveUnschedulableLocked(event, func(e *jobEntry) bool {
		return eventMatches(event, e.events) && (preCheck == nil || preCheck(e.Pods))
	})
}

// recordInFlightEventLocked remembers event for the jobs in flight.
func (q *SchedulingQueue) recordInFlightEventLocked(event eventhandlers.ClusterEvent) {
	if q.numInFlight == 0 || q.inFlightEventsLost {
		return
	}
	if n := len(q.inFlightEvents); n > 0 && q.inFlightEvents[n-1] == (inFlightEvent{q.schedulingCycle, event}) {
		return
	}
	if len(q.inFlightEvents) == maxInFlightEvents {
		klog.V(4).InfoS("Too many cluster events while jobs are in flight; any of them will count as relevant", "events", maxInFlightEvents)
		q.inFlightEvents, q.inFlightEventsLost = nil, true
		return
	}
	q.inFlightEvents = append(q.inFlightEvents, inFlightEvent{q.schedulingCycle, event})
}

// missedEventLocked reports whether a move request that may help e, popped
// in cycle, came while it was being scheduled.
func (q *SchedulingQueue) missedEventLocked(e *jobEntry, cycle int64) bool {
	if q.moveRequestCycle < cycle {
		return false
	}
	if len(e.events) == 0 || e.where != inFlight || q.inFlightEventsLost {
		// Any event counts, or the events were not recorded for e (it was
		// no longer in flight, or too many came).
		return true
	}
	for _, ev := range q.inFlightEvents {
		if ev.cycle >= cycle && eventMatches(ev.event, e.events) {
			return true
		}
	}
	return false
}

// leaveFlightLocked is called when e is about to leave the in-flight state
// (if it is in it).
func (q *SchedulingQueue) leaveFlightLocked(e *jobEntry) {
	if e.where != inFlight {
		return
	}
	q.numInFlight--
	if q.numInFlight == 0 {
		q.inFlightEvents, q.inFlightEventsLost = q.inFlightEvents[:0], false
	}
}

// moveUnschedulableLocked requeues the unschedulable jobs that pass ok.
func (q *SchedulingQueue) moveUnschedulableLocked(event eventhandlers.ClusterEvent, ok func(e *jobEntry) bool) {
	moved := 0
	for _, e := range q.unschedulable {
		if ok(e) {
			q.requeueLocked(e)
			moved++
		}
	}
	if moved > 0 {
		klog.V(4).InfoS("Moved unschedulable jobs", "event", event.String(), "jobs", moved)
		q.updateGaugesLocked()
	}
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
	q.moveUnschedulableLocked(eventhandlers.EventUnschedulableTimeout, func(e *jobEntry) bool {
		return now.Sub(e.unschedulableSince) > q.unschedulableTimeout
	})
}

// Lengths returns the number of jobs in each part of the queue.
func (q *SchedulingQueue) Lengths() QueueLengths {
	q.lock.Lock()
	defer q.lock.Unlock()
	return q.lengthsLocked()
}

func (q *SchedulingQueue) lengthsLocked() QueueLengths {
	l := QueueLengths{
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

// podChanged is called by the cache, under its lock, when pod, pending and
// of job id, was added or changed. relevant says whether something the
// scheduler looks at changed (anything but the status).
func (q *SchedulingQueue) podChanged(id JobID, pod *v1.Pod, relevant bool) {
	q.lock.Lock()
	defer q.lock.Unlock()
	defer q.updateGaugesLocked()
	e, ok := q.jobs[id]
	if !ok {
		// A job enters the queue at its first pod's creation, not when
		// this process first saw it: after a restart the initial list
		// arrives in no particular order, and FIFO must still hold.
		now := q.clock.Now()
		if created := pod.CreationTimestamp.Time; !created.IsZero() && created.Before(now) {
			now = created
		}
		e = &jobEntry{
			QueuedJob: QueuedJob{ID: id, Timestamp: now, InitialTimestamp: now},
			podIndex:  map[types.UID]int{},
		}
		e.setPod(pod)
		q.jobs[id] = e
		q.pushActiveLocked(e)
		return
	}
	e.setPod(pod)
	switch e.where {
	case inActive:
		heap.Fix(&q.activeQ, e.heapIndex)
	case inBackoff:
		// It is retried when its backoff ends anyway.
	case inUnschedulable:
		if relevant {
			q.requeueLocked(e)
		}
	case inFlight:
		if relevant {
			e.changedInFlight = true
		}
	case awaitingBinding:
		if relevant {
			q.moveToActiveLocked(e)
		}
	}
}

// podRemoved is called by the cache, under its lock, when the pod with uid
// of job id is no longer pending. A job without pending pods leaves the
// queue.
func (q *SchedulingQueue) podRemoved(id JobID, uid types.UID) {
	q.lock.Lock()
	defer q.lock.Unlock()
	e, ok := q.jobs[id]
	if !ok {
		return
	}
	e.deletePod(uid)
	switch {
	case len(e.Pods) == 0:
		q.leaveFlightLocked(e)
		q.detachLocked(e)
		delete(q.jobs, id)
		q.updateGaugesLocked()
	case e.where == inActive:
		heap.Fix(&q.activeQ, e.heapIndex)
	}
}

// assumptionExpired is called by the cache, under its lock, when a pod of
// job id that the scheduler had assumed was not reported bound in time and
// is pending again. A job awaiting binding is retried after its backoff,
// as after a failed attempt; a job in flight is retried when its cycle
// ends; an unschedulable job is requeued.
func (q *SchedulingQueue) assumptionExpired(id JobID, reason string) {
	q.lock.Lock()
	defer q.lock.Unlock()
	e, ok := q.jobs[id]
	if !ok {
		return
	}
	switch e.where {
	case awaitingBinding:
		now := q.clock.Now()
		e.Timestamp = now
		e.backoffExpiry = now.Add(q.backoffDuration(e.Attempts))
		e.lastFailure = reason
		q.moveToBackoffLocked(e)
	case inFlight:
		e.changedInFlight = true
	case inUnschedulable:
		e.lastFailure = reason
		q.requeueLocked(e)
	}
	q.updateGaugesLocked()
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
	}
}

func (q *SchedulingQueue) updateGaugesLocked() {
	q.activeGauge.Set(float64(q.activeQ.Len()))
	q.backoffGauge.Set(float64(q.backoffQ.Len()))
	q.unschedulableGauge.Set(float64(len(q.unschedulable)))
}
