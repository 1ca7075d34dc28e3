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

package app

import (
	k8smetrics "k8s.io/component-base/metrics"

	"github.com/batch-scheduler/batch-scheduler/pkg/custominformer"
	frameworkruntime "github.com/batch-scheduler/batch-scheduler/pkg/framework/runtime"
	"github.com/batch-scheduler/batch-scheduler/pkg/metrics"
	"github.com/batch-scheduler/batch-scheduler/pkg/scheduler"
)

// Metrics are the batch_scheduler_* metrics the command registers, in a
// component-base registry of the command's own (metricsHandler serves it
// with the legacy registry's process, Go and client-go metrics). The
// tests that check the documents, alerts and dashboards against the
// exported names build them with NewMetrics too, so that a metric added
// here is known to all of them.
type Metrics struct {
	Core            *metrics.Metrics
	Scheduler       *scheduler.Metrics
	Framework       *frameworkruntime.Metrics
	CustomInformers *custominformer.Metrics
}

// NewMetrics creates every metric of the command and registers it with
// reg (nil: none is registered; see metrics.Register). The metric flags
// (--disabled-metrics, --allow-metric-labels, ...) must be applied
// before: component-base reads them when a metric is registered.
func NewMetrics(reg k8smetrics.KubeRegistry) (*Metrics, error) {
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
