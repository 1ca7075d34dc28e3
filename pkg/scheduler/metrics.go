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

package scheduler

import (
	"fmt"
	"sync/atomic"
	"time"

	k8smetrics "k8s.io/component-base/metrics"

	frameworkruntime "github.com/batch-scheduler/batch-scheduler/pkg/framework/runtime"
	"github.com/batch-scheduler/batch-scheduler/pkg/metrics"
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
	Attempts *k8smetrics.CounterVec
	// AttemptDuration is the time of one cycle (pop to decision) by result
	// and profile.
	AttemptDuration *k8smetrics.HistogramVec
	// E2ELatency is the time from a job entering the queue (its first
	// pod's creation) to the successful bind of each of its pods.
	E2ELatency *k8smetrics.Histogram
	// BindErrors counts bind calls that failed, including retried ones.
	BindErrors *k8smetrics.Counter
	// AssumeConflicts counts placements that could not be committed to
	// the cache because the capacity they were decided on shrank meanwhile
	// (or a pod changed), and were tried again.
	AssumeConflicts *k8smetrics.Counter
	// PodsBound counts pods bound.
	PodsBound *k8smetrics.Counter
	// BindLimit is the adaptive bound on bind calls in flight.
	BindLimit *k8smetrics.Gauge
	// PreemptionAttempts counts preemption attempts by result.
	PreemptionAttempts *k8smetrics.CounterVec
	// PreemptionVictims counts the pods evicted by preemption, by plugin.
	PreemptionVictims *k8smetrics.CounterVec
	// StartEstimateError is how far a job's start was from the estimate
	// its last failed attempt told it (pkg/standing), by basis
	// (reservation, capacity) and direction (late, early).
	StartEstimateError *k8smetrics.HistogramVec
	// Reservations counts the jobs holding a reservation.
	Reservations *k8smetrics.Gauge
	// RankingReuses counts the pods placed by the ranking of nodes of the
	// alike pod before them (see ranking).
	RankingReuses *k8smetrics.Counter
	// BackfilledPods counts the pods bound in room another job's
	// reservation holds (framework.BackfillOn).
	BackfilledPods *k8smetrics.Counter
}

// NewMetrics creates the metrics and registers them with reg (nil: not
// registered, but counting; see metrics.Register).
func NewMetrics(reg k8smetrics.KubeRegistry) (*Metrics, error) {
	m := &Metrics{
		Attempts: k8smetrics.NewCounterVec(&k8smetrics.CounterOpts{
			Namespace: metrics.Namespace, Name: "schedule_attempts_total", StabilityLevel: k8smetrics.BETA,
			Help: "Scheduling cycles (one job each), by result (scheduled, unschedulable, error) and profile.",
		}, []string{"result", "profile"}),
		AttemptDuration: k8smetrics.NewHistogramVec(&k8smetrics.HistogramOpts{
			Namespace: metrics.Namespace, Name: "scheduling_attempt_duration_seconds", StabilityLevel: k8smetrics.ALPHA,
			Help:    "Duration of one scheduling cycle, from pop to decision, by result (scheduled, unschedulable, error) and profile.",
			Buckets: k8smetrics.ExponentialBuckets(0.0005, 2, 16),
		}, []string{"result", "profile"}),
		E2ELatency: k8smetrics.NewHistogram(&k8smetrics.HistogramOpts{
			Namespace: metrics.Namespace, Name: "pod_scheduling_e2e_duration_seconds", StabilityLevel: k8smetrics.BETA,
			Help:    "Time from the job entering the queue (its first pod's creation) to the successful bind of each of its pods.",
			Buckets: k8smetrics.ExponentialBuckets(0.001, 2, 20),
		}),
		BindErrors: k8smetrics.NewCounter(&k8smetrics.CounterOpts{
			Namespace: metrics.Namespace, Name: "bind_errors_total", StabilityLevel: k8smetrics.BETA,
			Help: "Bind calls that failed, including ones later retried successfully.",
		}),
		AssumeConflicts: k8smetrics.NewCounter(&k8smetrics.CounterOpts{
			Namespace: metrics.Namespace, Name: "assume_conflicts_total", StabilityLevel: k8smetrics.ALPHA,
			Help: "Placements not committed to the cache because a node's capacity (a grant, allocatable or external usage) shrank after the cycle's snapshot by more than the room the placement left, or a pod changed; the job is tried again.",
		}),
		PodsBound: k8smetrics.NewCounter(&k8smetrics.CounterOpts{
			Namespace: metrics.Namespace, Name: "pods_bound_total", StabilityLevel: k8smetrics.BETA,
			Help: "Pods bound to a node by this scheduler.",
		}),
		BindLimit: k8smetrics.NewGauge(&k8smetrics.GaugeOpts{
			Namespace: metrics.Namespace, Name: "bind_concurrency_limit", StabilityLevel: k8smetrics.ALPHA,
			Help: "The adaptive bound on bind calls in flight (with pod status writes and evictions): it grows while calls succeed and halves on 429, 5xx or a timeout, up to --bind-concurrency.",
		}),
		PreemptionAttempts: k8smetrics.NewCounterVec(&k8smetrics.CounterOpts{
			Namespace: metrics.Namespace, Name: "preemption_attempts_total", StabilityLevel: k8smetrics.ALPHA,
			Help: "Preemption attempts for jobs that did not fit, by result (preempted, borrowed: room other preemptions free taken without evicting more, unhelpful: nothing evicted as the job would not fit anyway, failed: an eviction was refused, error).",
		}, []string{"result"}),
		PreemptionVictims: k8smetrics.NewCounterVec(&k8smetrics.CounterOpts{
			Namespace: metrics.Namespace, Name: "preemption_victims_total", StabilityLevel: k8smetrics.ALPHA,
			Help: "Pods evicted by preemption, by the PostFilter plugin that evicted them (Reclaim, DefaultPreemption, Reservation for overrunning pods, or a vendor's).",
		}, []string{"plugin"}),
		StartEstimateError: k8smetrics.NewHistogramVec(&k8smetrics.HistogramOpts{
			Namespace: metrics.Namespace, Name: "start_estimate_error_seconds", StabilityLevel: k8smetrics.ALPHA,
			Help:    "How far a job's start (its placement) was from the start its last failed attempt estimated, by basis (reservation: the room it held; capacity: the running pods' expected ends) and direction (late: it started after the estimate; early: before).",
			Buckets: k8smetrics.ExponentialBuckets(0.5, 2, 14),
		}, []string{"basis", "direction"}),
		Reservations: k8smetrics.NewGauge(&k8smetrics.GaugeOpts{
			Namespace: metrics.Namespace, Name: "reservations", StabilityLevel: k8smetrics.ALPHA,
			Help: "Jobs holding a reservation: room on chosen nodes kept for them until running pods end (the Reservation plugin).",
		}),
		RankingReuses: k8smetrics.NewCounter(&k8smetrics.CounterOpts{
			Namespace: metrics.Namespace, Name: "ranking_reuses_total", StabilityLevel: k8smetrics.ALPHA,
			Help: "Pods placed by the ranking of nodes computed for the alike pod before them, filtering and scoring again only the nodes that changed since, instead of a whole window of nodes.",
		}),
		BackfilledPods: k8smetrics.NewCounter(&k8smetrics.CounterOpts{
			Namespace: metrics.Namespace, Name: "backfilled_pods_total", StabilityLevel: k8smetrics.ALPHA,
			Help: "Pods bound on a node where another job's reservation holds room that the pod's job was let use because it is expected to end before the reservation's job is expected to start.",
		}),
	}
	if err := metrics.Register(reg, m.Attempts, m.AttemptDuration, m.E2ELatency, m.BindErrors, m.AssumeConflicts, m.PodsBound, m.BindLimit, m.PreemptionAttempts, m.PreemptionVictims, m.StartEstimateError, m.Reservations, m.RankingReuses, m.BackfilledPods); err != nil {
		return nil, fmt.Errorf("registering the scheduling metrics: %w", err)
	}
	return m, nil
}

// attemptResults are the values of the result label of Attempts and
// AttemptDuration, in the order attemptTimers holds their children.
var attemptResults = [...]string{resultScheduled, resultUnschedulable, resultError}

// attemptChildren are the children of Attempts and AttemptDuration for one
// result and profile.
type attemptChildren struct {
	attempts k8smetrics.CounterMetric
	duration k8smetrics.ObserverMetric
}

// attemptTimers cache the children of Attempts and AttemptDuration by
// profile and result, each taken on first use: taking a child
// (WithLabelValues) hashes its label values, which every cycle would pay
// again. The map holds every profile of the scheduler and "" (a cycle
// that failed before it had a profile); New fills it, and it is only read
// afterwards.
type attemptTimers map[string]*[len(attemptResults)]atomic.Pointer[attemptChildren]

func newAttemptTimers(profiles map[string]*frameworkruntime.Framework) attemptTimers {
	t := attemptTimers{"": new([len(attemptResults)]atomic.Pointer[attemptChildren])}
	for p := range profiles {
		t[p] = new([len(attemptResults)]atomic.Pointer[attemptChildren])
	}
	return t
}

// recordAttempt counts a cycle of profile that ended with result (one of
// attemptResults) and started at start.
func (s *Scheduler) recordAttempt(result, profile string, start time.Time) {
	c := s.attemptChildren(result, profile)
	c.attempts.Inc()
	c.duration.Observe(time.Since(start).Seconds())
}

func (s *Scheduler) attemptChildren(result, profile string) *attemptChildren {
	i := -1
	for j, r := range attemptResults {
		if r == result {
			i = j
		}
	}
	byResult, ok := s.attempts[profile]
	if ok && i >= 0 {
		if c := byResult[i].Load(); c != nil {
			return c
		}
	}
	c := &attemptChildren{
		attempts: s.metrics.Attempts.WithLabelValues(result, profile),
		duration: s.metrics.AttemptDuration.WithLabelValues(result, profile),
	}
	if ok && i >= 0 {
		byResult[i].Store(c)
	}
	return c
}
