package cache

import (
	"context"
	"sort"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// InformerBacklog is the backlog of one informer: events it delivered
// towards the event handler that the handler has not finished, as its
// informerhost.EventTracker counts them (see there how).
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
func (c *SchedulerCache) EventBacklog() []InformerBacklog {
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
func (c *SchedulerCache) runBacklogGauges(ctx context.Context) {
	type gauges struct{ pending, oldest prometheus.Gauge }
	byInformer := map[string]gauges{}
	update := func() {
		for _, b := range c.EventBacklog() {
			g, ok := byInformer[b.Informer]
			if !ok {
				g = gauges{
					pending: c.metrics.EventHandlerBacklog.WithLabelValues(b.Informer),
					oldest:  c.metrics.EventHandlerOldestPending.WithLabelValues(b.Informer),
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
