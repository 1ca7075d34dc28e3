package runtime

import (
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
)

// Label values of the extension_point label, as kube-scheduler spells
// them, plus PreFilterPod (this framework's per-pod PreFilter).
const (
	metricPreFilter    = "PreFilter"
	metricPreFilterPod = "PreFilterPod"
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
	ExtensionPoint *prometheus.HistogramVec
	// Plugin is the time of one call of one plugin at one extension point,
	// by plugin, extension point and status code. Only a sample of the
	// cycles is timed (see framework.CycleState.SetRecordPluginMetrics),
	// and in those Filter and Score only on every perNodeTimingStride-th
	// node: they run once per node, and timing every call would cost more
	// than some of the plugins.
	Plugin *prometheus.HistogramVec
}

// NewMetrics creates the metrics and registers them with reg (nil: not
// registered).
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
		ExtensionPoint: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "batch_scheduler", Name: "framework_extension_point_duration_seconds",
			Help:    "Duration of running every plugin of one extension point, by extension point, status and profile (Filter and Score: one pod over all nodes).",
			Buckets: prometheus.ExponentialBuckets(0.0001, 2, 14),
		}, []string{"extension_point", "status", "profile"}),
		Plugin: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "batch_scheduler", Name: "plugin_execution_duration_seconds",
			Help:    "Duration of one call of a plugin at an extension point, by plugin, extension point and status; sampled in a share of the scheduling cycles.",
			Buckets: prometheus.ExponentialBuckets(0.00001, 1.5, 20),
		}, []string{"plugin", "extension_point", "status"}),
	}
	if reg != nil {
		for _, c := range []prometheus.Collector{m.ExtensionPoint, m.Plugin} {
			if err := reg.Register(c); err != nil {
				return nil, fmt.Errorf("registering the framework metrics: %w", err)
			}
		}
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
	f.metrics.ExtensionPoint.WithLabelValues(point, (*st).Code().String(), f.schedulerName).Observe(time.Since(start).Seconds())
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
