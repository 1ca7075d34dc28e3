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
	"errors"
	"slices"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
	st "github.com/batch-scheduler/batch-scheduler/pkg/testing"
)

// pathPlugin runs per pod (PodPreFilterPlugin) and filters: its
// PreFilterPod result is chosen per pod name, its Filter rejects the nodes
// in reject (an Error for "broken"); it records its calls.
type pathPlugin struct {
	rec       *recorder
	preFilter map[string]*framework.Status
	reject    map[string]bool
}

func (*pathPlugin) Name() string { return "path" }

func (p *pathPlugin) PreFilterPod(_ context.Context, _ *framework.CycleState, pod *v1.Pod, nodes []*framework.NodeInfo) *framework.Status {
	p.rec.add("PreFilterPod(%s,%d)", pod.Name, len(nodes))
	return p.preFilter[pod.Name]
}

func (p *pathPlugin) Filter(_ context.Context, _ *framework.CycleState, _ *v1.Pod, node *framework.NodeInfo) *framework.Status {
	p.rec.add("Filter(%s)", node.Name())
	switch {
	case node.Name() == "broken":
		return framework.AsStatus(errBoom)
	case p.reject[node.Name()]:
		return framework.NewStatus(framework.Unschedulable, "full")
	}
	return nil
}

func names(nodes []*framework.NodeInfo) []string {
	var out []string
	for _, n := range nodes {
		out = append(out, n.Name())
	}
	return out
}

// FilterPod runs the per-pod PreFilter plugins over every node, then
// Filter on the window first and on the pod's nodes only when the window
// has no fit; a PreFilter rejection is a result and stops the path.
func TestFilterPod(t *testing.T) {
	all := makeNodes(t, "n1", "n2", "n3", "n4")
	rec := &recorder{}
	p := &pathPlugin{rec: rec, preFilter: map[string]*framework.Status{
		"rejected": framework.NewStatus(framework.UnschedulableAndUnresolvable, "no claim"),
		"failing":  framework.AsStatus(errBoom),
	}, reject: map[string]bool{"n1": true, "n2": true}}
	f := mustFramework(t, baseRegistry(t, nil, p), baseSpec(map[ExtensionPoint]PluginSet{
		PreFilterPoint: {{Name: "path"}},
		FilterPoint:    {{Name: "path"}},
	}), WithParallelism(1))
	pod := func(name string) *v1.Pod { return st.MakePod().Namespace("ns").Name(name).Obj() }
	ctx := context.Background()

	t.Run("a window with a fit is enough", func(t *testing.T) {
		rec.calls = nil
		res, err := f.FilterPod(ctx, framework.NewCycleState(), pod("p"), FilterScope{All: all, First: all[2:3]})
		if err != nil || res.PreFilter != nil {
			t.Fatalf("FilterPod = %+v, %v", res, err)
		}
		if got := names(res.Feasible); !slices.Equal(got, []string{"n3"}) {
			t.Errorf("feasible %v, want the window's n3", got)
		}
		if got, want := rec.get(), []string{"PreFilterPod(p,4)", "Filter(n3)"}; !slices.Equal(got, want) {
			t.Errorf("calls %v, want %v", got, want)
		}
	})
	t.Run("a window without a fit falls back to the pod's nodes", func(t *testing.T) {
		rec.calls = nil
		res, err := f.FilterPod(ctx, framework.NewCycleState(), pod("p"), FilterScope{All: all, Nodes: all[:3], First: all[:2]})
		if err != nil {
			t.Fatal(err)
		}
		if got := names(res.Feasible); !slices.Equal(got, []string{"n3"}) {
			t.Errorf("feasible %v, want n3 of the pod's nodes (n4 is not one)", got)
		}
		if got := res.Diagnosis.Rejected(); got != 2 {
			t.Errorf("diagnosis of %d nodes, want n1 and n2", got)
		}
		if got := rec.count("Filter(n4)"); got != 0 {
			t.Errorf("Filter ran on n4, which the pod may not take")
		}
	})
	t.Run("a PreFilter rejection stops the path", func(t *testing.T) {
		rec.calls = nil
		res, err := f.FilterPod(ctx, framework.NewCycleState(), pod("rejected"), FilterScope{All: all})
		if err != nil || res.PreFilter.Code() != framework.UnschedulableAndUnresolvable || res.PreFilter.Plugin() != "path" || len(res.Feasible) != 0 {
			t.Fatalf("FilterPod = %+v, %v, want the plugin's rejection", res, err)
		}
		if got := rec.count("Filter(n1)"); got != 0 {
			t.Errorf("Filter ran after a PreFilter rejection")
		}
	})
	t.Run("errors name the pod", func(t *testing.T) {
		if _, err := f.FilterPod(ctx, framework.NewCycleState(), pod("failing"), FilterScope{All: all}); !errors.Is(err, errBoom) || !strings.Contains(err.Error(), "ns/failing") {
			t.Errorf("PreFilterPod error = %v, want errBoom naming the pod", err)
		}
		broken := append(makeNodes(t, "broken"), all...)
		if _, err := f.FilterPod(ctx, framework.NewCycleState(), pod("p"), FilterScope{All: broken}); !errors.Is(err, errBoom) || !strings.Contains(err.Error(), "ns/p") {
			t.Errorf("Filter error = %v, want errBoom naming the pod", err)
		}
	})
}

// PodFitsOn checks one node, running PreFilterPod again first only when
// asked to.
func TestPodFitsOn(t *testing.T) {
	all := makeNodes(t, "n1", "n2")
	rec := &recorder{}
	p := &pathPlugin{rec: rec, preFilter: map[string]*framework.Status{
		"rejected": framework.NewStatus(framework.Unschedulable, "no"),
	}, reject: map[string]bool{"n1": true}}
	f := mustFramework(t, baseRegistry(t, nil, p), baseSpec(map[ExtensionPoint]PluginSet{
		PreFilterPoint: {{Name: "path"}},
		FilterPoint:    {{Name: "path"}},
	}))
	ctx, state := context.Background(), framework.NewCycleState()
	pod := st.MakePod().Namespace("ns").Name("p").Obj()
	for _, tt := range []struct {
		node      *framework.NodeInfo
		preFilter bool
		want      bool
		calls     []string
	}{
		{all[0], false, false, []string{"Filter(n1)"}},
		{all[1], false, true, []string{"Filter(n2)"}},
		{all[1], true, true, []string{"PreFilterPod(p,2)", "Filter(n2)"}},
	} {
		rec.calls = nil
		ok, err := f.PodFitsOn(ctx, state, pod, all, tt.node, tt.preFilter)
		if err != nil || ok != tt.want {
			t.Errorf("PodFitsOn(%s, preFilter %v) = %v, %v, want %v", tt.node.Name(), tt.preFilter, ok, err, tt.want)
		}
		if got := rec.get(); !slices.Equal(got, tt.calls) {
			t.Errorf("PodFitsOn(%s, preFilter %v) calls %v, want %v", tt.node.Name(), tt.preFilter, got, tt.calls)
		}
	}
	rejected := st.MakePod().Namespace("ns").Name("rejected").Obj()
	if ok, err := f.PodFitsOn(ctx, state, rejected, all, all[1], true); ok || err != nil {
		t.Errorf("PodFitsOn after a PreFilter rejection = %v, %v, want a misfit", ok, err)
	}
	broken := makeNodes(t, "broken")[0]
	if _, err := f.PodFitsOn(ctx, state, pod, all, broken, false); !errors.Is(err, errBoom) || !strings.Contains(err.Error(), "broken") {
		t.Errorf("PodFitsOn on a failing node = %v, want errBoom naming the node", err)
	}
}

// namingPlugin is pathPlugin that also names nodes for the pods in names
// (framework.NodeNamer).
type namingPlugin struct {
	pathPlugin
	names map[string][]string
}

func (p *namingPlugin) NodeNames(pod *v1.Pod) (sets.Set[string], bool) {
	n, ok := p.names[pod.Name]
	if !ok {
		return nil, false
	}
	return sets.New(n...), true
}

// A NodeNamer's nodes are the only ones filtered, looked up by name or
// picked from the pod's nodes; the others count in the message and as
// UnschedulableAndUnresolvable.
func TestFilterPodNamedNodes(t *testing.T) {
	all := makeNodes(t, "n1", "n2", "n3", "n4", "n5")
	rec := &recorder{}
	p := &namingPlugin{pathPlugin: pathPlugin{rec: rec, reject: map[string]bool{"n2": true}},
		names: map[string][]string{"ds": {"n2"}, "two": {"n3", "n2", "gone"}, "none": {}}}
	f := mustFramework(t, baseRegistry(t, nil, p), baseSpec(map[ExtensionPoint]PluginSet{
		PreFilterPoint: {{Name: "path"}},
		FilterPoint:    {{Name: "path"}},
	}), WithParallelism(1))
	lookups := 0
	lookup := func(name string) (*framework.NodeInfo, bool) {
		lookups++
		i := slices.IndexFunc(all, func(n *framework.NodeInfo) bool { return n.Name() == name })
		if i < 0 {
			return nil, false
		}
		return all[i], true
	}
	pod := func(name string) *v1.Pod { return st.MakePod().Namespace("ns").Name(name).Obj() }
	for _, tt := range []struct {
		name         string
		pod          string
		scope        FilterScope
		wantFiltered []string
		wantFeasible []string
		wantMessage  string
		wantLookups  int
	}{
		{name: "one named node, full", pod: "ds", scope: FilterScope{All: all, First: all[:2], Lookup: lookup},
			wantFiltered: []string{"Filter(n2)"}, wantLookups: 1,
			wantMessage: "0/5 nodes are available: 4 node(s) didn't satisfy plugin(s) [path], 1 full."},
		{name: "named nodes that exist, looked up", pod: "two", scope: FilterScope{All: all, Lookup: lookup},
			wantFiltered: []string{"Filter(n2)", "Filter(n3)"}, wantFeasible: []string{"n3"}, wantLookups: 3},
		{name: "among the pod's nodes", pod: "two", scope: FilterScope{All: all, Nodes: all[2:], Lookup: lookup},
			wantFiltered: []string{"Filter(n3)"}, wantFeasible: []string{"n3"}},
		{name: "no lookup", pod: "two", scope: FilterScope{All: all},
			wantFiltered: []string{"Filter(n2)", "Filter(n3)"}, wantFeasible: []string{"n3"}},
		{name: "no node named", pod: "none", scope: FilterScope{All: all, Lookup: lookup},
			wantMessage: "0/5 nodes are available: 5 node(s) didn't satisfy plugin(s) [path]."},
		{name: "a pod the plugin names nothing for", pod: "p", scope: FilterScope{All: all, First: all[2:3], Lookup: lookup},
			wantFiltered: []string{"Filter(n3)"}, wantFeasible: []string{"n3"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rec.calls, lookups = nil, 0
			res, err := f.FilterPod(context.Background(), framework.NewCycleState(), pod(tt.pod), tt.scope)
			if err != nil || res.PreFilter != nil {
				t.Fatalf("FilterPod = %+v, %v", res, err)
			}
			var filtered []string
			for _, c := range rec.get() {
				if strings.HasPrefix(c, "Filter(") {
					filtered = append(filtered, c)
				}
			}
			slices.Sort(filtered)
			if !slices.Equal(filtered, tt.wantFiltered) {
				t.Errorf("filtered %v, want %v", filtered, tt.wantFiltered)
			}
			if got := names(res.Feasible); !slices.Equal(got, tt.wantFeasible) {
				t.Errorf("feasible %v, want %v", got, tt.wantFeasible)
			}
			if lookups != tt.wantLookups {
				t.Errorf("%d lookups, want %d", lookups, tt.wantLookups)
			}
			if tt.wantMessage != "" {
				if got := res.Diagnosis.Message(len(all)); got != tt.wantMessage {
					t.Errorf("message %q, want %q", got, tt.wantMessage)
				}
				if got := res.Diagnosis.StatusOf("n1"); got.Code() != framework.UnschedulableAndUnresolvable || got.Plugin() != "path" {
					t.Errorf("n1's status %v, want the plugin's UnschedulableAndUnresolvable", got)
				}
				if got := res.Diagnosis.RejectingPlugins(); !slices.Equal(got, []string{"path"}) {
					t.Errorf("rejecting plugins %v, want [path]", got)
				}
			}
		})
	}
}

// preparedPlugin is pathPlugin as a FilterPreparer: it records each
// PrepareFilter, and its NodeFilter reads reject at each call.
type preparedPlugin struct{ pathPlugin }

func (p *preparedPlugin) PrepareFilter(_ context.Context, _ *framework.CycleState, pod *v1.Pod) framework.NodeFilter {
	p.rec.add("PrepareFilter(%s)", pod.Name)
	return func(ctx context.Context, node *framework.NodeInfo) *framework.Status {
		return p.Filter(ctx, nil, pod, node)
	}
}

// A FitLine binds the plugins once and then answers each check as
// PodFitsOn without PreFilter does, following what changes between checks.
func TestFitLine(t *testing.T) {
	all := makeNodes(t, "n1", "n2", "broken")
	rec := &recorder{}
	p := &preparedPlugin{pathPlugin{rec: rec, reject: map[string]bool{"n1": true}}}
	f := mustFramework(t, baseRegistry(t, nil, p), baseSpec(map[ExtensionPoint]PluginSet{
		FilterPoint: {{Name: "path"}},
	}))
	ctx, state := context.Background(), framework.NewCycleState()
	pod := st.MakePod().Namespace("ns").Name("p").Obj()
	line := f.NewFitLine(ctx, state, pod)
	check := func(node *framework.NodeInfo, want bool) {
		t.Helper()
		got, err := line.Fits(ctx, node)
		if err != nil || got != want {
			t.Errorf("Fits(%s) = %v, %v, want %v", node.Name(), got, err, want)
		}
		if byPodFitsOn, err := f.PodFitsOn(ctx, state, pod, all, node, false); err != nil || byPodFitsOn != got {
			t.Errorf("Fits(%s) = %v, PodFitsOn says %v, %v", node.Name(), got, byPodFitsOn, err)
		}
	}
	check(all[0], false)
	check(all[1], true)
	p.reject = map[string]bool{"n2": true}
	check(all[0], true)
	check(all[1], false)
	if _, err := line.Fits(ctx, all[2]); !errors.Is(err, errBoom) || !strings.Contains(err.Error(), "ns/p") || !strings.Contains(err.Error(), "broken") {
		t.Errorf("Fits(broken) error = %v, want errBoom naming the pod and the node", err)
	}
	// PodFitsOn binds on every check; the line once.
	if got := rec.count("PrepareFilter(p)"); got != 1+4 {
		t.Errorf("PrepareFilter ran %d times, want once for the line and once per PodFitsOn (4)", got)
	}
}
