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

// Package metricstest reads the values of this project's metrics in tests,
// with k8s.io/component-base/metrics/testutil: a child taken from a
// vector (WithLabelValues), a metric without labels, or a custom
// collector such as metrics.ScrapedGauge. Each helper fails the test when
// the value cannot be read.
package metricstest

import (
	"testing"

	promtestutil "github.com/prometheus/client_golang/prometheus/testutil"
	k8smetrics "k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/testutil"
)

// CounterValue returns the value of c: a *k8smetrics.Counter, or a child
// of a *k8smetrics.CounterVec. A counter that was never created (its
// metric not registered, or disabled) reads 0.
func CounterValue(t testing.TB, c k8smetrics.CounterMetric) float64 {
	t.Helper()
	v, err := testutil.GetCounterMetricValue(c)
	if err != nil {
		t.Fatalf("reading a counter: %v", err)
	}
	return v
}

// GaugeValue returns the value of g: a *k8smetrics.Gauge, or a child of a
// *k8smetrics.GaugeVec.
func GaugeValue(t testing.TB, g k8smetrics.GaugeMetric) float64 {
	t.Helper()
	v, err := testutil.GetGaugeMetricValue(g)
	if err != nil {
		t.Fatalf("reading a gauge: %v", err)
	}
	return v
}

// HistogramCount returns how many observations h holds: a child of a
// *k8smetrics.HistogramVec, or the ObserverMetric of a
// *k8smetrics.Histogram (h.ObserverMetric).
func HistogramCount(t testing.TB, h k8smetrics.ObserverMetric) uint64 {
	t.Helper()
	n, err := testutil.GetHistogramMetricCount(h)
	if err != nil {
		t.Fatalf("reading a histogram: %v", err)
	}
	return n
}

// CollectedValue returns the value of the one sample c collects, such as
// a metrics.ScrapedGauge's; c must be created (registered, or built with
// a nil registry).
func CollectedValue(t testing.TB, c k8smetrics.Collector) float64 {
	t.Helper()
	if n := promtestutil.CollectAndCount(c); n != 1 {
		t.Fatalf("the collector collected %d samples, want 1", n)
	}
	return promtestutil.ToFloat64(c)
}
