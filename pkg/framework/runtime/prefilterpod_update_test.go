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

// updatablePlugin is a podPlugin with PodPreFilterExtensions; it records
// each call and answers with update.
type updatablePlugin struct {
	podPlugin
	update *framework.Status
}

func (p *updatablePlugin) AddPod(_ context.Context, _ *framework.CycleState, pod *v1.Pod, added *framework.TaskInfo, node *framework.NodeInfo) *framework.Status {
	p.rec.add("%s.AddPod(%s,%s,%s)", p.name, pod.Name, added.GetName(), node.Name())
	return p.update
}

func (p *updatablePlugin) RemovePod(_ context.Context, _ *framework.CycleState, pod *v1.Pod, removed *framework.TaskInfo, node *framework.NodeInfo) *framework.Status {
	p.rec.add("%s.RemovePod(%s,%s,%s)", p.name, pod.Name, removed.GetName(), node.Name())
	return p.update
}

// The state of a pod's PreFilterPod run can be updated when every plugin
// that did not skip the pod has the extensions; the updates reach those
// plugins, in order, and not those that skipped.
func TestRunPreFilterPodUpdates(t *testing.T) {
	nodes := makeNodes(t, "n1", "n2")
	rec := &recorder{}
	skip := framework.NewStatus(framework.Skip)
	// a and c have the extensions; b has not, and skips pods "b-skips"
	// and "all-skip"; c skips "all-skip".
	a := &updatablePlugin{podPlugin: podPlugin{name: "a", rec: rec}}
	b := &podPlugin{name: "b", rec: rec, result: map[string]*framework.Status{"b-skips": skip, "all-skip": skip}}
	c := &updatablePlugin{podPlugin: podPlugin{name: "c", rec: rec, result: map[string]*framework.Status{"all-skip": skip}}}
	f := mustFramework(t, baseRegistry(t, nil, a, b, c), baseSpec(map[ExtensionPoint]PluginSet{
		PreFilterPoint: {{Name: "a"}, {Name: "b"}, {Name: "c"}},
		FilterPoint:    {{Name: "a"}, {Name: "b"}, {Name: "c"}},
	}))
	pod := func(name string) *v1.Pod { return st.MakePod().Namespace("ns").Name(name).Obj() }
	victim := st.MakePod().Namespace("ns").Name("v").Node("n1").Obj()
	nodes[0].AddPod(victim)
	task := nodes[0].Pods[len(nodes[0].Pods)-1]
	ctx := context.Background()

	state := framework.NewCycleState()
	bSkips := pod("b-skips")
	if err := f.PreFilterPodUpdatable(state, bSkips); err == nil {
		t.Error("PreFilterPodUpdatable before any PreFilterPod run = nil, want an error")
	}
	if s := f.RunPreFilterPodPlugins(ctx, state, bSkips, nodes); !s.IsSuccess() {
		t.Fatalf("RunPreFilterPodPlugins = %v", s)
	}
	if err := f.PreFilterPodUpdatable(state, bSkips); err != nil {
		t.Fatalf("PreFilterPodUpdatable with b skipped = %v, want nil", err)
	}
	if err := f.PreFilterPodUpdatable(state, pod("b-skips")); err == nil {
		t.Error("PreFilterPodUpdatable for another pod object = nil, want an error")
	}
	rec.calls = nil
	if s := f.RunPreFilterPodRemovePod(ctx, state, bSkips, task, nodes[0]); !s.IsSuccess() {
		t.Fatalf("RunPreFilterPodRemovePod = %v", s)
	}
	if s := f.RunPreFilterPodAddPod(ctx, state.Clone(), bSkips, task, nodes[0]); !s.IsSuccess() {
		t.Fatalf("RunPreFilterPodAddPod on a clone = %v", s)
	}
	want := []string{"a.RemovePod(b-skips,v,n1)", "c.RemovePod(b-skips,v,n1)", "a.AddPod(b-skips,v,n1)", "c.AddPod(b-skips,v,n1)"}
	if got := rec.get(); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("calls = %v, want %v", got, want)
	}

	// b did not skip and cannot update its state: the caller must run
	// PreFilterPod again.
	plain := pod("plain")
	if s := f.RunPreFilterPodPlugins(ctx, state, plain, nodes); !s.IsSuccess() {
		t.Fatalf("RunPreFilterPodPlugins = %v", s)
	}
	if err := f.PreFilterPodUpdatable(state, plain); err == nil || !strings.Contains(err.Error(), `plugin "b" did not skip it and has no PodPreFilterExtensions`) {
		t.Errorf("PreFilterPodUpdatable with b not skipped = %v, want an error naming b", err)
	}
	rec.calls = nil
	if s := f.RunPreFilterPodAddPod(ctx, state, plain, task, nodes[0]); s.Code() != framework.Error {
		t.Errorf("RunPreFilterPodAddPod that cannot update = %v, want an Error", s)
	}
	if got := rec.get(); len(got) != 0 {
		t.Errorf("calls of an update that cannot be done = %v, want none", got)
	}

	// Every plugin that did not skip has the extensions.
	allSkip := pod("all-skip")
	if s := f.RunPreFilterPodPlugins(ctx, state, allSkip, nodes); !s.IsSuccess() {
		t.Fatalf("RunPreFilterPodPlugins = %v", s)
	}
	rec.calls = nil
	if s := f.RunPreFilterPodRemovePod(ctx, state, allSkip, task, nodes[0]); !s.IsSuccess() {
		t.Fatalf("RunPreFilterPodRemovePod = %v", s)
	}
	if got, want := rec.get(), []string{"a.RemovePod(all-skip,v,n1)"}; strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("calls = %v, want %v", got, want)
	}

	// A rejection leaves no state to update, whatever skipped.
	a.result = map[string]*framework.Status{"rejected": framework.NewStatus(framework.Unschedulable, "no")}
	rejected := pod("rejected")
	if s := f.RunPreFilterPodPlugins(ctx, state, rejected, nodes); !s.IsRejected() {
		t.Fatalf("RunPreFilterPodPlugins = %v, want a rejection", s)
	}
	if err := f.PreFilterPodUpdatable(state, rejected); err == nil {
		t.Error("PreFilterPodUpdatable after a rejection = nil, want an error")
	}

	// A plugin's failure is an Error naming it, the pod, the other pod and
	// the node.
	if s := f.RunPreFilterPodPlugins(ctx, state, bSkips, nodes); !s.IsSuccess() {
		t.Fatalf("RunPreFilterPodPlugins = %v", s)
	}
	c.update = framework.AsStatus(errBoom)
	s := f.RunPreFilterPodAddPod(ctx, state, bSkips, task, nodes[0])
	if s.Code() != framework.Error || s.Plugin() != "c" || !strings.Contains(s.Message(), `AddPod of plugin "c" for pod ns/b-skips with pod ns/v on node "n1": boom`) {
		t.Errorf("failing update = %v (plugin %q), want an Error naming c, the pods and the node", s, s.Plugin())
	}
}

// Without PodPreFilter plugins there is nothing to update, and updating
// it is possible without any PreFilterPod run.
func TestRunPreFilterPodUpdatesWithoutPlugins(t *testing.T) {
	f := mustFramework(t, baseRegistry(t, nil, &fakePlugin{name: "job"}), baseSpec(map[ExtensionPoint]PluginSet{PreFilterPoint: {{Name: "job"}}}))
	nodes := makeNodes(t, "n1")
	nodes[0].AddPod(st.MakePod().Name("v").Node("n1").Obj())
	state := framework.NewCycleState()
	if err := f.PreFilterPodUpdatable(state, testPod()); err != nil {
		t.Errorf("PreFilterPodUpdatable = %v, want nil", err)
	}
	if s := f.RunPreFilterPodRemovePod(context.Background(), state, testPod(), nodes[0].Pods[0], nodes[0]); !s.IsSuccess() {
		t.Errorf("RunPreFilterPodRemovePod = %v, want success", s)
	}
}
