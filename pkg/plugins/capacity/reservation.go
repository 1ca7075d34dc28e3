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

package capacity

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/klog/v2"

	"github.com/batch-scheduler/batch-scheduler/pkg/apis/config"
	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
	"github.com/batch-scheduler/batch-scheduler/pkg/plugins/pluginutil"
)

// ReservationName is the Reservation plugin's name in profiles.
const ReservationName = "Reservation"

// ReservationArgs are the Reservation plugin's arguments, typed in the
// configuration API (config.ReservationArgs).
type ReservationArgs = config.ReservationArgs

// Reservation holds room for a job that waits for it, so that the room
// running pods free goes to that job rather than to the jobs behind it:
// at PostFilter, before Reclaim and DefaultPreemption, it asks the
// preemption library to reserve (framework.RoomMaker.Reserve) the nodes
// where the job fits soonest as running pods end. Jobs of at most the
// job's priority then see that room as taken, except those that end
// before the job is expected to start (backfill). Eviction is left to
// the plugins after it, and only when waiting is not enough: the job is
// expected to start more than ReclaimAfter from now, or nothing says when
// and it has waited ReclaimAfter.
//
// Who reserves: a gang the cycle could not place whose queue (with every
// ancestor) uses no more than its fair share and has a share its quorum
// fits in; with no Queue, any gang of quorum 2 or more. Single pods,
// gangs of quorum 1 and the pods of an elastic gang beyond its running
// quorum do not: they take the room that frees as their turn comes. A
// gang reserves for its quorum, not for every pod it could run. At most one job per queue, the
// one ahead in the queue's order (priority, then age), and
// MaxReservations in all.
//
// A reservation ends when its job starts, is deleted or no longer fits
// even with every running pod gone, when a job ahead of it in its queue
// takes the queue's reservation, when its queue comes to use more than
// its fair share, or after MaxHold (the job then does not
// reserve again for as long). A job of higher priority is not held back
// by it. Pods that backfilled the reserved nodes and overran their
// expected runtime are evicted for the job once it is OverrunGrace late.
type Reservation struct {
	max                                 int
	reclaimAfter, maxHold, overrunGrace time.Duration
	// waitBlind is WaitWithoutEstimate.
	waitBlind time.Duration
	now       func() time.Time
	*reservations
}

// reservations is the table of reservations, one per scheduler: the
// plugins of every profile share it (framework.SharedStore).
type reservations struct {
	// mu guards held and cooldown: the scheduling loop writes them
	// (PostFilter), readers (Reservations) may run beside it. Nothing is
	// called with it held but the RoomMaker, which takes only the
	// nominator's lock.
	mu   sync.Mutex
	held map[framework.JobID]*heldRoom
	// cooldown holds the jobs that gave up a reservation after MaxHold,
	// with when they may reserve again.
	cooldown map[framework.JobID]time.Time
}

func newReservations() *reservations {
	return &reservations{held: map[framework.JobID]*heldRoom{}, cooldown: map[framework.JobID]time.Time{}}
}

// heldRoom is one job's reservation.
type heldRoom struct {
	queue    string
	priority int32
	// created is when the job entered the scheduling queue, since when it
	// first reserved.
	created, since time.Time
	// need is what the job's quorum asks for: its queue holds the room
	// only while it uses no more than its fair share of it.
	need framework.ResourceAmounts
	r    framework.Reservation
}

var (
	_ framework.PostFilterPlugin  = &Reservation{}
	_ framework.EnqueueExtensions = &Reservation{}
)

// NewReservation builds the plugin from its args.
func NewReservation(_ context.Context, args runtime.Object, h framework.Handle) (framework.Plugin, error) {
	a, err := pluginutil.TypedArgs[ReservationArgs](ReservationName, args)
	if err != nil {
		return nil, err
	}
	p := &Reservation{max: int(a.MaxReservations), now: time.Now, reservations: newReservations()}
	if store, ok := h.(framework.SharedStore); ok {
		shared, err := store.Shared(ReservationName, func() (any, error) { return p.reservations, nil })
		if err != nil {
			return nil, fmt.Errorf("%s: %w", ReservationName, err)
		}
		p.reservations = shared.(*reservations)
	}
	for _, d := range []struct {
		name, value string
		into        *time.Duration
	}{{"reclaimAfter", a.ReclaimAfter, &p.reclaimAfter}, {"waitWithoutEstimate", a.WaitWithoutEstimate, &p.waitBlind}, {"maxHold", a.MaxHold, &p.maxHold}, {"overrunGrace", a.OverrunGrace, &p.overrunGrace}} {
		v, err := time.ParseDuration(d.value)
		if err != nil {
			return nil, fmt.Errorf("%s args: %s: %w", ReservationName, d.name, err)
		}
		*d.into = v
	}
	return p, nil
}

// Name implements framework.Plugin.
func (*Reservation) Name() string { return ReservationName }

// EventsToRegister implements framework.EnqueueExtensions: a job that
// may not reserve because of its queue's share may once the shares move.
// The room a reservation waits for is the Filter plugins' events (pods
// ending), not this plugin's.
func (*Reservation) EventsToRegister() []framework.ClusterEventWithHint {
	return []framework.ClusterEventWithHint{{Event: framework.EventQueueChange}}
}

// decline hands the job on to the next PostFilter plugin.
func decline(format string, args ...any) *framework.Status {
	return framework.NewStatus(framework.Unschedulable, fmt.Sprintf(format, args...))
}

// PostFilter implements framework.PostFilterPlugin.
func (p *Reservation) PostFilter(ctx context.Context, _ *framework.CycleState, job *framework.Job, room framework.RoomMaker) (*framework.PostFilterResult, *framework.Status) {
	if p.max == 0 || job.Err != nil || len(job.Pending) == 0 {
		return nil, framework.NewStatus(framework.Unschedulable)
	}
	if !job.ID.Gang || job.MinAvailable <= 1 {
		// A single pod (or a gang of quorum 1, a Job of one pod at a
		// time, say) takes the room that frees as its turn comes; a
		// reservation is for what needs room on several nodes at once.
		return p.waitUnheld(ctx, job, room, nil)
	}
	if info, ok := room.Job(job.ID); ok && int32(info.Counts().Running()) >= job.MinAvailable {
		// An elastic gang that runs its quorum: the pods beyond it take
		// the room that frees as single pods do.
		return nil, framework.NewStatus(framework.Unschedulable)
	}
	now := p.now()
	logger := klog.FromContext(ctx)
	p.mu.Lock()
	defer p.mu.Unlock()
	p.forgetEndedLocked(ctx, room, job.Queues, now)
	if why := overShareWith(job); why != "" {
		return nil, decline("%s: nothing to reserve", why)
	}
	h := p.held[job.ID]
	if h != nil && now.Sub(h.since) > p.maxHold {
		room.Release(ctx, job.ID)
		delete(p.held, job.ID)
		p.cooldown[job.ID] = now.Add(p.maxHold)
		logger.V(2).Info("Reservation held too long; given up", "heldFor", now.Sub(h.since).Round(time.Second))
		return nil, decline("held a reservation for %s; gave it up for as long", now.Sub(h.since).Round(time.Second))
	}
	if until, ok := p.cooldown[job.ID]; ok {
		if now.Before(until) {
			return nil, decline("gave up a reservation; may reserve again in %s", until.Sub(now).Round(time.Second))
		}
		delete(p.cooldown, job.ID)
	}
	if h == nil {
		if st := p.makeSlotLocked(ctx, job, room); st != nil {
			// It may not reserve (the job ahead in its queue holds the
			// queue's reservation, or the table is full). Reclaiming for
			// it would evict for a job that is not the next to go, so it
			// waits as a single pod does, holding nothing, when the room
			// it needs frees within ReclaimAfter.
			return p.waitUnheld(ctx, job, room, st)
		}
	}
	if h != nil && h.r.StartKnown && now.After(h.r.Start.Add(p.overrunGrace)) {
		if res, ok := p.evictOverrun(ctx, h, room, now); ok {
			return res, nil
		}
	}
	r, err := room.Reserve(ctx, framework.ReservePolicy{Now: now,
		End:      func(t *framework.TaskInfo) (time.Time, bool) { return t.ExpectedEnd(now) },
		Defer:    preemptible(job, room),
		WaitOnly: ownQueueBeyondShare(job, room)})
	if err != nil {
		return nil, framework.AsStatus(fmt.Errorf("reserving room for job %s: %w", job.ID, err))
	}
	switch {
	case r.Evicting > 0:
		// The plugin that evicted them says so (its Waiting message).
		return nil, decline("%d pods evicted for it are still terminating", r.Evicting)
	case r.Deferred:
		return nil, decline("pods of lower priority may be preempted instead")
	case !r.Fits:
		if h != nil {
			room.Release(ctx, job.ID)
			delete(p.held, job.ID)
		}
		return nil, decline("the job does not fit even with every running pod gone")
	case r.FitsNow:
		// Nominated where it fits as the cluster is: nothing held.
		delete(p.held, job.ID)
		return &framework.PostFilterResult{}, nil
	}
	if h == nil {
		h = &heldRoom{queue: job.Queue, priority: job.Priority, created: job.Since, since: now, need: quorumRequest(job)}
		p.held[job.ID] = h
	}
	h.r = r
	msg := reservationMessage(r, now)
	switch {
	case r.StartKnown && r.Start.Sub(now) > p.reclaimAfter:
		// Waiting is not enough: the plugins after this one may evict.
		return &framework.PostFilterResult{Message: msg}, decline("waiting for running pods is expected to take more than %s", p.reclaimAfter)
	case !r.StartKnown && now.Sub(job.Since) >= p.waitBlind:
		// Nothing says waiting is enough: they may evict too.
		return &framework.PostFilterResult{Message: msg}, decline("nothing tells when the running pods end (waited %s)", now.Sub(job.Since).Round(time.Second))
	}
	return &framework.PostFilterResult{Message: msg}, nil
}

// waitUnheld decides, for a job that does not reserve (a single pod, or
// a gang that may not: declined says why, nil for a single pod), between
// waiting for running pods to end and handing it on to the plugins after
// this one (Reclaim, DefaultPreemption, with declined as this plugin's
// reason): it waits, holding nothing, when its queue is owed the room and
// the room it needs is expected to free within ReclaimAfter, as a
// reserving job would. The scheduling queue tries the neediest queue's
// jobs first, so the room that frees comes to it without an eviction.
func (p *Reservation) waitUnheld(ctx context.Context, job *framework.Job, room framework.RoomMaker, declined *framework.Status) (*framework.PostFilterResult, *framework.Status) {
	notWaiting := declined
	if notWaiting == nil {
		notWaiting = framework.NewStatus(framework.Unschedulable)
	}
	if job.Queues == nil || overShareWith(job) != "" {
		// Without queues nothing is reclaimed for it; above its share,
		// nothing is owed to it.
		return nil, notWaiting
	}
	now := p.now()
	r, err := room.Reserve(ctx, framework.ReservePolicy{Now: now, Probe: true,
		End:   func(t *framework.TaskInfo) (time.Time, bool) { return t.ExpectedEnd(now) },
		Defer: preemptible(job, room)})
	if err != nil {
		return nil, framework.AsStatus(fmt.Errorf("finding when job %s could start: %w", job.ID, err))
	}
	if !r.Fits || r.FitsNow || r.Deferred || r.Evicting > 0 || !r.StartKnown || r.Start.Sub(now) > p.reclaimAfter {
		return nil, notWaiting
	}
	msg := fmt.Sprintf("waiting for %d running pods to end rather than evicting: expected to start in %s",
		r.WaitFor, r.Start.Sub(now).Round(time.Second))
	if declined != nil {
		msg += "; no reservation: " + declined.Message()
	}
	return &framework.PostFilterResult{Message: msg}, nil
}

// makeSlotLocked makes room in the table for job, which holds no
// reservation: it may take its queue's from a job behind it, and must
// find the table below MaxReservations. A status is the reason it may
// not reserve.
func (p *Reservation) makeSlotLocked(ctx context.Context, job *framework.Job, room framework.RoomMaker) *framework.Status {
	for id, other := range p.held {
		if other.queue != job.Queue {
			continue
		}
		if other.priority > job.Priority || other.priority == job.Priority && !job.Since.Before(other.created) {
			return decline("job %s, ahead in queue %s, holds its reservation", id, job.Queue)
		}
		room.Release(ctx, id)
		delete(p.held, id)
		klog.FromContext(ctx).V(2).Info("Taking over the queue's reservation from a job behind", "queue", job.Queue, "from", id.String())
	}
	if len(p.held) >= p.max {
		return decline("%d jobs hold reservations, the most allowed", len(p.held))
	}
	return nil
}

// forgetEndedLocked drops the reservations of jobs that are gone or have
// nothing left to place, and whose nominations are gone; and releases
// those of jobs whose queue now uses more than its fair share by qs (the
// cycle's queue snapshot; nil: no queues): a queue that was alone when
// its job reserved owes the room to the queues that came since, and a
// held reservation would keep it from them (their reclaim would plan
// around room nobody may use).
func (p *Reservation) forgetEndedLocked(ctx context.Context, room framework.RoomMaker, qs *framework.QueueSnapshot, now time.Time) {
	for id, h := range p.held {
		if info, ok := room.Job(id); !ok || !hasPending(info) {
			delete(p.held, id)
			continue
		}
		if qs == nil || h.queue == "" {
			continue
		}
		for _, a := range qs.Path(h.queue) {
			if overShare(a, h.need, nil) {
				room.Release(ctx, id)
				delete(p.held, id)
				klog.FromContext(ctx).V(2).Info("Released a reservation: its queue uses more than its fair share", "job", id.String(), "queue", a.Name)
				break
			}
		}
	}
	for id, until := range p.cooldown {
		if now.After(until) {
			delete(p.cooldown, id)
		}
	}
}

func hasPending(j *framework.JobInfo) bool {
	for _, t := range j.Tasks {
		if t.Status == framework.TaskPending {
			return true
		}
	}
	return false
}

// evictOverrun evicts, for h's late job, the pods that started on its
// reserved nodes after it reserved them (they came in on the promise of
// their runtime: backfill) and ran past their expected end, when that
// lets it start. Pods that ran there before are waited for, late or not:
// the reservation was planned around them, and evicting them would throw
// away more work than it saves.
func (p *Reservation) evictOverrun(ctx context.Context, h *heldRoom, room framework.RoomMaker, now time.Time) (*framework.PostFilterResult, bool) {
	nodes := make(map[string]bool, len(h.r.Nodes))
	for _, n := range h.r.Nodes {
		nodes[n] = true
	}
	overran := func(t *framework.TaskInfo) bool {
		if !nodes[t.NodeName] {
			return false
		}
		if s := t.StartTime(); s != nil && !s.After(h.since) {
			return false // there before the reservation
		}
		end, ok := t.ExpectedEnd(now)
		return ok && end.Before(now)
	}
	out, err := room.MakeRoom(ctx, overran)
	if err != nil {
		klog.FromContext(ctx).Error(err, "Evicting pods that overran their expected runtime on reserved nodes")
		return nil, false
	}
	if !out.Fits || out.Victims == 0 {
		return nil, false
	}
	return &framework.PostFilterResult{Message: fmt.Sprintf(
		"reservation: evicting %d pods that overran their expected runtime on the reserved nodes", out.Victims)}, true
}

// Held is a reservation as Reservations lists it.
type Held struct {
	Job   framework.JobID
	Queue string
	Since time.Time
	framework.Reservation
}

// Reservations lists the reservations held, by job.
func (p *reservations) Reservations() []Held {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]Held, 0, len(p.held))
	for id, h := range p.held {
		out = append(out, Held{Job: id, Queue: h.queue, Since: h.since, Reservation: h.r})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Job.String() < out[j].Job.String() })
	return out
}

// preemptible reports the running pods DefaultPreemption may take for
// job: of lower priority and, with queues, of the job's queue. While one
// runs, preemption by priority goes first, as it does without
// reservations.
func preemptible(job *framework.Job, room framework.RoomMaker) func(t *framework.TaskInfo) bool {
	return func(t *framework.TaskInfo) bool {
		if t.Priority() >= job.Priority {
			return false
		}
		if job.Queues == nil {
			return true
		}
		j, ok := room.Job(t.Job)
		return ok && j.QueueName() == job.Queue
	}
}

// reservationMessage words r for the pods' condition.
func reservationMessage(r framework.Reservation, now time.Time) string {
	nodes := r.Nodes
	more := ""
	if len(nodes) > 3 {
		nodes, more = nodes[:3], fmt.Sprintf(" and %d more", len(r.Nodes)-3)
	}
	start := "start time unknown (a running pod it waits for gives no expected runtime)"
	if r.StartKnown {
		start = fmt.Sprintf("expected to start in %s (at %s)", r.Start.Sub(now).Round(time.Second), r.Start.UTC().Format(time.RFC3339))
	}
	return fmt.Sprintf("reservation: room held on %s%s until %d running pods end; %s",
		strings.Join(nodes, ", "), more, r.WaitFor, start)
}

// overShareWith says why job's queue may not reserve: the queue (or an
// ancestor) already uses more than its fair share of a resource the job
// needs (it borrows; the room it would hold is others'), or its share is
// too small for the job's quorum alone. "" when it may, or when there are
// no queues. What the queue's own running jobs use is not held against
// it: the room they free is what the reservation waits for.
func overShareWith(job *framework.Job) string {
	qs := job.Queues
	if qs == nil {
		return ""
	}
	path := qs.Path(job.Queue)
	if len(path) == 0 {
		return "queue " + job.Queue + " is unknown"
	}
	need := quorumRequest(job)
	for _, a := range path {
		if name, over := exceedsAll(need, a.FairShare, need); over {
			return fmt.Sprintf("the job's quorum exceeds queue %s's fair share (%s %s/%s)", a.Name, name,
				framework.FormatAmount(name, need[name]), framework.FormatAmount(name, a.FairShare[name]))
		}
		if overShare(a, need, nil) {
			return fmt.Sprintf("queue %s uses more than its fair share", a.Name)
		}
	}
	return ""
}

// ownQueueBeyondShare returns, when job's queue (or an ancestor) would
// use more than its fair share with the job's quorum started, the rule
// that it waits only for pods of its own queue: the room other queues'
// pods free is not its to hold (a queue at its share that reserved it
// would keep it from a queue owed room, whose reclaim may take no more).
// nil when there are no queues or the job fits within the share.
func ownQueueBeyondShare(job *framework.Job, room framework.RoomMaker) func(t *framework.TaskInfo) bool {
	qs := job.Queues
	if qs == nil {
		return nil
	}
	need := quorumRequest(job)
	beyond := false
	for _, a := range qs.Path(job.Queue) {
		if _, over := exceedsAll(sumAmounts(a.Allocated, need), a.FairShare, need); over {
			beyond = true
			break
		}
	}
	if !beyond {
		return nil
	}
	return func(t *framework.TaskInfo) bool {
		j, ok := room.Job(t.Job)
		return ok && j.QueueName() == job.Queue
	}
}
