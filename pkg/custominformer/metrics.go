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

package custominformer

import (
	"fmt"
	"sort"
	"sync"

	k8smetrics "k8s.io/component-base/metrics"

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
	Events *k8smetrics.CounterVec
	// ListErrors counts list attempts that failed, including lists
	// rejected for an invalid item.
	ListErrors *k8smetrics.CounterVec
	// WatchErrors counts watch attempts that could not be opened (a 410
	// included) and watch streams that ended with an error (an ERROR
	// event from the source, a 410 included, a stream that could not be
	// decoded, a rejected object). A stream that just ends is not one.
	WatchErrors *k8smetrics.CounterVec
	// InvalidObjects counts objects rejected by their reason (see the
	// Reason constants).
	InvalidObjects *k8smetrics.CounterVec
	// Relists counts the times the informer decided to list again after
	// its first list: after a 410, an ERROR event, a rejected event or
	// resourceVersions going backwards. A watch that merely ended is
	// resumed and not counted; the retries of one relist count once.
	Relists *k8smetrics.CounterVec
	// LastEvent is the Unix time of the last successful list or watch
	// event, bookmarks included.
	LastEvent *k8smetrics.GaugeVec

	// synced is collected at scrape time from the informers themselves.
	synced *syncedCollector
}

// NewMetrics creates the metrics and registers them with reg. A nil reg
// leaves them unregistered but counting (see metrics.Register), which
// tests and embedders that do not export metrics may want.
func NewMetrics(reg k8smetrics.KubeRegistry) (*Metrics, error) {
	counter := func(name, help string, labels ...string) *k8smetrics.CounterVec {
		return k8smetrics.NewCounterVec(&k8smetrics.CounterOpts{
			Namespace: metrics.Namespace, Subsystem: subsystem, Name: name, Help: help, StabilityLevel: k8smetrics.ALPHA,
		}, append([]string{"informer"}, labels...))
	}
	m := &Metrics{
		Events:         counter("events_total", "Watch events received from the source, by type.", "type"),
		ListErrors:     counter("list_errors_total", "Lists from the source that failed or were rejected."),
		WatchErrors:    counter("watch_errors_total", "Watches of the source that could not be opened or ended with an error."),
		InvalidObjects: counter("invalid_objects_total", "Objects from the source rejected as invalid, by reason.", "reason"),
		Relists:        counter("relists_total", "Lists after the first one, each following a 410, an error, a rejected event or resourceVersions going backwards."),
		LastEvent: k8smetrics.NewGaugeVec(&k8smetrics.GaugeOpts{
			Namespace: metrics.Namespace, Subsystem: subsystem, Name: "last_event_timestamp_seconds", StabilityLevel: k8smetrics.BETA,
			Help: "Unix time of the last successful list or watch event from the source.",
		}, []string{"informer"}),
		synced: &syncedCollector{
			CustomCollector: metrics.NewCustomCollector(k8smetrics.BuildFQName(metrics.Namespace, subsystem, "synced"),
				"1 if the informer has completed its initial list, else 0.", k8smetrics.BETA, "informer"),
			informers: map[string]func() bool{},
		},
	}
	if err := metrics.Register(reg, m.Events, m.ListErrors, m.WatchErrors, m.InvalidObjects, m.Relists, m.LastEvent); err != nil {
		return nil, fmt.Errorf("registering the custom informer metrics: %w", err)
	}
	if err := metrics.RegisterCustom(reg, m.synced); err != nil {
		return nil, fmt.Errorf("registering the custom informer metrics: %w", err)
	}
	return m, nil
}

// subsystem is the middle part of the metrics' names.
const subsystem = "custom_informer"

// syncedCollector reports each informer's HasSynced when scraped.
type syncedCollector struct {
	metrics.CustomCollector
	// mu guards informers. HasSynced is called after releasing it.
	mu        sync.Mutex
	informers map[string]func() bool
}

func (c *syncedCollector) add(name string, hasSynced func() bool) {
	c.mu.Lock()
	c.informers[name] = hasSynced
	c.mu.Unlock()
}

// CollectWithStability implements k8smetrics.StableCollector.
func (c *syncedCollector) CollectWithStability(ch chan<- k8smetrics.Metric) {
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
		ch <- k8smetrics.NewLazyConstMetric(c.Desc, k8smetrics.GaugeValue, v, n)
	}
}

// sourceMetrics are one informer's children of Metrics, resolved once.
type sourceMetrics struct {
	added, modified, deleted, bookmark, errorEvents k8smetrics.CounterMetric
	listErrors, watchErrors, relists                k8smetrics.CounterMetric
	lastEvent                                       k8smetrics.GaugeMetric
	invalid                                         *k8smetrics.CounterVec
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
