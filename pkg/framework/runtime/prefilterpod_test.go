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
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
	st "github.com/batch-scheduler/batch-scheduler/pkg/testing"
)

// podPlugin runs per pod only (PodPreFilterPlugin) and filters. Its
// PreFilterPod result is chosen per pod name; it records the nodes it was
// given.
type podPlugin struct {
	name string
	rec  *recorder
	// result is the PreFilterPod result per pod name.
	result map[string]*framework.Status
}

func (p *podPlugin) Name() string { return p.name }

func (p *podPlugin) PreFilterPod(_ context.Context, _ *framework.CycleState, pod *v1.Pod, nodes []*framework.NodeInfo) *framework.Status {
	p.rec.add("%s.PreFilterPod(%s,%d)", p.name, pod.Name, len(nodes))
	return p.result[pod.Name]
}

func (p *podPlugin) Filter(_ context.Context, _ *framework.CycleState, pod *v1.Pod, node *framework.NodeInfo) *framework.Status {
	p.rec.add("%s.Filter(%s,%s)", p.name, pod.Name, node.Name())
	return nil
}

func TestRunPreFilterPodPlugins(t *testing.T) {
	nodes := makeNodes(t, "n1", "n2")
	rec := &recorder{}
	a := &podPlugin{name: "a", rec: rec, result: map[string]*framework.Status{
		"skip":   framework.NewStatus(framework.Skip),
		"reject": framework.NewStatus(framework.Unschedulable, "pod has unbound immediate PersistentVolumeClaims"),
		"broken": framework.AsStatus(errBoom),
	}}
	b := &podPlugin{name: "b", rec: rec}
	f := mustFramework(t, baseRegistry(t, nil, a, b), baseSpec(map[ExtensionPoint]PluginSet{
		PreFilterPoint: {{Name: "a"}, {Name: "b"}},
		FilterPoint:    {{Name: "a"}, {Name: "b"}},
	}))
	if !f.HasPodPreFilterPlugins() {
		t.Fatal("HasPodPreFilterPlugins = false with two per-pod plugins at preFilter")
	}
	pod := func(name string) *v1.Pod { return st.MakePod().Namespace("ns").Name(name).Obj() }
	state := framework.NewCycleState()

	// A plugin that skips one pod is skipped for that pod only.
	for _, name := range []string{"skip", "plain"} {
		rec.calls = nil
		if s := f.RunPreFilterPodPlugins(context.Background(), state, pod(name), nodes); !s.IsSuccess() {
			t.Fatalf("RunPreFilterPodPlugins(%s) = %v", name, s)
		}
		if s := f.RunFilterPlugins(context.Background(), state, pod(name), nodes[0]); !s.IsSuccess() {
			t.Fatalf("RunFilterPlugins(%s) = %v", name, s)
		}
		want := []string{"a.PreFilterPod(" + name + ",2)", "b.PreFilterPod(" + name + ",2)"}
		if name != "skip" {
			want = append(want, "a.Filter("+name+",n1)")
		}
		want = append(want, "b.Filter("+name+",n1)")
		if got := rec.get(); strings.Join(got, " ") != strings.Join(want, " ") {
			t.Errorf("pod %s: calls = %v, want %v", name, got, want)
		}
	}

	rec.calls = nil
	s := f.RunPreFilterPodPlugins(context.Background(), state, pod("reject"), nodes)
	if !s.IsRejected() || s.Plugin() != "a" || !strings.Contains(s.Message(), "unbound immediate") {
		t.Errorf("rejection = %v (plugin %q), want a's rejection", s, s.Plugin())
	}
	if got := rec.get(); len(got) != 1 {
		t.Errorf("calls after a rejection = %v, want the rejecting plugin's only", got)
	}

	s = f.RunPreFilterPodPlugins(context.Background(), state, pod("broken"), nodes)
	if s.Code() != framework.Error || s.Plugin() != "a" || !strings.Contains(s.Message(), `PreFilterPod of plugin "a" for pod ns/broken: boom`) {
		t.Errorf("error = %v (plugin %q), want one naming plugin a and the pod", s, s.Plugin())
	}
}

// A plugin at preFilter must run per job, per pod, or both.
func TestPreFilterPointAcceptsPerPodPlugins(t *testing.T) {
	onlyFilter := &plainFilter{name: "f"}
	_, err := NewFramework(context.Background(), baseRegistry(t, nil, onlyFilter).Registry,
		baseSpec(map[ExtensionPoint]PluginSet{PreFilterPoint: {{Name: "f"}}}), fakeHandle{})
	if err == nil || !strings.Contains(err.Error(), `plugin "f" is enabled at preFilter but does not implement PreFilterPlugin, PodPreFilterPlugin or PlacementPlugin`) {
		t.Errorf("NewFramework with a Filter-only plugin at preFilter: err = %v", err)
	}
	f := mustFramework(t, baseRegistry(t, nil, &fakePlugin{name: "job"}), baseSpec(map[ExtensionPoint]PluginSet{PreFilterPoint: {{Name: "job"}}}))
	if f.HasPodPreFilterPlugins() {
		t.Error("HasPodPreFilterPlugins = true with a per-job plugin only")
	}
}
