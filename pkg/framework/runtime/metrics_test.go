package runtime

import (
	"context"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
)

// histogramCount returns how many observations the histogram of vec with
// the given labels holds (0 when the child does not exist).
func histogramCount(t *testing.T, reg *prometheus.Registry, name string, labels map[string]string) uint64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range families {
		if mf.GetName() != name {
			continue
		}
	metrics:
		for _, m := range mf.GetMetric() {
			for _, lp := range m.GetLabel() {
				if want, ok := labels[lp.GetName()]; ok && want != lp.GetValue() {
					continue metrics
				}
			}
			return m.GetHistogram().GetSampleCount()
		}
	}
	return 0
}

// Every run of an extension point is recorded with its status and
// profile; plugin calls only in cycles the scheduler chose to sample, once
// per plugin and node at Filter.
func TestFrameworkMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	rec := &recorder{}
	fit := &fakePlugin{name: "fit", rec: rec, filter: map[string]*framework.Status{"n2": framework.NewStatus(framework.Unschedulable, "Insufficient cpu")}}
	gang := &fakePlugin{name: "gang", rec: rec, preFilter: framework.NewStatus(framework.UnschedulableAndUnresolvable, "incomplete")}
	f := mustFramework(t, baseRegistry(t, nil, fit, gang), baseSpec(map[ExtensionPoint]PluginSet{
		PreFilterPoint: {{Name: "gang"}},
		FilterPoint:    {{Name: "fit"}},
	}), WithMetrics(m))
	nodes := makeNodes(t, "n1", "n2", "n3")

	// Not sampled: extension points only.
	state := framework.NewCycleState()
	f.RunPreFilterPlugins(context.Background(), state, testJob())
	if _, _, err := f.FindFeasibleNodes(context.Background(), state, testPod(), nodes); err != nil {
		t.Fatal(err)
	}
	const point, plugin = "batch_scheduler_framework_extension_point_duration_seconds", "batch_scheduler_plugin_execution_duration_seconds"
	profile := f.schedulerName
	if n := histogramCount(t, reg, point, map[string]string{"extension_point": "PreFilter", "status": "UnschedulableAndUnresolvable", "profile": profile}); n != 1 {
		t.Errorf("PreFilter runs recorded as UnschedulableAndUnresolvable = %d, want 1", n)
	}
	if n := histogramCount(t, reg, point, map[string]string{"extension_point": "Filter", "status": "Success", "profile": profile}); n != 1 {
		t.Errorf("Filter runs recorded = %d, want 1 (one pod over all nodes)", n)
	}
	if n, err := testutil.GatherAndCount(reg, plugin); err != nil || n != 0 {
		t.Errorf("plugin series without sampling = %d (%v), want 0", n, err)
	}

	// Sampled: every plugin call, with its own status; per-node calls only
	// on every perNodeTimingStride-th node (here the first of three).
	state = framework.NewCycleState()
	state.SetRecordPluginMetrics(true)
	f.RunPreFilterPlugins(context.Background(), state, testJob())
	if _, _, err := f.FindFeasibleNodes(context.Background(), state, testPod(), nodes); err != nil {
		t.Fatal(err)
	}
	if n := histogramCount(t, reg, plugin, map[string]string{"plugin": "fit", "extension_point": "Filter", "status": "Success"}); n != 1 {
		t.Errorf("fit's Filter calls recorded = %d, want 1 (n1 of n1..n3)", n)
	}
	if n := histogramCount(t, reg, plugin, map[string]string{"plugin": "gang", "extension_point": "PreFilter"}); n != 1 {
		t.Errorf("gang's PreFilter calls recorded = %d, want 1", n)
	}
	// One node at a time (as preemption runs Filter): timed with its status.
	if s := f.RunFilterPlugins(context.Background(), state, testPod(), nodes[1]); !s.IsRejected() {
		t.Fatalf("Filter on n2 = %v, want a rejection", s)
	}
	if n := histogramCount(t, reg, plugin, map[string]string{"plugin": "fit", "extension_point": "Filter", "status": "Unschedulable"}); n != 1 {
		t.Errorf("fit's rejecting Filter calls recorded = %d, want 1 (n2)", n)
	}
}

// Without WithMetrics nothing is recorded and nothing fails.
func TestFrameworkWithoutMetrics(t *testing.T) {
	fit := &fakePlugin{name: "fit", rec: &recorder{}}
	f := mustFramework(t, baseRegistry(t, nil, fit), baseSpec(map[ExtensionPoint]PluginSet{FilterPoint: {{Name: "fit"}}}))
	state := framework.NewCycleState()
	state.SetRecordPluginMetrics(true)
	if _, _, err := f.FindFeasibleNodes(context.Background(), state, testPod(), makeNodes(t, "n1")); err != nil {
		t.Fatal(err)
	}
}
