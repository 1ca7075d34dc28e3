// Package metrics defines the Prometheus metrics of the batch scheduler.
//
// Metrics are created from a prometheus.Registerer supplied by the caller and
// never touch the global default registry, so that tests and embedders can
// run several schedulers in one process. Every metric name starts with
// "batch_scheduler_".
//
// Hot paths should resolve label values once (WithLabelValues) and keep the
// returned prometheus.Counter or prometheus.Gauge, instead of looking the
// child up on every observation.
package metrics

import (
	"fmt"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
)

// Namespace prefixes every metric name.
const Namespace = "batch_scheduler"

// Label values of PendingJobs.
const (
	QueueActive        = "active"
	QueueBackoff       = "backoff"
	QueueUnschedulable = "unschedulable"
)

// Label values of CacheSize.
const (
	CacheNodes            = "nodes"
	CachePlaceholderNodes = "placeholder_nodes"
	CacheAssignedPods     = "assigned_pods"
	CacheAssumedPods      = "assumed_pods"
	CachePendingPods      = "pending_pods"
	CacheJobs             = "jobs"
)

// Metrics holds every metric of the scheduler. Build it with New; the zero
// value is not usable.
type Metrics struct {
	// EventsHandled counts informer events delivered to the event handler,
	// by resource ("Pod", "Node", "widgets.v1.example.com", ...) and event
	// ("add", "update", "delete").
	EventsHandled *prometheus.CounterVec
	// HandlerPanics counts event-handler calls that panicked, with the same
	// labels as EventsHandled. The event was dropped; delivery went on.
	HandlerPanics *prometheus.CounterVec
	// EventHandlerBacklog is the number of events each informer delivered
	// towards the event handler that it has not finished handling, by
	// informer ("Pod", "Node", "custom/<name>", ...).
	EventHandlerBacklog *prometheus.GaugeVec
	// EventHandlerOldestPending is how long, in seconds, the oldest of
	// those events has waited, by informer; 0 when none is pending.
	EventHandlerOldestPending *prometheus.GaugeVec
	// PendingJobs is the number of jobs in each sub-queue of the scheduling
	// queue ("active", "backoff", "unschedulable").
	PendingJobs *prometheus.GaugeVec
	// PendingJobOldest is how long, in seconds, the job that has waited
	// longest in the scheduling queue has waited since it entered it (its
	// first pod's creation); 0 when no job waits. Jobs whose pods are all
	// placed, waiting only for their binds to be reported, do not count.
	// PendingJobs says how many jobs wait, and the e2e latency histogram
	// how long those that got placed waited, but neither shows a job that
	// is never placed: this does. The scheduling queue computes it when
	// scraped (see ScrapedGauge); it is built after the metrics.
	PendingJobOldest *ScrapedGauge
	// UnschedulableJobs is, per plugin and profile, the jobs waiting in
	// the unschedulable sub-queue that the plugin rejected in their last
	// attempt (a job rejected by several plugins counts for each), as
	// kube-scheduler's unschedulable_pods counts pods. The scheduling
	// queue computes it when scraped.
	UnschedulableJobs *ScrapedGaugeVec
	// CacheSize is the number of objects in the scheduler cache, by type
	// ("nodes", "placeholder_nodes", "assigned_pods", "assumed_pods",
	// "pending_pods", "jobs"). Assigned pods are those the informer
	// reported bound; assumed pods are placed by the scheduler, their bind
	// in flight or not yet reported.
	CacheSize *prometheus.GaugeVec
	// AssumedPodsExpired counts assumed pods whose bind succeeded but that
	// the informer did not report bound within the assumed-pod TTL, so
	// that the cache dropped the assumption.
	AssumedPodsExpired prometheus.Counter
	// GrantOvercommittedNodes is the number of nodes where this scheduler's
	// pods request more than the cap on what it may use there (two-level
	// scheduling: the grant shrank below what runs there).
	GrantOvercommittedNodes prometheus.Gauge
	// CacheVerifyRuns counts runs of the cache consistency checker
	// (/debug/cache/verify, SIGUSR2), including runs that failed to list.
	CacheVerifyRuns prometheus.Counter
	// CacheVerifyDifferences counts the differences the checker reported
	// (those that persisted through its re-checks), by kind ("Node",
	// "Pod", "ExternalWorkload", "Job", "Queue", "Accounting", "Cap").
	CacheVerifyDifferences *prometheus.CounterVec
	// CacheVerifyDuration is how long a checker run took, re-checks
	// included.
	CacheVerifyDuration prometheus.Histogram
	// QueueResources is, per queue (docs/queues.md), resource and kind,
	// an amount in the resource's base unit (cores for cpu, bytes for
	// memory): "allocated" (what its running pods request, its subtree's
	// included), "pending" (what its waiting pods request), "fair_share",
	// "guaranteed" and "limit" (only for the resources it limits).
	QueueResources *prometheus.GaugeVec
	// QueueJobs is, per queue and state ("pending", "running"), how many
	// of the queue's jobs have pods waiting and pods running.
	QueueJobs *prometheus.GaugeVec
	// QueueValid is 1 for a queue in use, 0 for one left out (an unknown
	// parent, a cycle, a bad amount; its jobs wait).
	QueueValid *prometheus.GaugeVec
}

// New creates the metrics and registers them with reg. A nil reg leaves
// them unregistered, which is what most tests want. Registering twice with
// the same registry is an error.
func New(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
		EventsHandled: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: Namespace,
			Name:      "events_handled_total",
			Help:      "Informer events delivered to the event handler, by resource and event.",
		}, []string{"resource", "event"}),
		HandlerPanics: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: Namespace,
			Name:      "handler_panics_total",
			Help:      "Event handler calls that panicked (the event was dropped), by resource and event.",
		}, []string{"resource", "event"}),
		EventHandlerBacklog: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: Namespace,
			Name:      "event_handler_backlog",
			Help:      "Events an informer delivered towards the event handler that the handler has not finished, by informer.",
		}, []string{"informer"}),
		EventHandlerOldestPending: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: Namespace,
			Name:      "event_handler_oldest_pending_seconds",
			Help:      "How long the oldest event pending in the event handler has waited, by informer; 0 when none is pending.",
		}, []string{"informer"}),
		PendingJobs: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: Namespace,
			Name:      "pending_jobs",
			Help:      "Jobs waiting in the scheduling queue, by sub-queue (active, backoff, unschedulable).",
		}, []string{"queue"}),
		PendingJobOldest: newScrapedGauge(prometheus.BuildFQName(Namespace, "", "pending_job_oldest_seconds"),
			"How long the job that has waited longest in the scheduling queue has waited since its first pod's creation; 0 when none waits."),
		UnschedulableJobs: newScrapedGaugeVec(prometheus.BuildFQName(Namespace, "", "unschedulable_jobs"),
			"Jobs waiting in the unschedulable sub-queue, by a plugin that rejected them in their last attempt and profile.", "plugin", "profile"),
		CacheSize: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: Namespace,
			Name:      "cache_size",
			Help:      "Objects in the scheduler cache, by type (nodes, placeholder_nodes, assigned_pods, assumed_pods, pending_pods, jobs).",
		}, []string{"type"}),
		AssumedPodsExpired: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: Namespace,
			Name:      "assumed_pods_expired_total",
			Help:      "Assumed pods whose bind succeeded but that were not reported bound within the assumed-pod TTL, so the scheduler cache dropped the assumption.",
		}),
		GrantOvercommittedNodes: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: Namespace,
			Name:      "grant_overcommitted_nodes",
			Help:      "Nodes where this scheduler's pods request more than it may use there (its grants shrank below what runs).",
		}),
		CacheVerifyRuns: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: Namespace,
			Name:      "cache_verify_runs_total",
			Help:      "Runs of the scheduler cache consistency checker, including runs that failed.",
		}),
		CacheVerifyDifferences: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: Namespace,
			Name:      "cache_verify_differences_total",
			Help:      "Differences between the scheduler cache and its sources that the consistency checker reported, by kind.",
		}, []string{"kind"}),
		CacheVerifyDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Namespace: Namespace,
			Name:      "cache_verify_duration_seconds",
			Help:      "Duration of a run of the scheduler cache consistency checker, re-checks included.",
			Buckets:   prometheus.ExponentialBuckets(0.01, 2, 14),
		}),
		QueueResources: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: Namespace,
			Name:      "queue_resources",
			Help:      "Per queue, resource and kind (allocated, pending, fair_share, guaranteed, limit), an amount in the resource's base unit.",
		}, []string{"queue", "resource", "kind"}),
		QueueJobs: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: Namespace,
			Name:      "queue_jobs",
			Help:      "Per queue and state (pending, running), the queue's jobs with pods waiting or running.",
		}, []string{"queue", "state"}),
		QueueValid: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: Namespace,
			Name:      "queue_valid",
			Help:      "1 for a queue in use, 0 for one left out (its jobs wait).",
		}, []string{"queue"}),
	}
	if reg == nil {
		return m, nil
	}
	for _, c := range m.collectors() {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("registering scheduler metrics: %w", err)
		}
	}
	return m, nil
}

func (m *Metrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{m.EventsHandled, m.HandlerPanics, m.EventHandlerBacklog, m.EventHandlerOldestPending, m.PendingJobs, m.PendingJobOldest, m.UnschedulableJobs, m.CacheSize, m.AssumedPodsExpired, m.GrantOvercommittedNodes,
		m.CacheVerifyRuns, m.CacheVerifyDifferences, m.CacheVerifyDuration, m.QueueResources, m.QueueJobs, m.QueueValid}
}

// ScrapedGauge is a gauge without labels whose value a function computes
// each time the metric is collected. Unlike prometheus.GaugeFunc, the
// function is supplied after the gauge is created and registered, by the
// component that can compute it (which is built later, from the
// Metrics); until then the gauge reports no sample.
type ScrapedGauge struct {
	desc   *prometheus.Desc
	source atomic.Pointer[func() float64]
}

var _ prometheus.Collector = &ScrapedGauge{}

func newScrapedGauge(fqName, help string) *ScrapedGauge {
	return &ScrapedGauge{desc: prometheus.NewDesc(fqName, help, nil, nil)}
}

// SetSource makes f compute the gauge's value from now on, replacing the
// function set before. f runs on every scrape, concurrently with anything
// else, so it must be safe for concurrent use and cheap.
func (g *ScrapedGauge) SetSource(f func() float64) { g.source.Store(&f) }

// Describe implements prometheus.Collector.
func (g *ScrapedGauge) Describe(ch chan<- *prometheus.Desc) { ch <- g.desc }

// Collect implements prometheus.Collector.
func (g *ScrapedGauge) Collect(ch chan<- prometheus.Metric) {
	if f := g.source.Load(); f != nil {
		ch <- prometheus.MustNewConstMetric(g.desc, prometheus.GaugeValue, (*f)())
	}
}

// ScrapedGaugeVec is ScrapedGauge with labels: its source returns one
// value per combination of label values (in the order the labels were
// given), each time the metric is collected.
type ScrapedGaugeVec struct {
	desc   *prometheus.Desc
	source atomic.Pointer[func() map[LabelValues]float64]
}

// LabelValues are the values of a ScrapedGaugeVec's labels, in order:
// every ScrapedGaugeVec has exactly two labels.
type LabelValues [2]string

var _ prometheus.Collector = &ScrapedGaugeVec{}

func newScrapedGaugeVec(fqName, help string, labels ...string) *ScrapedGaugeVec {
	return &ScrapedGaugeVec{desc: prometheus.NewDesc(fqName, help, labels, nil)}
}

// SetSource makes f compute the values from now on; see
// ScrapedGauge.SetSource.
func (g *ScrapedGaugeVec) SetSource(f func() map[LabelValues]float64) { g.source.Store(&f) }

// Describe implements prometheus.Collector.
func (g *ScrapedGaugeVec) Describe(ch chan<- *prometheus.Desc) { ch <- g.desc }

// Collect implements prometheus.Collector.
func (g *ScrapedGaugeVec) Collect(ch chan<- prometheus.Metric) {
	f := g.source.Load()
	if f == nil {
		return
	}
	for lv, v := range (*f)() {
		ch <- prometheus.MustNewConstMetric(g.desc, prometheus.GaugeValue, v, lv[0], lv[1])
	}
}
