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

// Package metrics defines the metrics of the batch scheduler, as
// k8s.io/component-base/metrics metrics, each with a stability level
// (ALPHA or BETA; docs/metrics.md lists them), as kube-scheduler's are.
//
// Metrics are registered with a component-base registry supplied by the
// caller (the command's, see cmd/batch-scheduler/app) and never with the
// process-wide legacy registry, so that tests and embedders can run
// several schedulers in one process. Every metric name starts with
// "batch_scheduler_".
//
// component-base applies --disabled-metrics and --allow-metric-labels
// (process-wide settings) when a metric is created, that is registered:
// apply them first.
//
// Hot paths should resolve label values once (WithLabelValues) and keep
// the returned child (k8smetrics.CounterMetric, GaugeMetric or
// ObserverMetric), instead of looking it up on every observation.
package metrics

import (
	"fmt"

	k8smetrics "k8s.io/component-base/metrics"
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

// Metrics holds the scheduler's metrics that belong to no one component.
// Build it with New; the zero value is not usable.
type Metrics struct {
	// EventsHandled counts informer events delivered to the event handler,
	// by resource ("Pod", "Node", "widgets.v1.example.com", ...) and event
	// ("add", "update", "delete").
	EventsHandled *k8smetrics.CounterVec
	// HandlerPanics counts event-handler calls that panicked, with the same
	// labels as EventsHandled. The event was dropped; delivery went on.
	HandlerPanics *k8smetrics.CounterVec
	// EventHandlerBacklog is the number of events each informer delivered
	// towards the event handler that it has not finished handling, by
	// informer ("Pod", "Node", "custom/<name>", ...).
	EventHandlerBacklog *k8smetrics.GaugeVec
	// EventHandlerOldestPending is how long, in seconds, the oldest of
	// those events has waited, by informer; 0 when none is pending.
	EventHandlerOldestPending *k8smetrics.GaugeVec
	// PendingJobs is the number of jobs in each sub-queue of the scheduling
	// queue ("active", "backoff", "unschedulable").
	PendingJobs *k8smetrics.GaugeVec
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
	CacheSize *k8smetrics.GaugeVec
	// AssumedPodsExpired counts assumed pods whose bind succeeded but that
	// the informer did not report bound within the assumed-pod TTL, so
	// that the cache dropped the assumption.
	AssumedPodsExpired *k8smetrics.Counter
	// GrantOvercommittedNodes is the number of nodes where this scheduler's
	// pods request more than the cap on what it may use there (two-level
	// scheduling: the grant shrank below what runs there).
	GrantOvercommittedNodes *k8smetrics.Gauge
	// CacheVerifyRuns counts runs of the cache consistency checker
	// (/debug/cache/verify, SIGUSR2), including runs that failed to list.
	CacheVerifyRuns *k8smetrics.Counter
	// CacheVerifyDifferences counts the differences the checker reported
	// (those that persisted through its re-checks), by kind ("Node",
	// "Pod", "ExternalWorkload", "Job", "Queue", "Accounting", "Cap").
	CacheVerifyDifferences *k8smetrics.CounterVec
	// CacheVerifyDuration is how long a checker run took, re-checks
	// included.
	CacheVerifyDuration *k8smetrics.Histogram
	// QueueResources is, per queue (docs/queues.md), resource and kind,
	// an amount in the resource's base unit (cores for cpu, bytes for
	// memory): "allocated" (what its running pods request, its subtree's
	// included), "pending" (what its waiting pods request), "fair_share",
	// "guaranteed" and "limit" (only for the resources it limits).
	QueueResources *k8smetrics.GaugeVec
	// QueueJobs is, per queue and state ("pending", "running"), how many
	// of the queue's jobs have pods waiting and pods running.
	QueueJobs *k8smetrics.GaugeVec
	// QueueValid is 1 for a queue in use, 0 for one left out (an unknown
	// parent, a cycle, a bad amount; its jobs wait).
	QueueValid *k8smetrics.GaugeVec
}

// New creates the metrics and registers them with reg. A nil reg leaves
// them unregistered but counting (see Register), which is what most tests
// want. Registering twice with the same registry is an error.
func New(reg k8smetrics.KubeRegistry) (*Metrics, error) {
	m := &Metrics{
		EventsHandled: k8smetrics.NewCounterVec(&k8smetrics.CounterOpts{
			Namespace: Namespace, Name: "events_handled_total", StabilityLevel: k8smetrics.ALPHA,
			Help: "Informer events delivered to the event handler, by resource and event.",
		}, []string{"resource", "event"}),
		HandlerPanics: k8smetrics.NewCounterVec(&k8smetrics.CounterOpts{
			Namespace: Namespace, Name: "handler_panics_total", StabilityLevel: k8smetrics.ALPHA,
			Help: "Event handler calls that panicked (the event was dropped), by resource and event.",
		}, []string{"resource", "event"}),
		EventHandlerBacklog: k8smetrics.NewGaugeVec(&k8smetrics.GaugeOpts{
			Namespace: Namespace, Name: "event_handler_backlog", StabilityLevel: k8smetrics.ALPHA,
			Help: "Events an informer delivered towards the event handler that the handler has not finished, by informer.",
		}, []string{"informer"}),
		EventHandlerOldestPending: k8smetrics.NewGaugeVec(&k8smetrics.GaugeOpts{
			Namespace: Namespace, Name: "event_handler_oldest_pending_seconds", StabilityLevel: k8smetrics.BETA,
			Help: "How long the oldest event pending in the event handler has waited, by informer; 0 when none is pending.",
		}, []string{"informer"}),
		PendingJobs: k8smetrics.NewGaugeVec(&k8smetrics.GaugeOpts{
			Namespace: Namespace, Name: "pending_jobs", StabilityLevel: k8smetrics.BETA,
			Help: "Jobs waiting in the scheduling queue, by sub-queue (active, backoff, unschedulable).",
		}, []string{"queue"}),
		PendingJobOldest: newScrapedGauge(k8smetrics.BuildFQName(Namespace, "", "pending_job_oldest_seconds"),
			"How long the job that has waited longest in the scheduling queue has waited since its first pod's creation; 0 when none waits.",
			k8smetrics.BETA),
		UnschedulableJobs: newScrapedGaugeVec(k8smetrics.BuildFQName(Namespace, "", "unschedulable_jobs"),
			"Jobs waiting in the unschedulable sub-queue, by a plugin that rejected them in their last attempt and profile.",
			k8smetrics.ALPHA, "plugin", "profile"),
		CacheSize: k8smetrics.NewGaugeVec(&k8smetrics.GaugeOpts{
			Namespace: Namespace, Name: "cache_size", StabilityLevel: k8smetrics.ALPHA,
			Help: "Objects in the scheduler cache, by type (nodes, placeholder_nodes, assigned_pods, assumed_pods, pending_pods, jobs).",
		}, []string{"type"}),
		AssumedPodsExpired: k8smetrics.NewCounter(&k8smetrics.CounterOpts{
			Namespace: Namespace, Name: "assumed_pods_expired_total", StabilityLevel: k8smetrics.ALPHA,
			Help: "Assumed pods whose bind succeeded but that were not reported bound within the assumed-pod TTL, so the scheduler cache dropped the assumption.",
		}),
		GrantOvercommittedNodes: k8smetrics.NewGauge(&k8smetrics.GaugeOpts{
			Namespace: Namespace, Name: "grant_overcommitted_nodes", StabilityLevel: k8smetrics.ALPHA,
			Help: "Nodes where this scheduler's pods request more than it may use there (its grants shrank below what runs).",
		}),
		CacheVerifyRuns: k8smetrics.NewCounter(&k8smetrics.CounterOpts{
			Namespace: Namespace, Name: "cache_verify_runs_total", StabilityLevel: k8smetrics.ALPHA,
			Help: "Runs of the scheduler cache consistency checker, including runs that failed.",
		}),
		CacheVerifyDifferences: k8smetrics.NewCounterVec(&k8smetrics.CounterOpts{
			Namespace: Namespace, Name: "cache_verify_differences_total", StabilityLevel: k8smetrics.BETA,
			Help: "Differences between the scheduler cache and its sources that the consistency checker reported, by kind.",
		}, []string{"kind"}),
		CacheVerifyDuration: k8smetrics.NewHistogram(&k8smetrics.HistogramOpts{
			Namespace: Namespace, Name: "cache_verify_duration_seconds", StabilityLevel: k8smetrics.ALPHA,
			Help:    "Duration of a run of the scheduler cache consistency checker, re-checks included.",
			Buckets: k8smetrics.ExponentialBuckets(0.01, 2, 14),
		}),
		QueueResources: k8smetrics.NewGaugeVec(&k8smetrics.GaugeOpts{
			Namespace: Namespace, Name: "queue_resources", StabilityLevel: k8smetrics.ALPHA,
			Help: "Per queue, resource and kind (allocated, pending, fair_share, guaranteed, limit), an amount in the resource's base unit.",
		}, []string{"queue", "resource", "kind"}),
		QueueJobs: k8smetrics.NewGaugeVec(&k8smetrics.GaugeOpts{
			Namespace: Namespace, Name: "queue_jobs", StabilityLevel: k8smetrics.ALPHA,
			Help: "Per queue and state (pending, running), the queue's jobs with pods waiting or running.",
		}, []string{"queue", "state"}),
		QueueValid: k8smetrics.NewGaugeVec(&k8smetrics.GaugeOpts{
			Namespace: Namespace, Name: "queue_valid", StabilityLevel: k8smetrics.ALPHA,
			Help: "1 for a queue in use, 0 for one left out (its jobs wait).",
		}, []string{"queue"}),
	}
	if err := Register(reg, m.EventsHandled, m.HandlerPanics, m.EventHandlerBacklog, m.EventHandlerOldestPending, m.PendingJobs, m.CacheSize,
		m.AssumedPodsExpired, m.GrantOvercommittedNodes, m.CacheVerifyRuns, m.CacheVerifyDifferences, m.CacheVerifyDuration,
		m.QueueResources, m.QueueJobs, m.QueueValid); err != nil {
		return nil, fmt.Errorf("registering the scheduler's metrics: %w", err)
	}
	if err := RegisterCustom(reg, m.PendingJobOldest, m.UnschedulableJobs); err != nil {
		return nil, fmt.Errorf("registering the scheduler's metrics: %w", err)
	}
	return m, nil
}
