package metrics

import (
	"errors"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestNewRegistersEveryMetric(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	m, err := New(reg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	m.EventsHandled.WithLabelValues("Pod", "add").Inc()
	m.HandlerPanics.WithLabelValues("Pod", "add").Inc()
	m.PendingJobs.WithLabelValues(QueueActive).Set(2)
	m.CacheSize.WithLabelValues(CacheNodes).Set(3)
	m.AssumedPodsExpired.Inc()

	want := []string{
		"batch_scheduler_events_handled_total",
		"batch_scheduler_handler_panics_total",
		"batch_scheduler_pending_jobs",
		"batch_scheduler_cache_size",
		"batch_scheduler_assumed_pods_expired_total",
	}
	n, err := testutil.GatherAndCount(reg, want...)
	if err != nil {
		t.Fatalf("gathering: %v", err)
	}
	if n != len(want) {
		t.Errorf("gathered %d series of %v, want %d", n, want, len(want))
	}
	if err := testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP batch_scheduler_pending_jobs Jobs waiting in the scheduling queue, by sub-queue (active, backoff, unschedulable).
# TYPE batch_scheduler_pending_jobs gauge
batch_scheduler_pending_jobs{queue="active"} 2
`), "batch_scheduler_pending_jobs"); err != nil {
		t.Error(err)
	}
}

func TestNewTwiceOnOneRegistryFails(t *testing.T) {
	reg := prometheus.NewRegistry()
	if _, err := New(reg); err != nil {
		t.Fatalf("first New: %v", err)
	}
	_, err := New(reg)
	var are prometheus.AlreadyRegisteredError
	if !errors.As(err, &are) {
		t.Fatalf("second New: got %v, want an AlreadyRegisteredError", err)
	}
}

func TestNewWithoutRegistry(t *testing.T) {
	m, err := New(nil)
	if err != nil {
		t.Fatalf("New(nil): %v", err)
	}
	m.EventsHandled.WithLabelValues("Node", "delete").Inc()
	if got := testutil.ToFloat64(m.EventsHandled.WithLabelValues("Node", "delete")); got != 1 {
		t.Errorf("counter = %v, want 1", got)
	}
}

func TestScrapedGauge(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	m, err := New(reg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	const name = "batch_scheduler_pending_job_oldest_seconds"
	// Registered but without a source: described, and no sample.
	if n, err := testutil.GatherAndCount(reg, name); err != nil || n != 0 {
		t.Fatalf("before SetSource: %d samples, error %v; want none", n, err)
	}
	v := 12.5
	m.PendingJobOldest.SetSource(func() float64 { return v })
	want := `
# HELP batch_scheduler_pending_job_oldest_seconds How long the job that has waited longest in the scheduling queue has waited since its first pod's creation; 0 when none waits.
# TYPE batch_scheduler_pending_job_oldest_seconds gauge
batch_scheduler_pending_job_oldest_seconds 12.5
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), name); err != nil {
		t.Error(err)
	}
	// Computed at every scrape, and a later source replaces the first.
	v = 3
	if got := testutil.ToFloat64(m.PendingJobOldest); got != 3 {
		t.Errorf("after the value changed: %v, want 3", got)
	}
	m.PendingJobOldest.SetSource(func() float64 { return 7 })
	if got := testutil.ToFloat64(m.PendingJobOldest); got != 7 {
		t.Errorf("after a second SetSource: %v, want 7", got)
	}
}
