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

package metrics

import (
	"errors"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	k8smetrics "k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/testutil"

	"github.com/batch-scheduler/batch-scheduler/pkg/metrics/metricstest"
)

func TestNewRegistersEveryMetric(t *testing.T) {
	reg := k8smetrics.NewKubeRegistry()
	m, err := New(reg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	m.EventsHandled.WithLabelValues("Pod", "add").Inc()
	m.HandlerPanics.WithLabelValues("Pod", "add").Inc()
	m.PendingJobs.WithLabelValues(QueueActive).Set(2)
	m.CacheSize.WithLabelValues(CacheNodes).Set(3)
	m.AssumedPodsExpired.Inc()

	families, err := reg.Gather()
	if err != nil {
		t.Fatalf("gathering: %v", err)
	}
	got := map[string]bool{}
	for _, f := range families {
		got[f.GetName()] = true
	}
	for _, name := range []string{
		"batch_scheduler_events_handled_total",
		"batch_scheduler_handler_panics_total",
		"batch_scheduler_pending_jobs",
		"batch_scheduler_cache_size",
		"batch_scheduler_assumed_pods_expired_total",
	} {
		if !got[name] {
			t.Errorf("%s was not gathered (got %v)", name, got)
		}
	}
	// The HELP text carries the stability level, as component-base
	// renders it.
	if err := testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP batch_scheduler_pending_jobs [BETA] Jobs waiting in the scheduling queue, by sub-queue (active, backoff, unschedulable).
# TYPE batch_scheduler_pending_jobs gauge
batch_scheduler_pending_jobs{queue="active"} 2
`), "batch_scheduler_pending_jobs"); err != nil {
		t.Error(err)
	}
	if err := testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP batch_scheduler_cache_size [ALPHA] Objects in the scheduler cache, by type (nodes, placeholder_nodes, assigned_pods, assumed_pods, pending_pods, jobs).
# TYPE batch_scheduler_cache_size gauge
batch_scheduler_cache_size{type="nodes"} 3
`), "batch_scheduler_cache_size"); err != nil {
		t.Error(err)
	}
}

func TestNewTwiceOnOneRegistryFails(t *testing.T) {
	reg := k8smetrics.NewKubeRegistry()
	if _, err := New(reg); err != nil {
		t.Fatalf("first New: %v", err)
	}
	_, err := New(reg)
	var are prometheus.AlreadyRegisteredError
	if !errors.As(err, &are) {
		t.Fatalf("second New: got %v, want an AlreadyRegisteredError", err)
	}
}

// TestNewOnSeparateRegistries: independent sets in one process, each
// counting for itself.
func TestNewOnSeparateRegistries(t *testing.T) {
	a, err := New(k8smetrics.NewKubeRegistry())
	if err != nil {
		t.Fatalf("New a: %v", err)
	}
	b, err := New(k8smetrics.NewKubeRegistry())
	if err != nil {
		t.Fatalf("New b: %v", err)
	}
	a.AssumedPodsExpired.Inc()
	if got := metricstest.CounterValue(t, b.AssumedPodsExpired); got != 0 {
		t.Errorf("b's counter = %v after a's was incremented, want 0", got)
	}
}

func TestNewWithoutRegistry(t *testing.T) {
	m, err := New(nil)
	if err != nil {
		t.Fatalf("New(nil): %v", err)
	}
	m.EventsHandled.WithLabelValues("Node", "delete").Inc()
	if got := metricstest.CounterValue(t, m.EventsHandled.WithLabelValues("Node", "delete")); got != 1 {
		t.Errorf("counter = %v, want 1", got)
	}
	m.PendingJobOldest.SetSource(func() float64 { return 4 })
	if got := metricstest.CollectedValue(t, m.PendingJobOldest); got != 4 {
		t.Errorf("scraped gauge = %v, want 4", got)
	}
}

func TestScrapedGauge(t *testing.T) {
	reg := k8smetrics.NewKubeRegistry()
	m, err := New(reg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	const name = "batch_scheduler_pending_job_oldest_seconds"
	// Registered but without a source: described, and no sample.
	if err := testutil.GatherAndCompare(reg, strings.NewReader(""), name); err != nil {
		t.Fatalf("before SetSource: %v; want no sample", err)
	}
	v := 12.5
	m.PendingJobOldest.SetSource(func() float64 { return v })
	want := `
# HELP batch_scheduler_pending_job_oldest_seconds [BETA] How long the job that has waited longest in the scheduling queue has waited since its first pod's creation; 0 when none waits.
# TYPE batch_scheduler_pending_job_oldest_seconds gauge
batch_scheduler_pending_job_oldest_seconds 12.5
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), name); err != nil {
		t.Error(err)
	}
	// Computed at every scrape, and a later source replaces the first.
	v = 3
	if got := metricstest.CollectedValue(t, m.PendingJobOldest); got != 3 {
		t.Errorf("after the value changed: %v, want 3", got)
	}
	m.PendingJobOldest.SetSource(func() float64 { return 7 })
	if got := metricstest.CollectedValue(t, m.PendingJobOldest); got != 7 {
		t.Errorf("after a second SetSource: %v, want 7", got)
	}
}

func TestScrapedGaugeVec(t *testing.T) {
	reg := k8smetrics.NewKubeRegistry()
	m, err := New(reg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	m.UnschedulableJobs.SetSource(func() map[LabelValues]float64 {
		return map[LabelValues]float64{{"NodeResourcesFit", "a"}: 2, {"TaintToleration", "b"}: 1}
	})
	want := `
# HELP batch_scheduler_unschedulable_jobs [ALPHA] Jobs waiting in the unschedulable sub-queue, by a plugin that rejected them in their last attempt and profile.
# TYPE batch_scheduler_unschedulable_jobs gauge
batch_scheduler_unschedulable_jobs{plugin="NodeResourcesFit",profile="a"} 2
batch_scheduler_unschedulable_jobs{plugin="TaintToleration",profile="b"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "batch_scheduler_unschedulable_jobs"); err != nil {
		t.Error(err)
	}
}
