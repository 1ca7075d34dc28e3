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
	"context"
	"slices"
	"testing"

	k8smetrics "k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/testutil"

	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
)

// histogramCount returns how many observations the histogram name holds
// in its children whose labels include labels (0 when there is none).
func histogramCount(t *testing.T, reg k8smetrics.Gatherer, name string, labels map[string]string) uint64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(families, func(f *testutil.MetricFamily) bool { return f.GetName() == name }) {
		return 0 // no child yet
	}
	vec, err := testutil.GetHistogramVecFromGatherer(reg, name, labels)
	if err != nil {
		t.Fatal(err)
	}
	return vec.GetAggregatedSampleCount()
}

// Every run of an extension point is recorded with its status and
// profile; plugin calls only in cycles the scheduler chose to sample, once
// per plugin and node at Filter.
func TestFrameworkMetrics(t *testing.T) {
	reg := k8smetrics.NewKubeRegistry()
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
	if n := histogramCount(t, reg, plugin, nil); n != 0 {
		t.Errorf("plugin calls recorded without sampling = %d, want 0", n)
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
