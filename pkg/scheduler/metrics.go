package scheduler

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// Attempt results.
const (
	resultScheduled     = "scheduled"
	resultUnschedulable = "unschedulable"
	resultError         = "error"
)

// Metrics of the scheduling loop.
type Metrics struct {
	// Attempts counts scheduling cycles by result and profile.
	Attempts *prometheus.CounterVec
	// AttemptDuration is the time of one cycle (pop to decision) by result
	// and profile.
	AttemptDuration *prometheus.HistogramVec
	// E2ELatency is the time from a job entering the queue (its first
	// pod's creation) to the successful bind of each of its pods.
	E2ELatency prometheus.Histogram
	// BindErrors counts bind calls that failed, including retried ones.
	BindErrors prometheus.Counter
	// PodsBound counts pods bound.
	PodsBound prometheus.Counter
	// BindLimit is the adaptive bound on bind calls in flight.
	BindLimit prometheus.Gauge
	// PreemptionAttempts counts preemption attempts by result.
	PreemptionAttempts *prometheus.CounterVec
	// PreemptionVictims counts the pods evicted by preemption.
	PreemptionVictims prometheus.Counter
}

// NewMetrics creates the metrics and registers them with reg (nil: not
// registered).
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
		Attempts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "batch_scheduler", Name: "schedule_attempts_total",
			Help: "Scheduling cycles (one job each), by result (scheduled, unschedulable, error) and profile.",
		}, []string{"result", "profile"}),
		AttemptDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "batch_scheduler", Name: "scheduling_attempt_duration_seconds",
			Help:    "Duration of one scheduling cycle, from pop to decision, by result (scheduled, unschedulable, error) and profile.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16),
		}, []string{"result", "profile"}),
		E2ELatency: prometheus.NewHistogram(prometheus.HistogramOpts{
			Namespace: "batch_scheduler", Name: "pod_scheduling_e2e_duration_seconds",
			Help:    "Time from the job entering the queue (its first pod's creation) to the successful bind of each of its pods.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 20),
		}),
		BindErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "batch_scheduler", Name: "bind_errors_total",
			Help: "Bind calls that failed, including ones later retried successfully.",
		}),
		PodsBound: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "batch_scheduler", Name: "pods_bound_total",
			Help: "Pods bound to a node by this scheduler.",
		}),
		BindLimit: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: "batch_scheduler", Name: "bind_concurrency_limit",
			Help: "The adaptive bound on bind calls in flight (with pod status writes and evictions): it grows while calls succeed and halves on 429, 5xx or a timeout, up to --bind-concurrency.",
		}),
		PreemptionAttempts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "batch_scheduler", Name: "preemption_attempts_total",
			Help: "Preemption attempts for jobs that did not fit, by result (preempted, unhelpful: nothing evicted as the job would not fit anyway, failed: an eviction was refused, error).",
		}, []string{"result"}),
		PreemptionVictims: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "batch_scheduler", Name: "preemption_victims_total",
			Help: "Pods evicted by preemption.",
		}),
	}
	if reg == nil {
		return m, nil
	}
	for _, c := range []prometheus.Collector{m.Attempts, m.AttemptDuration, m.E2ELatency, m.BindErrors, m.PodsBound, m.BindLimit, m.PreemptionAttempts, m.PreemptionVictims} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("registering scheduling metrics: %w", err)
		}
	}
	return m, nil
}
