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
	}
	m.registry.MustRegister(m.rounds, m.reportErrors, m.granted, m.grants,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}
