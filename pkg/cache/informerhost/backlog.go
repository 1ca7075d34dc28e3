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

package informerhost

import (
	"context"
	"sort"
	"sync/atomic"
	"time"

	toolscache "k8s.io/client-go/tools/cache"
	k8smetrics "k8s.io/component-base/metrics"
)

// The backlog of an informer is the events it has delivered towards the
// event handler that the handler has not finished yet. A handler slower
// than the events it is given (a vendor handler calling out, a lock held
// too long) falls behind silently: the informer buffers without bound. The
// backlog makes that visible, in metrics and in /readyz.
//
// Each informer Run registers the handler on also gets a probe: a second,
// trivial registration that counts every notification and notes when it
// arrived. The informer gives both registrations exactly the same
// notifications (same resync period), each through its own buffer, and the
// probe's never backs up, so "counted by the probe" is "arrived" and
// "counted by the tracking wrapper around the handler" is "handled".
//
// Counting in the informer's transform instead would be wrong at the
// edges, for good: under watch-list streaming the transform runs twice on
// each object of a list; an update with an unchanged resourceVersion
// (every object of a relist that did not change) is transformed but never
// delivered; and the deletions a relist infers are delivered but never
// transformed. The counts would drift apart, and an ever-growing "oldest
// pending event" would leave the scheduler unready.
//
// The cost on the event path is one atomic add in the wrapper; the probe's
// work runs on its own goroutine.

// Ring sizes of the arrival times. Arrival times are kept per event for
// the last fineSize events and per block of blockSize events for the last
// coarseSize blocks, so the age of the oldest pending event is exact up to
// fineSize pending events, within one block up to blockSize*coarseSize
// (about a million), and a lower bound beyond.
const (
	fineSize   = 1024
	blockSize  = 256
	coarseSize = 4096
)

// EventTracker counts the events of one informer registration.
type EventTracker struct {
	name string
	// since converts the cache's clock into nanoseconds since the tracker
	// was made (monotonic with the real clock).
	since func() int64

	// arrived is written by the probe only (one goroutine), after the
	// arrival time of the event it counts is stored; handled by the
	// tracking wrapper only.
	arrived atomic.Int64
	handled atomic.Int64
	// fine[s%fineSize] is the arrival time of event s (the first event is
	// 1); coarse[b%coarseSize] that of the first event of block b (events
	// b*blockSize+1 to (b+1)*blockSize).
	fine   [fineSize]atomic.Int64
	coarse [coarseSize]atomic.Int64
}

func NewEventTracker(name string, since func() int64) *EventTracker {
	return &EventTracker{name: name, since: since}
}

// arrive counts one event arriving, at the probe.
func (t *EventTracker) arrive() {
	now := t.since()
	seq := t.arrived.Load() + 1
	t.fine[seq%fineSize].Store(now)
	if (seq-1)%blockSize == 0 {
		t.coarse[((seq-1)/blockSize)%coarseSize].Store(now)
	}
	t.arrived.Store(seq)
}

// State returns the number of events pending and how long the oldest of
// them has waited, at now (in the tracker's time).
func (t *EventTracker) State(now int64) (pending int64, oldest time.Duration) {
	handled := t.handled.Load()
	arrived := t.arrived.Load()
	if arrived <= handled {
		// Nothing pending. (The handler may run before the probe counts:
		// the informer notifies the two in no fixed order.)
		return 0, 0
	}
	first := handled + 1
	var at int64
	if arrived-first < fineSize {
		at = t.fine[first%fineSize].Load()
	} else {
		block := (first - 1) / blockSize
		if newest := (arrived - 1) / blockSize; newest-block >= coarseSize {
			// Older than the coarse ring reaches: the oldest block it
			// still holds, so a lower bound.
			block = newest - coarseSize + 1
		}
		at = t.coarse[block%coarseSize].Load()
	}
	return arrived - handled, max(0, time.Duration(now-at))
}

// Probe returns the handler of the probe registration.
func (t *EventTracker) Probe() toolscache.ResourceEventHandler {
	return toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { t.arrive() },
		UpdateFunc: func(any, any) { t.arrive() },
		DeleteFunc: func(any) { t.arrive() },
	}
}

// trackingHandler counts the events next has finished handling.
type trackingHandler struct {
	next    toolscache.ResourceEventHandler
	handled *atomic.Int64
}

var _ toolscache.ResourceEventHandler = trackingHandler{}

func (h trackingHandler) OnAdd(obj any, isInInitialList bool) {
	h.next.OnAdd(obj, isInInitialList)
	h.handled.Add(1)
}

func (h trackingHandler) OnUpdate(oldObj, newObj any) {
	h.next.OnUpdate(oldObj, newObj)
	h.handled.Add(1)
}

func (h trackingHandler) OnDelete(obj any) {
	h.next.OnDelete(obj)
	h.handled.Add(1)
}

// Track returns next, counting each event as handled once next returns.
// Register it in place of next, and Probe beside it.
func (t *EventTracker) Track(next toolscache.ResourceEventHandler) toolscache.ResourceEventHandler {
	return trackingHandler{next: next, handled: &t.handled}
}

// Now is the tracker's clock, as State wants it.
func (t *EventTracker) Now() int64 { return t.since() }

// InformerBacklog is the backlog of one informer: events it delivered
// towards the event handler that the handler has not finished, as its
// EventTracker counts them.
type InformerBacklog struct {
	// Informer names the informer as the sync barrier does: "Pod",
	// "widgets.v1.example.com", "custom/<name>".
	Informer string `json:"informer"`
	// Pending is the number of events waiting or being handled.
	Pending int64 `json:"pending"`
	// OldestPending is how long the oldest of them has waited; 0 when
	// none is pending.
	OldestPending time.Duration `json:"oldestPendingNanoseconds"`
}

// EventBacklog returns the backlog of every informer Run registered the
// event handler on, sorted by informer name; nil before Run.
func (c *Host) EventBacklog() []InformerBacklog {
	c.runMu.Lock()
	regs := c.registrations
	c.runMu.Unlock()
	out := make([]InformerBacklog, 0, len(regs))
	for _, r := range regs {
		if r.tracker == nil {
			continue
		}
		pending, oldest := r.tracker.State(r.tracker.Now())
		out = append(out, InformerBacklog{Informer: r.name, Pending: pending, OldestPending: oldest})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Informer < out[j].Informer })
	return out
}

// backlogGaugeInterval is how often the backlog gauges are refreshed.
const backlogGaugeInterval = time.Second

// runBacklogGauges refreshes the backlog gauges until ctx ends.
func (c *Host) runBacklogGauges(ctx context.Context) {
	type gauges struct{ pending, oldest k8smetrics.GaugeMetric }
	byInformer := map[string]gauges{}
	update := func() {
		for _, b := range c.EventBacklog() {
			g, ok := byInformer[b.Informer]
			if !ok {
				g = gauges{
					pending: c.opts.Metrics.EventHandlerBacklog.WithLabelValues(b.Informer),
					oldest:  c.opts.Metrics.EventHandlerOldestPending.WithLabelValues(b.Informer),
				}
				byInformer[b.Informer] = g
			}
			g.pending.Set(float64(b.Pending))
			g.oldest.Set(b.OldestPending.Seconds())
		}
	}
	ticker := c.opts.Clock.NewTicker(backlogGaugeInterval)
	defer ticker.Stop()
	for {
		update()
		select {
		case <-ctx.Done():
			return
		case <-ticker.C():
		}
	}
}
