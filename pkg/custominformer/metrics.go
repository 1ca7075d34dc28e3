package custominformer

import (
	"sort"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/batch-scheduler/batch-scheduler/pkg/metrics"
)

// Reasons an object from a source is rejected, the reason label of
// Metrics.InvalidObjects.
const (
	ReasonWrongType              = "wrong_type"
	ReasonMissingName            = "missing_name"
	ReasonMissingResourceVersion = "missing_resource_version"
	ReasonNotAList               = "not_a_list"
	ReasonTooLarge               = "too_large"
)

// Metrics are the per-source metrics of custom informers. Every metric
// has an "informer" label, the custom informer's name. Build it with
// NewMetrics; one Metrics serves any number of informers.
type Metrics struct {
	// Events counts watch events received from the source, by type:
	// "added", "modified", "deleted", "bookmark" and "error". Rejected
	// events count as "error". The differences a relist delivers are not
	// counted.
	Events *prometheus.CounterVec
	// ListErrors counts list attempts that failed, including lists
	// rejected for an invalid item.
	ListErrors *prometheus.CounterVec
	// WatchErrors counts watch attempts that could not be opened (a 410
	// included) and watch streams that ended with an error (an ERROR
	// event from the source, a 410 included, a stream that could not be
	// decoded, a rejected object). A stream that just ends is not one.
	WatchErrors *prometheus.CounterVec
	// InvalidObjects counts objects rejected by their reason (see the
	// Reason constants).
	InvalidObjects *prometheus.CounterVec
	// Relists counts the times the informer decided to list again after
	// its first list: after a 410, an ERROR event, a rejected event or
	// resourceVersions going backwards. A watch that merely ended is
	// resumed and not counted; the retries of one relist count once.
	Relists *prometheus.CounterVec
	// LastEvent is the Unix time of the last successful list or watch
	// event, bookmarks included.
	LastEvent *prometheus.GaugeVec

	// synced is collected at scrape time from the informers themselves.
	synced *syncedCollector
}

// NewMetrics creates the metrics and registers them with reg. A nil reg
// leaves them unregistered, which tests and embedders that do not export
// metrics may want.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	counter := func(name, help string, labels ...string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: metrics.Namespace, Subsystem: "custom_informer", Name: name, Help: help,
		}, append([]string{"informer"}, labels...))
	}
	m := &Metrics{
		Events:         counter("events_total", "Watch events received from the source, by type.", "type"),
		ListErrors:     counter("list_errors_total", "Lists from the source that failed or were rejected."),
		WatchErrors:    counter("watch_errors_total", "Watches of the source that could not be opened or ended with an error."),
		InvalidObjects: counter("invalid_objects_total", "Objects from the source rejected as invalid, by reason.", "reason"),
		Relists:        counter("relists_total", "Lists after the first one, each following a 410, an error, a rejected event or resourceVersions going backwards."),
		LastEvent: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: metrics.Namespace, Subsystem: "custom_informer", Name: "last_event_timestamp_seconds",
			Help: "Unix time of the last successful list or watch event from the source.",
		}, []string{"informer"}),
		synced: &syncedCollector{
			desc: prometheus.NewDesc(prometheus.BuildFQName(metrics.Namespace, "custom_informer", "synced"),
				"1 if the informer has completed its initial list, else 0.", []string{"informer"}, nil),
			informers: map[string]func() bool{},
		},
	}
	if reg != nil {
		for _, c := range []prometheus.Collector{m.Events, m.ListErrors, m.WatchErrors, m.InvalidObjects, m.Relists, m.LastEvent, m.synced} {
			if err := reg.Register(c); err != nil {
				return nil, err
			}
		}
	}
	return m, nil
}

// syncedCollector reports each informer's HasSynced when scraped.
type syncedCollector struct {
	desc *prometheus.Desc
	// mu guards informers. HasSynced is called after releasing it.
	mu        sync.Mutex
	informers map[string]func() bool
}

func (c *syncedCollector) add(name string, hasSynced func() bool) {
	c.mu.Lock()
	c.informers[name] = hasSynced
	c.mu.Unlock()
}

func (c *syncedCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c *syncedCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	names := make([]string, 0, len(c.informers))
	funcs := make(map[string]func() bool, len(c.informers))
	for n, f := range c.informers {
		names = append(names, n)
		funcs[n] = f
	}
	c.mu.Unlock()
	sort.Strings(names)
	for _, n := range names {
		v := 0.0
		if funcs[n]() {
			v = 1
		}
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, v, n)
	}
}

// sourceMetrics are one informer's children of Metrics, resolved once.
type sourceMetrics struct {
	added, modified, deleted, bookmark, errorEvents prometheus.Counter
	listErrors, watchErrors, relists                prometheus.Counter
	lastEvent                                       prometheus.Gauge
	invalid                                         *prometheus.CounterVec
	name                                            string
}

func (m *Metrics) forSource(name string) *sourceMetrics {
	return &sourceMetrics{
		added:       m.Events.WithLabelValues(name, "added"),
		modified:    m.Events.WithLabelValues(name, "modified"),
		deleted:     m.Events.WithLabelValues(name, "deleted"),
		bookmark:    m.Events.WithLabelValues(name, "bookmark"),
		errorEvents: m.Events.WithLabelValues(name, "error"),
		listErrors:  m.ListErrors.WithLabelValues(name),
		watchErrors: m.WatchErrors.WithLabelValues(name),
		relists:     m.Relists.WithLabelValues(name),
		lastEvent:   m.LastEvent.WithLabelValues(name),
		invalid:     m.InvalidObjects,
		name:        name,
	}
}
