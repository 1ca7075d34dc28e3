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

package allocator

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// metrics are the allocator's Prometheus metrics, in a registry of their
// own.
type metrics struct {
	registry     *prometheus.Registry
	rounds       prometheus.Counter
	reportErrors *prometheus.CounterVec
	granted      *prometheus.GaugeVec
	grants       prometheus.Gauge
	held         *prometheus.GaugeVec
	heldUnacked  *prometheus.GaugeVec
	// growsDeferred counts grants published below what drf wanted
	// because other frameworks held the room.
	growsDeferred   *prometheus.CounterVec
	badAcks         *prometheus.CounterVec
	stateSaveErrors prometheus.Counter
}

func newMetrics() *metrics {
	m := &metrics{
		registry: prometheus.NewRegistry(),
		rounds: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "allocator_rounds_total",
			Help: "Allocation rounds run.",
		}),
		reportErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "allocator_demand_report_errors_total",
			Help: "Demand reports that could not be read, by framework.",
		}, []string{"framework"}),
		granted: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "allocator_granted",
			Help: "Capacity granted to a framework over all nodes, by resource (cpu in cores, memory in bytes, others in their unit).",
		}, []string{"framework", "resource"}),
		grants: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "allocator_grants",
			Help: "Grants published, revoked ones included.",
		}),
		held: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "allocator_held",
			Help: "Capacity a framework may occupy over all nodes (the larger of its unacknowledged grant versions and its usage, per node), by resource.",
		}, []string{"framework", "resource"}),
		heldUnacked: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "allocator_held_unacknowledged_grants",
			Help: "Grants of a framework with a version it has not acknowledged in a synced demand report; their capacity goes to no other framework.",
		}, []string{"framework"}),
		growsDeferred: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "allocator_grant_grows_deferred_total",
			Help: "Grants published below what the allocation wanted because other frameworks still held the capacity, by framework.",
		}, []string{"framework"}),
		badAcks: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "allocator_invalid_acknowledgments_total",
			Help: "observedGrants entries of synced demand reports whose value is not a resourceVersion, by framework.",
		}, []string{"framework"}),
		stateSaveErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "allocator_state_save_errors_total",
			Help: "Failed writes of the state file's held capacity (grows that needed it waited).",
		}),
	}
	m.registry.MustRegister(m.rounds, m.reportErrors, m.granted, m.grants,
		m.held, m.heldUnacked, m.growsDeferred, m.badAcks, m.stateSaveErrors,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}
