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

package monitoring

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	k8smetrics "k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"

	// The command's package, for what it registers in the legacy registry
	// when imported (serving.go's client-go and leader election metrics
	// providers): the same registry metricsHandler serves.
	"github.com/batch-scheduler/batch-scheduler/cmd/batch-scheduler/app"
	"github.com/batch-scheduler/batch-scheduler/pkg/metrics/metricstest"
)

// metricKind says which series names a metric family has.
type metricKind int

const (
	// plain families (counters, gauges) have one series name, their own.
	plain metricKind = iota
	// sampled families (histograms, summaries) also have their name with
	// the suffixes of seriesSuffixes.
	sampled
)

// seriesSuffixes are the suffixes of a histogram's or summary's series.
var seriesSuffixes = []string{"_bucket", "_sum", "_count"}

// byName are the metric names a query may use that no registry of the
// scheduler describes: Prometheus's own per-target series, and the process
// collector's, which exports nothing where /proc is missing (the tests may
// run on macOS; the scheduler's image runs on Linux, where the legacy
// registry's gather below finds them anyway).
var byName = map[string]metricKind{
	"up":                            plain,
	"process_cpu_seconds_total":     plain,
	"process_resident_memory_bytes": plain,
	"process_virtual_memory_bytes":  plain,
	"process_open_fds":              plain,
	"process_max_fds":               plain,
	"process_start_time_seconds":    plain,
}

// exportedMetrics returns every metric family the scheduler's /metrics
// can serve, by name. It builds the scheduler's own metric sets on one
// component-base registry, as newServer does, and asks each collector to
// describe itself
// (a vector without children is described but gathers nothing); and it
// gathers the legacy registry that metricsHandler serves beside it, after
// creating a leader elector, which is when client-go's leader election
// metrics register themselves.
var exportedMetrics = sync.OnceValues(func() (map[string]metricKind, error) {
	out := map[string]metricKind{}
	for n, k := range byName {
		out[n] = k
	}
	own := metricstest.NewRecordingRegistry()
	if _, err := app.NewMetrics(own); err != nil {
		return nil, fmt.Errorf("app.NewMetrics: %w", err)
	}
	for _, c := range own.Collectors() {
		descs, err := metricstest.Describe(c)
		if err != nil {
			return nil, err
		}
		for _, d := range descs {
			out[d.Name] = kindOfCollector(c)
		}
	}

	if err := createLeaderElector(); err != nil {
		return nil, err
	}
	families, err := legacyregistry.DefaultGatherer.Gather()
	if err != nil {
		return nil, fmt.Errorf("gathering the legacy registry: %w", err)
	}
	for _, f := range families {
		switch f.GetType() {
		case dto.MetricType_HISTOGRAM, dto.MetricType_GAUGE_HISTOGRAM, dto.MetricType_SUMMARY:
			out[f.GetName()] = sampled
		default:
			out[f.GetName()] = plain
		}
	}
	return out, nil
})

// exported returns exportedMetrics, failing the test on an error.
func exported(t *testing.T) map[string]metricKind {
	t.Helper()
	m, err := exportedMetrics()
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// createLeaderElector creates, and never runs, a leader elector as
// runElected does. client-go registers its leader_election_* metrics with
// the provider that k8s.io/component-base/metrics/prometheus/clientgo/leaderelection
// installs when imported, at the first elector's creation; without that
// import there is no provider, and nothing is registered.
func createLeaderElector() error {
	lock := &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Namespace: "kube-system", Name: "batch-scheduler"},
		LockConfig: resourcelock.ResourceLockConfig{Identity: "test"},
	}
	_, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock:          lock,
		LeaseDuration: 15 * time.Second,
		RenewDeadline: 10 * time.Second,
		RetryPeriod:   2 * time.Second,
		Name:          "batch-scheduler",
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(context.Context) {},
			OnStoppedLeading: func() {},
		},
	})
	if err != nil {
		return fmt.Errorf("creating a leader elector: %w", err)
	}
	return nil
}

// kindOfCollector tells the histograms and summaries among the
// scheduler's collectors; the others (counters, gauges, the custom
// collectors of gauges) are plain.
func kindOfCollector(c prometheus.Collector) metricKind {
	switch c.(type) {
	case *k8smetrics.Histogram, *k8smetrics.HistogramVec, *k8smetrics.Summary, *k8smetrics.SummaryVec:
		return sampled
	}
	return plain
}

// TestExportedMetricsFound guards the collection of names: it must find
// each kind of source (the scheduler's own registry, described; the
// legacy registry, gathered; the leader election metrics, registered at
// an elector's creation), or every other test here would check against
// too little.
func TestExportedMetricsFound(t *testing.T) {
	got := exported(t)
	for name, kind := range map[string]metricKind{
		"batch_scheduler_pods_bound_total":                             plain,   // scheduler.NewMetrics
		"batch_scheduler_pod_scheduling_e2e_duration_seconds":          sampled, // a histogram
		"batch_scheduler_scheduling_attempt_duration_seconds":          sampled, // a histogram vector, no child yet
		"batch_scheduler_pending_jobs":                                 plain,   // metrics.New
		"batch_scheduler_pending_job_oldest_seconds":                   plain,   // a collector of its own
		"batch_scheduler_custom_informer_synced":                       plain,   // custominformer.NewMetrics
		"batch_scheduler_custom_informer_last_event_timestamp_seconds": plain,
		"leader_election_master_status":                                plain, // the legacy registry, after an elector
		"go_gc_duration_seconds":                                       sampled,
		"go_goroutines":                                                plain,
	} {
		k, ok := got[name]
		switch {
		case !ok:
			t.Errorf("%s is not among the exported metrics", name)
		case k != kind:
			t.Errorf("%s: kind %d, want %d", name, k, kind)
		}
	}
}
