package app

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/batch-scheduler/batch-scheduler/pkg/custominformer"
	frameworkruntime "github.com/batch-scheduler/batch-scheduler/pkg/framework/runtime"
	"github.com/batch-scheduler/batch-scheduler/pkg/metrics"
	"github.com/batch-scheduler/batch-scheduler/pkg/scheduler"
)

// Metrics are the batch_scheduler_* metrics the command registers, in a
// registry of its own (served beside the component-base legacy registry,
// see metricsHandler). The tests that check the documents, alerts and
// dashboards against the exported names build them with NewMetrics too,
// so that a metric added here is known to all of them.
type Metrics struct {
	Core            *metrics.Metrics
	Scheduler       *scheduler.Metrics
	Framework       *frameworkruntime.Metrics
	CustomInformers *custominformer.Metrics
}

// NewMetrics creates every metric of the command and registers it with
// reg.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	var (
		m   Metrics
		err error
	)
	if m.Core, err = metrics.New(reg); err != nil {
		return nil, err
	}
	if m.Scheduler, err = scheduler.NewMetrics(reg); err != nil {
		return nil, err
	}
	if m.Framework, err = frameworkruntime.NewMetrics(reg); err != nil {
		return nil, err
	}
	if m.CustomInformers, err = custominformer.NewMetrics(reg); err != nil {
		return nil, err
	}
	return &m, nil
}
