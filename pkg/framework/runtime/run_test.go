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
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
)

// checkStatus compares s with the wanted code and plugin, and checks that
// its message contains every string of msg.
func checkStatus(t *testing.T, s *framework.Status, code framework.Code, plugin string, msg ...string) {
	t.Helper()
	if s.Code() != code {
		t.Errorf("status = %v, want code %v", s, code)
	}
	if s.Plugin() != plugin {
		t.Errorf("status plugin = %q, want %q", s.Plugin(), plugin)
	}
	for _, m := range msg {
		if !strings.Contains(s.Message(), m) {
			t.Errorf("status message %q does not contain %q", s.Message(), m)
		}
	}
}

func TestRunPreFilterPlugins(t *testing.T) {
	tests := []struct {
		name       string
		results    []*framework.Status // of plugins a, b, c
		wantCode   framework.Code
		wantPlugin string
		wantMsg    []string
		wantCalls  []string
	}{
		{
			name:      "all pass",
			results:   []*framework.Status{nil, framework.NewStatus(framework.Success), nil},
			wantCalls: []string{"a.PreFilter(job)", "b.PreFilter(job)", "c.PreFilter(job)"},
		},
		{
			name:       "rejection stops the run",
			results:    []*framework.Status{nil, framework.NewStatus(framework.UnschedulableAndUnresolvable, "gang incomplete"), nil},
			wantCode:   framework.UnschedulableAndUnresolvable,
			wantPlugin: "b",
			wantMsg:    []string{"gang incomplete"},
			wantCalls:  []string{"a.PreFilter(job)", "b.PreFilter(job)"},
		},
		{
			name:       "error names the plugin",
			results:    []*framework.Status{framework.AsStatus(errBoom), nil, nil},
			wantCode:   framework.Error,
			wantPlugin: "a",
			wantMsg:    []string{`running PreFilter plugin "a" for job ns/job: boom`},
			wantCalls:  []string{"a.PreFilter(job)"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := &recorder{}
			var plugins []framework.Plugin
			for i, name := range []string{"a", "b", "c"} {
				plugins = append(plugins, &fakePlugin{name: name, rec: rec, preFilter: tt.results[i]})
			}
			f := mustFramework(t, baseRegistry(t, nil, plugins...),
				baseSpec(map[ExtensionPoint]PluginSet{PreFilterPoint: {{Name: "a"}, {Name: "b"}, {Name: "c"}}}))
			s := f.RunPreFilterPlugins(context.Background(), framework.NewCycleState(), testJob())
			checkStatus(t, s, tt.wantCode, tt.wantPlugin, tt.wantMsg...)
			if got := rec.get(); !reflect.DeepEqual(got, tt.wantCalls) {
				t.Errorf("calls = %v, want %v", got, tt.wantCalls)
			}
		})
	}
}

// A PreFilter plugin that returns Skip has its Filter skipped for the
// cycle; other plugins' Filters still run, and a new cycle starts over.
func TestPreFilterSkipSkipsFilter(t *testing.T) {
	rec := &recorder{}
	a := &fakePlugin{name: "a", rec: rec, preFilter: framework.NewStatus(framework.Skip)}
	b := &fakePlugin{name: "b", rec: rec}
	f := mustFramework(t, baseRegistry(t, nil, a, b), baseSpec(map[ExtensionPoint]PluginSet{
		PreFilterPoint: {{Name: "a"}, {Name: "b"}},
		FilterPoint:    {{Name: "a"}, {Name: "b"}},
	}))
	node := makeNodes(t, "n1")[0]
	state := framework.NewCycleState()
	if s := f.RunPreFilterPlugins(context.Background(), state, testJob()); !s.IsSuccess() {
		t.Fatalf("PreFilter: %v", s)
	}
	if s := f.RunFilterPlugins(context.Background(), state, testPod(), node); !s.IsSuccess() {
		t.Fatalf("Filter: %v", s)
	}
	if rec.count("a.Filter(n1)") != 0 || rec.count("b.Filter(n1)") != 1 {
		t.Errorf("calls = %v, want b's Filter only", rec.get())
	}

	// A clone of the state shares its skipped set (a set is never
	// changed once written): a later run on the state writes a new one
	// and leaves the clone's as it was.
	clone := state.Clone()
	a.preFilter = nil
	if s := f.RunPreFilterPlugins(context.Background(), state, testJob()); !s.IsSuccess() {
		t.Fatalf("PreFilter again: %v", s)
	}
	if !skipped(clone, skipFilterKey).Has("a") || skipped(state, skipFilterKey).Has("a") {
		t.Errorf("after a second run, the clone skips a: %v, the state: %v; want true, false",
			skipped(clone, skipFilterKey).Has("a"), skipped(state, skipFilterKey).Has("a"))
	}

	// Next cycle a does not skip.
	state = framework.NewCycleState()
	f.RunPreFilterPlugins(context.Background(), state, testJob())
	f.RunFilterPlugins(context.Background(), state, testPod(), node)
	if rec.count("a.Filter(n1)") != 1 {
		t.Errorf("calls = %v, want a's Filter in the second cycle", rec.get())
	}
}

func TestRunFilterPlugins(t *testing.T) {
	node := makeNodes(t, "n1")[0]
	tests := []struct {
		name       string
		results    []*framework.Status // of plugins a, b, c on n1
		wantCode   framework.Code
		wantPlugin string
		wantMsg    []string
		wantCalls  []string
	}{
		{
			name:      "all pass, Skip counts as passing",
			results:   []*framework.Status{nil, framework.NewStatus(framework.Skip), nil},
			wantCalls: []string{"a.Filter(n1)", "b.Filter(n1)", "c.Filter(n1)"},
		},
		{
			name:       "first rejection short-circuits",
			results:    []*framework.Status{nil, framework.NewStatus(framework.Unschedulable, "Insufficient cpu"), framework.NewStatus(framework.Unschedulable, "never seen")},
			wantCode:   framework.Unschedulable,
			wantPlugin: "b",
			wantMsg:    []string{"Insufficient cpu"},
			wantCalls:  []string{"a.Filter(n1)", "b.Filter(n1)"},
		},
		{
			name:       "error names the plugin and node",
			results:    []*framework.Status{framework.AsStatus(errBoom), nil, nil},
			wantCode:   framework.Error,
			wantPlugin: "a",
			wantMsg:    []string{`running Filter plugin "a" for pod ns/p on node "n1": boom`},
			wantCalls:  []string{"a.Filter(n1)"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := &recorder{}
			var plugins []framework.Plugin
			for i, name := range []string{"a", "b", "c"} {
				plugins = append(plugins, &fakePlugin{name: name, rec: rec, filter: map[string]*framework.Status{"n1": tt.results[i]}})
			}
			f := mustFramework(t, baseRegistry(t, nil, plugins...),
				baseSpec(map[ExtensionPoint]PluginSet{FilterPoint: {{Name: "a"}, {Name: "b"}, {Name: "c"}}}))
			s := f.RunFilterPlugins(context.Background(), framework.NewCycleState(), testPod(), node)
			checkStatus(t, s, tt.wantCode, tt.wantPlugin, tt.wantMsg...)
			if got := rec.get(); !reflect.DeepEqual(got, tt.wantCalls) {
				t.Errorf("calls = %v, want %v", got, tt.wantCalls)
			}
		})
	}
}

func TestPluginSetState(t *testing.T) {
	if skipped(nil, skipFilterKey).Has("a") {
		t.Error("a nil state skips plugins")
	}
	state := framework.NewCycleState()
	state.Write(skipFilterKey, pluginSet(nil))
	state.Write(skipScoreKey, fakeState{})
	if skipped(state, skipFilterKey).Has("a") || skipped(state, skipScoreKey).Has("a") {
		t.Error("an empty or foreign entry skips plugins")
	}
	orig := pluginSet{"a": {}}
	if clone := orig.Clone().(pluginSet); !clone.Has("a") || len(clone) != 1 {
		t.Errorf("Clone = %v of %v, want the same set", clone, orig)
	}
	if attribute(nil, "a") != nil {
		t.Error("attribute(nil) is not nil")
	}
}

type fakeState struct{}

func (fakeState) Clone() framework.StateData { return fakeState{} }

// A plugin may return one shared *Status from concurrent calls; the
// framework must not write into it (the race detector would see it) and
// must not let one plugin's attribution leak into another's status.
func TestStatusAttributionCopies(t *testing.T) {
	shared := framework.NewStatus(framework.Unschedulable, "shared reason")
	a := &fakePlugin{name: "a", filter: map[string]*framework.Status{}}
	for i := range 50 {
		a.filter[fmt.Sprintf("n%d", i)] = shared
	}
	f := mustFramework(t, baseRegistry(t, nil, a), baseSpec(map[ExtensionPoint]PluginSet{FilterPoint: {{Name: "a"}}}), WithParallelism(8))
	nodes := makeNodes(t, slices.Collect(func(yield func(string) bool) {
		for i := range 50 {
			yield(fmt.Sprintf("n%d", i))
		}
	})...)
	_, d, err := f.FindFeasibleNodes(context.Background(), framework.NewCycleState(), testPod(), nodes)
	if err != nil {
		t.Fatal(err)
	}
	if shared.Plugin() != "" {
		t.Errorf("the plugin's own status was changed to name %q", shared.Plugin())
	}
	if s := d.StatusOf("n7"); s.Plugin() != "a" || s.Message() != "shared reason" {
		t.Errorf("n7 status = %v from %q", s, s.Plugin())
	}
}

func TestFindFeasibleNodes(t *testing.T) {
	names := []string{"n1", "n2", "n3", "n4", "n5", "n6"}
	nodes := makeNodes(t, names...)
	taint := framework.NewStatus(framework.UnschedulableAndUnresolvable, "node(s) had untolerated taint {k: v}")
	cpu := framework.NewStatus(framework.Unschedulable, "Insufficient cpu")
	rec := &recorder{}
	// fit rejects n1..n3 for cpu, and n4 for cpu and memory; taints
	// rejects n5 and n6, and would reject n1 too but fit comes first.
	fit := &fakePlugin{name: "fit", rec: rec, filter: map[string]*framework.Status{
		"n1": cpu, "n2": cpu, "n3": cpu,
		"n4": framework.NewStatus(framework.Unschedulable, "Insufficient cpu", "Insufficient memory"),
	}}
	taints := &fakePlugin{name: "taints", rec: rec, filter: map[string]*framework.Status{"n1": taint, "n5": taint, "n6": taint}}
	f := mustFramework(t, baseRegistry(t, nil, fit, taints),
		baseSpec(map[ExtensionPoint]PluginSet{FilterPoint: {{Name: "fit"}, {Name: "taints"}}}), WithParallelism(3))

	feasible, d, err := f.FindFeasibleNodes(context.Background(), framework.NewCycleState(), testPod(), nodes)
	if err != nil {
		t.Fatal(err)
	}
	if len(feasible) != 0 {
		t.Errorf("feasible = %d nodes, want none", len(feasible))
	}
	if rec.count("taints.Filter(n1)") != 0 {
		t.Error("taints ran on n1 after fit rejected it")
	}
	if got, want := d.ReasonCounts(), map[string]int{"Insufficient cpu": 4, "Insufficient memory": 1, "node(s) had untolerated taint {k: v}": 2}; !reflect.DeepEqual(got, want) {
		t.Errorf("ReasonCounts = %v, want %v", got, want)
	}
	for node, plugin := range map[string]string{"n1": "fit", "n4": "fit", "n5": "taints"} {
		if s := d.StatusOf(node); s.Plugin() != plugin || !s.IsRejected() {
			t.Errorf("status of %s = %v from %q, want a rejection from %s", node, s, s.Plugin(), plugin)
		}
	}
	if got := d.RejectingPlugins(); !reflect.DeepEqual(got, []string{"fit", "taints"}) {
		t.Errorf("RejectingPlugins() = %v", got)
	}
	want := "0/6 nodes are available: 4 Insufficient cpu, 2 node(s) had untolerated taint {k: v}, 1 Insufficient memory."
	if got := d.Message(len(nodes)); got != want {
		t.Errorf("Message() =\n%q\nwant\n%q", got, want)
	}

	// n2 and n6 pass now: they come back in input order.
	fit.filter["n2"] = nil
	delete(taints.filter, "n6")
	feasible, d, err = f.FindFeasibleNodes(context.Background(), framework.NewCycleState(), testPod(), nodes)
	if err != nil {
		t.Fatal(err)
	}
	if got := nodeNames(feasible); !reflect.DeepEqual(got, []string{"n2", "n6"}) {
		t.Errorf("feasible = %v, want [n2 n6]", got)
	}
	if d.Rejected() != 4 || d.Message(len(nodes)) != "2/6 nodes are available: 3 Insufficient cpu, 1 Insufficient memory, 1 node(s) had untolerated taint {k: v}." {
		t.Errorf("diagnosis = %v, %q", d.ReasonCounts(), d.Message(len(nodes)))
	}

	// No nodes: nothing feasible, nothing rejected.
	feasible, d, err = f.FindFeasibleNodes(context.Background(), framework.NewCycleState(), testPod(), nil)
	if err != nil || len(feasible) != 0 || d.Rejected() != 0 || d.Message(0) != "0/0 nodes are available." {
		t.Errorf("no nodes: %v, %+v, %v", feasible, d, err)
	}
}

func nodeNames(nodes []*framework.NodeInfo) []string {
	var out []string
	for _, n := range nodes {
		out = append(out, n.Name())
	}
	return out
}

// Many nodes, few workers: every node is filtered exactly once, in
// parallel, and the result keeps the input order.
func TestFindFeasibleNodesParallel(t *testing.T) {
	const n = 1000
	var names []string
	for i := range n {
		names = append(names, fmt.Sprintf("node-%04d", i))
	}
	nodes := makeNodes(t, names...)
	rec := &recorder{}
	// odd rejects every odd node; the recorder's lock is the only
	// synchronisation, so -race checks the framework's own.
	odd := &fakePlugin{name: "odd", rec: rec, filter: map[string]*framework.Status{}}
	for i := 1; i < n; i += 2 {
		odd.filter[names[i]] = framework.NewStatus(framework.Unschedulable, "odd")
	}
	conc := newConcurrencyProbe("probe")
	f := mustFramework(t, baseRegistry(t, nil, odd, conc),
		baseSpec(map[ExtensionPoint]PluginSet{FilterPoint: {{Name: "probe"}, {Name: "odd"}}}), WithParallelism(8))
	feasible, d, err := f.FindFeasibleNodes(context.Background(), framework.NewCycleState(), testPod(), nodes)
	if err != nil {
		t.Fatal(err)
	}
	if len(feasible) != n/2 || d.ReasonCounts()["odd"] != n/2 {
		t.Fatalf("feasible = %d, odd = %d; want %d each", len(feasible), d.ReasonCounts()["odd"], n/2)
	}
	for i, ni := range feasible {
		if ni.Name() != names[2*i] {
			t.Fatalf("feasible[%d] = %s, want %s", i, ni.Name(), names[2*i])
		}
	}
	if calls := len(rec.get()); calls != n {
		t.Errorf("Filter ran %d times, want %d", calls, n)
	}
	if !conc.overlapped() {
		t.Error("Filter calls did not overlap: nodes were not filtered in parallel")
	}
}

// concurrencyProbe is a Filter plugin whose first call waits until a
// second call has started: with one worker, it times out.
type concurrencyProbe struct {
	name    string
	mu      sync.Mutex
	calls   int
	second  chan struct{}
	overlap bool
}

func newConcurrencyProbe(name string) *concurrencyProbe {
	return &concurrencyProbe{name: name, second: make(chan struct{})}
}

func (c *concurrencyProbe) Name() string { return c.name }
func (c *concurrencyProbe) Filter(context.Context, *framework.CycleState, *v1.Pod, *framework.NodeInfo) *framework.Status {
	c.mu.Lock()
	c.calls++
	n := c.calls
	c.mu.Unlock()
	switch n {
	case 1:
		select {
		case <-c.second:
			c.mu.Lock()
			c.overlap = true
			c.mu.Unlock()
		case <-time.After(5 * time.Second):
		}
	case 2:
		close(c.second)
	}
	return nil
}

func (c *concurrencyProbe) overlapped() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.overlap
}

func TestFindFeasibleNodesError(t *testing.T) {
	nodes := makeNodes(t, "n1", "n2", "n3")
	bad := &fakePlugin{name: "bad", filter: map[string]*framework.Status{"n2": framework.AsStatus(errBoom)}}
	f := mustFramework(t, baseRegistry(t, nil, bad), baseSpec(map[ExtensionPoint]PluginSet{FilterPoint: {{Name: "bad"}}}))
	feasible, d, err := f.FindFeasibleNodes(context.Background(), framework.NewCycleState(), testPod(), nodes)
	if err == nil || !errors.Is(err, errBoom) || !strings.Contains(err.Error(), `running Filter plugin "bad" for pod ns/p on node "n2": boom`) {
		t.Errorf("err = %v, want the plugin's error naming it and the node", err)
	}
	if feasible != nil || d.Rejected() != 0 {
		t.Errorf("got feasible %v and diagnosis %+v with an error", feasible, d)
	}
}

func TestFindFeasibleNodesCancelled(t *testing.T) {
	nodes := makeNodes(t, "n1", "n2", "n3")
	f := mustFramework(t, baseRegistry(t, nil, &fakePlugin{name: "a"}), baseSpec(map[ExtensionPoint]PluginSet{FilterPoint: {{Name: "a"}}}))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	feasible, _, err := f.FindFeasibleNodes(ctx, framework.NewCycleState(), testPod(), nodes)
	if !errors.Is(err, context.Canceled) || feasible != nil {
		t.Errorf("FindFeasibleNodes with a cancelled context = %v, %v; want context.Canceled", feasible, err)
	}
}

func TestDiagnosisMessage(t *testing.T) {
	tests := []struct {
		name     string
		statuses map[string]*framework.Status
		numNodes int
		want     string
	}{
		{
			name:     "none rejected",
			numNodes: 3,
			want:     "3/3 nodes are available.",
		},
		{
			name: "ties sorted by text",
			statuses: map[string]*framework.Status{
				"n1": framework.NewStatus(framework.Unschedulable, "b reason"), "n2": framework.NewStatus(framework.Unschedulable, "a reason"),
				"n3": framework.NewStatus(framework.Unschedulable, "c reason"), "n4": framework.NewStatus(framework.Unschedulable, "c reason"),
			},
			numNodes: 4,
			want:     "0/4 nodes are available: 2 c reason, 1 a reason, 1 b reason.",
		},
		{
			name:     "a rejection without reasons counts under its code",
			statuses: map[string]*framework.Status{"n1": framework.NewStatus(framework.UnschedulableAndUnresolvable)},
			numNodes: 1,
			want:     "0/1 nodes are available: 1 UnschedulableAndUnresolvable.",
		},
		{
			name:     "more rejected than considered does not go negative",
			statuses: map[string]*framework.Status{"n1": framework.NewStatus(framework.Unschedulable, "x"), "n2": framework.NewStatus(framework.Unschedulable, "x")},
			numNodes: 1,
			want:     "0/1 nodes are available: 2 x.",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var d Diagnosis
			for n, s := range tt.statuses {
				d.add(n, s)
			}
			if got := d.Message(tt.numNodes); got != tt.want {
				t.Errorf("Message(%d) = %q, want %q", tt.numNodes, got, tt.want)
			}
		})
	}
}

func TestRunScorePlugins(t *testing.T) {
	nodes := makeNodes(t, "n1", "n2", "n3")
	// double maps a raw score s to 2*s, so raw 50 becomes 100 and raw 60
	// is out of range only after normalisation.
	double := func(scores []framework.NodeScore) *framework.Status {
		for i := range scores {
			scores[i].Score *= 2
		}
		return nil
	}
	tests := []struct {
		name       string
		a, b       *fakePlugin
		weightB    int64
		wantScores []int64
		wantCode   framework.Code
		wantPlugin string
		wantMsg    []string
	}{
		{
			name:       "weighted sum",
			a:          &fakePlugin{score: map[string]int64{"n1": 10, "n2": 20, "n3": 0}},
			b:          &fakePlugin{score: map[string]int64{"n1": 1, "n2": 0, "n3": 100}},
			weightB:    3,
			wantScores: []int64{10 + 3, 20, 300},
		},
		{
			name:       "normalised before weighting",
			a:          &fakePlugin{score: map[string]int64{"n1": 10, "n2": 50, "n3": 0}, normalize: double},
			b:          &fakePlugin{score: map[string]int64{"n1": 1, "n2": 1, "n3": 1}},
			weightB:    2,
			wantScores: []int64{20 + 2, 100 + 2, 0 + 2},
		},
		{
			name:       "raw score out of range is fine when normalisation brings it in",
			a:          &fakePlugin{score: map[string]int64{"n1": 1000, "n2": 0, "n3": 500}, normalize: func(s []framework.NodeScore) *framework.Status { return scaleTo100(s) }},
			b:          &fakePlugin{},
			wantScores: []int64{100, 0, 50},
		},
		{
			name:       "out of range after normalisation",
			a:          &fakePlugin{},
			b:          &fakePlugin{score: map[string]int64{"n1": 10, "n2": 60, "n3": 0}, normalize: double},
			wantCode:   framework.Error,
			wantPlugin: "b",
			wantMsg:    []string{`plugin "b" scored node "n2" 120 for pod ns/p, outside [0, 100]`},
		},
		{
			name:       "negative score",
			a:          &fakePlugin{score: map[string]int64{"n3": -1}},
			b:          &fakePlugin{},
			wantCode:   framework.Error,
			wantPlugin: "a",
			wantMsg:    []string{`plugin "a" scored node "n3" -1`},
		},
		{
			name:       "score error",
			a:          &fakePlugin{},
			b:          &fakePlugin{scoreErr: framework.AsStatus(errBoom)},
			wantCode:   framework.Error,
			wantPlugin: "b",
			wantMsg:    []string{`running Score plugin "b" for pod ns/p on node`, "boom"},
		},
		{
			name: "normalisation error",
			a: &fakePlugin{normalize: func([]framework.NodeScore) *framework.Status {
				return framework.NewStatus(framework.Error, "cannot normalise")
			}},
			b:          &fakePlugin{},
			wantCode:   framework.Error,
			wantPlugin: "a",
			wantMsg:    []string{`normalizing the scores of plugin "a" for pod ns/p: cannot normalise`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := &recorder{}
			tt.a.name, tt.a.rec = "a", rec
			tt.b.name, tt.b.rec = "b", rec
			f := mustFramework(t, baseRegistry(t, nil, tt.a, tt.b),
				baseSpec(map[ExtensionPoint]PluginSet{ScorePoint: {{Name: "a"}, {Name: "b", Weight: tt.weightB}}}), WithParallelism(2))
			scores, s := f.RunScorePlugins(context.Background(), framework.NewCycleState(), testPod(), nodes)
			checkStatus(t, s, tt.wantCode, tt.wantPlugin, tt.wantMsg...)
			if tt.wantCode != framework.Success {
				if scores != nil {
					t.Errorf("scores = %v with an error", scores)
				}
				return
			}
			want := []framework.NodeScore{{Name: "n1", Score: tt.wantScores[0]}, {Name: "n2", Score: tt.wantScores[1]}, {Name: "n3", Score: tt.wantScores[2]}}
			if !reflect.DeepEqual(scores, want) {
				t.Errorf("scores = %v, want %v", scores, want)
			}
			for _, p := range []*fakePlugin{tt.a, tt.b} {
				if n := rec.count(p.name + ".NormalizeScore"); (p.normalize != nil) != (n == 1) {
					t.Errorf("%s: NormalizeScore ran %d times, has normalize %v", p.name, n, p.normalize != nil)
				}
			}
		})
	}
}

// scaleTo100 scales scores so the highest is 100.
func scaleTo100(scores []framework.NodeScore) *framework.Status {
	var top int64
	for _, s := range scores {
		top = max(top, s.Score)
	}
	for i := range scores {
		if top > 0 {
			scores[i].Score = scores[i].Score * framework.MaxNodeScore / top
		}
	}
	return nil
}

func TestRunPreScoreAndSkip(t *testing.T) {
	nodes := makeNodes(t, "n1", "n2")
	rec := &recorder{}
	a := &fakePlugin{name: "a", rec: rec, preScore: framework.NewStatus(framework.Skip), score: map[string]int64{"n1": 100, "n2": 100}}
	b := &fakePlugin{name: "b", rec: rec, score: map[string]int64{"n1": 5, "n2": 7}}
	f := mustFramework(t, baseRegistry(t, nil, a, b), baseSpec(map[ExtensionPoint]PluginSet{
		PreScorePoint: {{Name: "a"}, {Name: "b"}},
		ScorePoint:    {{Name: "a"}, {Name: "b"}},
	}))
	state := framework.NewCycleState()
	if s := f.RunPreScorePlugins(context.Background(), state, testPod(), nodes); !s.IsSuccess() {
		t.Fatalf("PreScore: %v", s)
	}
	scores, s := f.RunScorePlugins(context.Background(), state, testPod(), nodes)
	if !s.IsSuccess() || !reflect.DeepEqual(scores, []framework.NodeScore{{Name: "n1", Score: 5}, {Name: "n2", Score: 7}}) {
		t.Errorf("scores = %v, %v; want a skipped", scores, s)
	}
	if rec.count("a.Score(n1)") != 0 || rec.count("a.PreScore(2)") != 1 || rec.count("b.PreScore(2)") != 1 {
		t.Errorf("calls = %v", rec.get())
	}

	// A PreScore failure is an Error naming the plugin, and stops the run.
	a.preScore = framework.NewStatus(framework.Unschedulable, "odd")
	s = f.RunPreScorePlugins(context.Background(), state, testPod(), nodes)
	checkStatus(t, s, framework.Error, "a", `running PreScore plugin "a" for pod ns/p: odd`)
	if rec.count("b.PreScore(2)") != 1 {
		t.Errorf("b's PreScore ran after a failed: %v", rec.get())
	}
}

func TestRunScorePluginsNothingToDo(t *testing.T) {
	nodes := makeNodes(t, "n1", "n2")
	f := mustFramework(t, baseRegistry(t, nil), baseSpec(nil))
	scores, s := f.RunScorePlugins(context.Background(), framework.NewCycleState(), testPod(), nodes)
	if !s.IsSuccess() || !reflect.DeepEqual(scores, []framework.NodeScore{{Name: "n1", Score: 0}, {Name: "n2", Score: 0}}) {
		t.Errorf("without Score plugins: %v, %v", scores, s)
	}
	f = mustFramework(t, baseRegistry(t, nil, &fakePlugin{name: "a"}), baseSpec(map[ExtensionPoint]PluginSet{ScorePoint: {{Name: "a"}}}))
	scores, s = f.RunScorePlugins(context.Background(), framework.NewCycleState(), testPod(), nil)
	if !s.IsSuccess() || len(scores) != 0 {
		t.Errorf("without nodes: %v, %v", scores, s)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, s = f.RunScorePlugins(ctx, framework.NewCycleState(), testPod(), nodes)
	if !errors.Is(s.AsError(), context.Canceled) {
		t.Errorf("with a cancelled context: %v, want context.Canceled", s)
	}
}

func TestRunReservePlugins(t *testing.T) {
	tests := []struct {
		name       string
		results    []*framework.Status // of a, b, c
		wantCode   framework.Code
		wantPlugin string
		wantMsg    []string
		wantCalls  []string
	}{
		{
			name:      "all reserve",
			results:   []*framework.Status{nil, framework.NewStatus(framework.Skip), nil},
			wantCalls: []string{"a.Reserve(n1)", "b.Reserve(n1)", "c.Reserve(n1)"},
		},
		{
			name:       "rejection unreserves in reverse, from the failing plugin",
			results:    []*framework.Status{nil, nil, framework.NewStatus(framework.Unschedulable, "quota")},
			wantCode:   framework.Unschedulable,
			wantPlugin: "c",
			wantMsg:    []string{"quota"},
			wantCalls:  []string{"a.Reserve(n1)", "b.Reserve(n1)", "c.Reserve(n1)", "c.Unreserve(n1)", "b.Unreserve(n1)", "a.Unreserve(n1)"},
		},
		{
			name:       "error leaves later plugins alone",
			results:    []*framework.Status{nil, framework.AsStatus(errBoom), nil},
			wantCode:   framework.Error,
			wantPlugin: "b",
			wantMsg:    []string{`running Reserve plugin "b" for pod ns/p on node "n1": boom`},
			wantCalls:  []string{"a.Reserve(n1)", "b.Reserve(n1)", "b.Unreserve(n1)", "a.Unreserve(n1)"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := &recorder{}
			var plugins []framework.Plugin
			for i, name := range []string{"a", "b", "c"} {
				plugins = append(plugins, &fakePlugin{name: name, rec: rec, reserve: tt.results[i]})
			}
			f := mustFramework(t, baseRegistry(t, nil, plugins...),
				baseSpec(map[ExtensionPoint]PluginSet{ReservePoint: {{Name: "a"}, {Name: "b"}, {Name: "c"}}}))
			s := f.RunReservePlugins(context.Background(), framework.NewCycleState(), testPod(), "n1")
			checkStatus(t, s, tt.wantCode, tt.wantPlugin, tt.wantMsg...)
			if got := rec.get(); !reflect.DeepEqual(got, tt.wantCalls) {
				t.Errorf("calls = %v, want %v", got, tt.wantCalls)
			}
		})
	}
}

func TestRunUnreservePlugins(t *testing.T) {
	rec := &recorder{}
	var plugins []framework.Plugin
	for _, name := range []string{"a", "b", "c"} {
		plugins = append(plugins, &fakePlugin{name: name, rec: rec})
	}
	f := mustFramework(t, baseRegistry(t, nil, plugins...),
		baseSpec(map[ExtensionPoint]PluginSet{ReservePoint: {{Name: "a"}, {Name: "b"}, {Name: "c"}}}))
	f.RunUnreservePlugins(context.Background(), framework.NewCycleState(), testPod(), "n1")
	if got, want := rec.get(), []string{"c.Unreserve(n1)", "b.Unreserve(n1)", "a.Unreserve(n1)"}; !reflect.DeepEqual(got, want) {
		t.Errorf("calls = %v, want %v", got, want)
	}
}

func TestRunPermitPlugins(t *testing.T) {
	placements := map[string]string{"uid-1": "n1", "uid-2": "n2"}
	tests := []struct {
		name       string
		results    []*framework.Status // of a, b
		wantCode   framework.Code
		wantPlugin string
		wantMsg    []string
		wantCalls  []string
	}{
		{
			name:      "all permit",
			results:   []*framework.Status{nil, framework.NewStatus(framework.Skip)},
			wantCalls: []string{"a.Permit(2)", "b.Permit(2)"},
		},
		{
			name:       "rejection",
			results:    []*framework.Status{framework.NewStatus(framework.Unschedulable, "only 2/3 tasks placed"), nil},
			wantCode:   framework.Unschedulable,
			wantPlugin: "a",
			wantMsg:    []string{"only 2/3 tasks placed"},
			wantCalls:  []string{"a.Permit(2)"},
		},
		{
			name:       "error",
			results:    []*framework.Status{nil, framework.AsStatus(errBoom)},
			wantCode:   framework.Error,
			wantPlugin: "b",
			wantMsg:    []string{`running Permit plugin "b" for job ns/job: boom`},
			wantCalls:  []string{"a.Permit(2)", "b.Permit(2)"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := &recorder{}
			a := &fakePlugin{name: "a", rec: rec, permit: tt.results[0]}
			b := &fakePlugin{name: "b", rec: rec, permit: tt.results[1]}
			f := mustFramework(t, baseRegistry(t, nil, a, b), baseSpec(map[ExtensionPoint]PluginSet{PermitPoint: {{Name: "a"}, {Name: "b"}}}))
			s := f.RunPermitPlugins(context.Background(), framework.NewCycleState(), testJob(), placements)
			checkStatus(t, s, tt.wantCode, tt.wantPlugin, tt.wantMsg...)
			if got := rec.get(); !reflect.DeepEqual(got, tt.wantCalls) {
				t.Errorf("calls = %v, want %v", got, tt.wantCalls)
			}
		})
	}
}

func TestRunPostFilterPlugins(t *testing.T) {
	unschedulable := func(msg string) *framework.Status { return framework.NewStatus(framework.Unschedulable, msg) }
	tests := []struct {
		name       string
		results    []*framework.Status // of a, b
		messages   []string            // of a's and b's results
		wantCode   framework.Code
		wantPlugin string
		wantMsg    []string
		wantResult string
		wantCalls  []string
		wantWaitOn []string
	}{
		{
			name:       "the first success ends the phase",
			results:    []*framework.Status{nil, nil},
			messages:   []string{"a: making room", "b: making room"},
			wantResult: "a: making room",
			wantCalls:  []string{"a.PostFilter(job)"},
		},
		{
			name:       "a rejection hands on",
			results:    []*framework.Status{unschedulable("nothing to take"), nil},
			messages:   []string{"", "b: making room"},
			wantResult: "b: making room",
			wantCalls:  []string{"a.PostFilter(job)", "b.PostFilter(job)"},
		},
		{
			name:       "none succeeds: unschedulable with every reason",
			results:    []*framework.Status{unschedulable("nothing to take"), unschedulable("no lower priority")},
			messages:   []string{"a: looked", ""},
			wantCode:   framework.Unschedulable,
			wantMsg:    []string{"a: nothing to take", "b: no lower priority"},
			wantResult: "a: looked",
			wantCalls:  []string{"a.PostFilter(job)", "b.PostFilter(job)"},
			wantWaitOn: []string{"a", "b"},
		},
		{
			name:       "an unresolvable rejection is not waited on",
			results:    []*framework.Status{framework.NewStatus(framework.UnschedulableAndUnresolvable), unschedulable("no lower priority")},
			messages:   []string{"", ""},
			wantCode:   framework.Unschedulable,
			wantMsg:    []string{"b: no lower priority"},
			wantCalls:  []string{"a.PostFilter(job)", "b.PostFilter(job)"},
			wantWaitOn: []string{"b"},
		},
		{
			name:       "an error ends the phase, naming the plugin",
			results:    []*framework.Status{framework.AsStatus(errBoom), nil},
			messages:   []string{"", "b: making room"},
			wantCode:   framework.Error,
			wantPlugin: "a",
			wantMsg:    []string{`running PostFilter plugin "a" for job ns/job: boom`},
			wantCalls:  []string{"a.PostFilter(job)"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := &recorder{}
			a := &fakePlugin{name: "a", rec: rec, postFilter: tt.results[0], postFilterMsg: tt.messages[0]}
			b := &fakePlugin{name: "b", rec: rec, postFilter: tt.results[1], postFilterMsg: tt.messages[1]}
			f := mustFramework(t, baseRegistry(t, nil, a, b), baseSpec(map[ExtensionPoint]PluginSet{PostFilterPoint: {{Name: "a"}, {Name: "b"}}}))
			if !f.HasPostFilterPlugins() {
				t.Fatal("HasPostFilterPlugins = false")
			}
			res, s, waitOn := f.RunPostFilterPlugins(context.Background(), framework.NewCycleState(), testJob(), nil)
			checkStatus(t, s, tt.wantCode, tt.wantPlugin, tt.wantMsg...)
			if !reflect.DeepEqual(waitOn, tt.wantWaitOn) {
				t.Errorf("waitOn = %v, want %v", waitOn, tt.wantWaitOn)
			}
			if got := ""; res != nil {
				got = res.Message
				if got != tt.wantResult {
					t.Errorf("result %q, want %q", got, tt.wantResult)
				}
			} else if tt.wantResult != "" {
				t.Errorf("no result, want %q", tt.wantResult)
			}
			if got := rec.get(); !reflect.DeepEqual(got, tt.wantCalls) {
				t.Errorf("calls = %v, want %v", got, tt.wantCalls)
			}
		})
	}
	// Without PostFilter plugins the phase does nothing and says so.
	f := mustFramework(t, baseRegistry(t, nil), baseSpec(nil))
	if f.HasPostFilterPlugins() {
		t.Error("HasPostFilterPlugins = true without plugins")
	}
	if res, s, waitOn := f.RunPostFilterPlugins(context.Background(), framework.NewCycleState(), testJob(), nil); res != nil || !s.IsRejected() || waitOn != nil {
		t.Errorf("RunPostFilterPlugins without plugins = %v, %v, %v; want no result, unschedulable, nothing to wait on", res, s, waitOn)
	}
}

func TestRunBindPlugins(t *testing.T) {
	tests := []struct {
		name       string
		results    []*framework.Status // of b1, b2, b3
		wantCode   framework.Code
		wantPlugin string
		wantMsg    []string
		wantCalls  []string
	}{
		{
			name:      "first binder binds",
			results:   []*framework.Status{nil, nil, nil},
			wantCalls: []string{"b1.Bind(n1)"},
		},
		{
			name:      "skip falls through to the next binder",
			results:   []*framework.Status{framework.NewStatus(framework.Skip), nil, nil},
			wantCalls: []string{"b1.Bind(n1)", "b2.Bind(n1)"},
		},
		{
			name:       "first non-skip failure wins",
			results:    []*framework.Status{framework.NewStatus(framework.Skip), framework.AsStatus(errBoom), nil},
			wantCode:   framework.Error,
			wantPlugin: "b2",
			wantMsg:    []string{`running Bind plugin "b2" for pod ns/p on node "n1": boom`},
			wantCalls:  []string{"b1.Bind(n1)", "b2.Bind(n1)"},
		},
		{
			name:       "a rejection from a binder is an error",
			results:    []*framework.Status{framework.NewStatus(framework.Unschedulable, "no")},
			wantCode:   framework.Error,
			wantPlugin: "b1",
			wantMsg:    []string{`Bind plugin "b1"`, "no"},
			wantCalls:  []string{"b1.Bind(n1)"},
		},
		{
			name:      "all skip",
			results:   []*framework.Status{framework.NewStatus(framework.Skip), framework.NewStatus(framework.Skip), framework.NewStatus(framework.Skip)},
			wantCode:  framework.Error,
			wantMsg:   []string{`binding pod ns/p to node "n1": every Bind plugin (b1, b2, b3) skipped it`},
			wantCalls: []string{"b1.Bind(n1)", "b2.Bind(n1)", "b3.Bind(n1)"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := &recorder{}
			var plugins []framework.Plugin
			for i, name := range []string{"b1", "b2", "b3"} {
				var s *framework.Status
				if i < len(tt.results) {
					s = tt.results[i]
				}
				plugins = append(plugins, &fakePlugin{name: name, rec: rec, bind: s})
			}
			f := mustFramework(t, baseRegistry(t, nil, plugins...), baseSpec(map[ExtensionPoint]PluginSet{BindPoint: {{Name: "b1"}, {Name: "b2"}, {Name: "b3"}}}))
			s := f.RunBindPlugins(context.Background(), framework.NewCycleState(), testPod(), "n1")
			checkStatus(t, s, tt.wantCode, tt.wantPlugin, tt.wantMsg...)
			if got := rec.get(); !reflect.DeepEqual(got, tt.wantCalls) {
				t.Errorf("calls = %v, want %v", got, tt.wantCalls)
			}
		})
	}
}

func TestEventsToRegisterFor(t *testing.T) {
	nodeAdd := framework.EventNodeAdd
	taint := framework.EventNodeTaintChange
	a := &fakePlugin{name: "a", events: []framework.ClusterEvent{nodeAdd}}
	b := &fakePlugin{name: "b", events: []framework.ClusterEvent{taint, nodeAdd}}
	f := mustFramework(t, baseRegistry(t, nil, a, b, &plainFilter{name: "plain"}),
		baseSpec(map[ExtensionPoint]PluginSet{FilterPoint: {{Name: "a"}, {Name: "b"}, {Name: "plain"}}}))
	tests := []struct {
		names []string
		want  []string
	}{
		{nil, nil},
		{[]string{"b"}, []string{"b:" + taint.String(), "b:" + nodeAdd.String()}},
		{[]string{"a", "b"}, []string{"a:" + nodeAdd.String(), "b:" + taint.String(), "b:" + nodeAdd.String()}},
		{[]string{"plain"}, []string{"plain:" + wildcardEvent.Event.String()}},
		{[]string{"not-enabled"}, []string{"not-enabled:" + wildcardEvent.Event.String()}},
	}
	for _, tt := range tests {
		if got := eventNames(f.EventsToRegisterFor(tt.names...)); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("EventsToRegisterFor(%v) = %v, want %v", tt.names, got, tt.want)
		}
	}
}
