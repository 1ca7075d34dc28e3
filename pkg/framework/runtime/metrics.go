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

package runtime

import (
	"fmt"
	"sync/atomic"
	"time"

	k8smetrics "k8s.io/component-base/metrics"

	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
	"github.com/batch-scheduler/batch-scheduler/pkg/metrics"
)

// Label values of the extension_point label, as kube-scheduler spells
// them, plus PreFilterPod (this framework's per-pod PreFilter) and
// Placement (its PlacementPlugins).
const (
	metricPreFilter    = "PreFilter"
	metricPreFilterPod = "PreFilterPod"
	metricPlacement    = "Placement"
	metricFilter       = "Filter"
	metricPreScore     = "PreScore"
	metricScore        = "Score"
	metricReserve      = "Reserve"
	metricUnreserve    = "Unreserve"
	metricPermit       = "Permit"
	metricPostFilter   = "PostFilter"
	metricBind         = "Bind"
)

// perNodeTimingStride thins the timing of the per-node plugin calls
// (Filter, Score) in a sampled cycle to every 16th node: timing and
// observing every call on 500 nodes made a sampled cycle cost more than
// half again as much (BenchmarkPlainPodCycle/frameworkMetrics), while a
// sixteenth of the nodes still gives each plugin's distribution.
const perNodeTimingStride = 16

// Metrics are the framework's latency metrics, shared by every profile's
// Framework (the profile is a label). Build them with NewMetrics and hand
// them to NewFramework with WithMetrics.
type Metrics struct {
	// ExtensionPoint is the time of one run of an extension point (every
	// plugin enabled there) by extension point, status code and profile.
	// Filter is the filtering of one pod over every node (in parallel),
	// Score the scoring of one pod over the feasible nodes.
	ExtensionPoint *k8smetrics.HistogramVec
	// Plugin is the time of one call of one plugin at one extension point,
	// by plugin, extension point and status code. Only a sample of the
	// cycles is timed (see framework.CycleState.SetRecordPluginMetrics),
	// and in those Filter and Score only on every perNodeTimingStride-th
	// node: they run once per node, and timing every call would cost more
	// than some of the plugins.
	Plugin *k8smetrics.HistogramVec
}

// NewMetrics creates the metrics and registers them with reg (nil: not
// registered, but recording; see metrics.Register).
func NewMetrics(reg k8smetrics.KubeRegistry) (*Metrics, error) {
	m := &Metrics{
		ExtensionPoint: k8smetrics.NewHistogramVec(&k8smetrics.HistogramOpts{
			Namespace: metrics.Namespace, Name: "framework_extension_point_duration_seconds", StabilityLevel: k8smetrics.ALPHA,
			Help:    "Duration of running every plugin of one extension point, by extension point, status and profile (Filter and Score: one pod over all nodes).",
			Buckets: k8smetrics.ExponentialBuckets(0.0001, 2, 14),
		}, []string{"extension_point", "status", "profile"}),
		Plugin: k8smetrics.NewHistogramVec(&k8smetrics.HistogramOpts{
			Namespace: metrics.Namespace, Name: "plugin_execution_duration_seconds", StabilityLevel: k8smetrics.ALPHA,
			Help:    "Duration of one call of a plugin at an extension point, by plugin, extension point and status; sampled in a share of the scheduling cycles.",
			Buckets: k8smetrics.ExponentialBuckets(0.00001, 1.5, 20),
		}, []string{"plugin", "extension_point", "status"}),
	}
	if err := metrics.Register(reg, m.ExtensionPoint, m.Plugin); err != nil {
		return nil, fmt.Errorf("registering the framework metrics: %w", err)
	}
	return m, nil
}

// WithMetrics makes the framework record m; without it nothing is
// recorded.
func WithMetrics(m *Metrics) Option {
	return func(o *frameworkOptions) { o.metrics = m }
}

// observePoint records the run of point that started at start and ended
// with *st. It is deferred by the Run methods, hence the pointer.
func (f *Framework) observePoint(point string, start time.Time, st **framework.Status) {
	if f.metrics == nil {
		return
	}
	f.pointTimers.get(f.metrics, point, (*st).Code(), f.schedulerName).Observe(time.Since(start).Seconds())
}

// numCodes is the number of status codes pointTimers holds children for.
const numCodes = int(framework.Skip) + 1

// pointTimers are one profile's children of Metrics.ExtensionPoint, by
// extension point and status code, each taken on first use: taking a
// child (WithLabelValues) hashes its three label values, which every
// extension point of every cycle would pay again. The map is filled when
// the framework is built and only read afterwards.
type pointTimers map[string]*[numCodes]atomic.Pointer[k8smetrics.ObserverMetric]

func newPointTimers() pointTimers {
	t := pointTimers{}
	for _, p := range []string{metricPreFilter, metricPreFilterPod, metricPlacement, metricFilter, metricPreScore, metricScore,
		metricReserve, metricUnreserve, metricPermit, metricPostFilter, metricBind} {
		t[p] = new([numCodes]atomic.Pointer[k8smetrics.ObserverMetric])
	}
	return t
}

// get returns the child of m.ExtensionPoint for point, code and profile.
func (t pointTimers) get(m *Metrics, point string, code framework.Code, profile string) k8smetrics.ObserverMetric {
	byCode, ok := t[point]
	if !ok || code < 0 || int(code) >= numCodes {
		return m.ExtensionPoint.WithLabelValues(point, code.String(), profile)
	}
	if o := byCode[code].Load(); o != nil {
		return *o
	}
	o := m.ExtensionPoint.WithLabelValues(point, code.String(), profile)
	byCode[code].Store(&o)
	return o
}

// pluginClock returns the time a plugin call starts when this cycle's
// plugin calls are timed, and the zero time otherwise; observePlugin
// ignores a zero start.
func (f *Framework) pluginClock(state *framework.CycleState) time.Time {
	if f.metrics == nil || !state.ShouldRecordPluginMetrics() {
		return time.Time{}
	}
	return time.Now()
}

// observePlugin records a call of plugin at point that started at start
// (from pluginClock) and returned st.
func (f *Framework) observePlugin(start time.Time, plugin, point string, st *framework.Status) {
	if start.IsZero() {
		return
	}
	f.metrics.Plugin.WithLabelValues(plugin, point, st.Code().String()).Observe(time.Since(start).Seconds())
}
