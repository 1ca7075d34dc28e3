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
	"math"
	"reflect"
	"strings"
	"testing"

	apiruntime "k8s.io/apimachinery/pkg/runtime"

	configapi "github.com/batch-scheduler/batch-scheduler/pkg/apis/config"
	"github.com/batch-scheduler/batch-scheduler/pkg/config"
	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
)

func TestNewFrameworkValidation(t *testing.T) {
	section := configapi.NewRawArgs("sched.yaml", []byte("value: x\n"))
	tests := []struct {
		name string
		spec ProfileSpec
		// registry adds factories beyond the base plugins and "a", "b".
		registry func(t *testing.T, r *testRegistry)
		want     []string
		// wantIs, when set, must be found with errors.Is.
		wantIs error
	}{
		{
			name: "no queue sort",
			spec: baseSpec(map[ExtensionPoint]PluginSet{QueueSortPoint: nil}),
			want: []string{"queueSort needs exactly one plugin, got none"},
		},
		{
			name: "two queue sorts",
			spec: baseSpec(map[ExtensionPoint]PluginSet{QueueSortPoint: {{Name: "sort"}, {Name: "a"}}}),
			want: []string{"queueSort needs exactly one plugin, got 2 (sort, a)"},
		},
		{
			name: "no bind",
			spec: baseSpec(map[ExtensionPoint]PluginSet{BindPoint: {}}),
			want: []string{"bind needs at least one plugin, got none"},
		},
		{
			name: "unknown plugin",
			spec: baseSpec(map[ExtensionPoint]PluginSet{FilterPoint: {{Name: "nope"}}, ScorePoint: {{Name: "nope"}}}),
			want: []string{`enabled at filter, score: unknown plugin "nope"`, "registered: a, b, binder, sort"},
		},
		{
			name: "duplicate plugin within a point",
			spec: baseSpec(map[ExtensionPoint]PluginSet{FilterPoint: {{Name: "a"}, {Name: "b"}, {Name: "a"}}}),
			want: []string{`plugin "a" is enabled twice at filter`},
		},
		{
			name: "empty plugin name",
			spec: baseSpec(map[ExtensionPoint]PluginSet{PermitPoint: {{Name: "a"}, {Name: ""}}}),
			want: []string{"permit[1]: the plugin name is empty"},
		},
		{
			name: "unknown extension point",
			spec: baseSpec(map[ExtensionPoint]PluginSet{"postBind": {{Name: "a"}}}),
			want: []string{`unknown extension point "postBind"`, "known: queueSort, preFilter"},
		},
		{
			name: "empty scheduler name",
			spec: func() ProfileSpec { s := baseSpec(nil); s.SchedulerName = ""; return s }(),
			want: []string{"the scheduler name is empty"},
		},
		{
			name:     "plugin lacks the interface of its point",
			spec:     baseSpec(map[ExtensionPoint]PluginSet{FilterPoint: {{Name: "plain"}}, ScorePoint: {{Name: "plain"}}, ReservePoint: {{Name: "plain"}}}),
			registry: func(t *testing.T, r *testRegistry) { r.add(t, "plain", factoryOf(&plainFilter{name: "plain"})) },
			want:     []string{`plugin "plain" is enabled at score but does not implement ScorePlugin`, `plugin "plain" is enabled at reserve but does not implement ReservePlugin`},
		},
		{
			name:     "queue sort plugin lacks QueueSortPlugin",
			spec:     baseSpec(map[ExtensionPoint]PluginSet{QueueSortPoint: {{Name: "plain"}}}),
			registry: func(t *testing.T, r *testRegistry) { r.add(t, "plain", factoryOf(&plainFilter{name: "plain"})) },
			want:     []string{`plugin "plain" is enabled at queueSort but does not implement QueueSortPlugin`},
		},
		{
			name:     "every point checks its interface",
			spec:     baseSpec(map[ExtensionPoint]PluginSet{PreFilterPoint: {{Name: "plain"}}, PreScorePoint: {{Name: "plain"}}, PermitPoint: {{Name: "plain"}}, BindPoint: {{Name: "plain"}}}),
			registry: func(t *testing.T, r *testRegistry) { r.add(t, "plain", factoryOf(&plainFilter{name: "plain"})) },
			want: []string{
				"at preFilter but does not implement PreFilterPlugin", "at preScore but does not implement PreScorePlugin",
				"at permit but does not implement PermitPlugin", "at bind but does not implement BindPlugin",
			},
		},
		{
			name: "negative weight",
			spec: baseSpec(map[ExtensionPoint]PluginSet{ScorePoint: {{Name: "a"}, {Name: "b", Weight: -2}}}),
			want: []string{`plugin "b" at score has weight -2; weights must be at least 1`},
		},
		{
			name: "weight overflows on its own",
			spec: baseSpec(map[ExtensionPoint]PluginSet{ScorePoint: {{Name: "a", Weight: math.MaxInt64/framework.MaxNodeScore + 1}}}),
			want: []string{`plugin "a" at score has weight 92233720368547759`, "overflow"},
		},
		{
			name: "weights overflow together",
			// Each fits alone; the sum of the maximum scores does not.
			spec: baseSpec(map[ExtensionPoint]PluginSet{ScorePoint: {{Name: "a", Weight: math.MaxInt64 / framework.MaxNodeScore}, {Name: "b"}}}),
			want: []string{`plugin "b" at score has weight 1, which makes the greatest total score overflow`},
		},
		{
			name: "weight outside score",
			spec: baseSpec(map[ExtensionPoint]PluginSet{FilterPoint: {{Name: "a", Weight: 2}}}),
			want: []string{`plugin "a" at filter has weight 2, but weights are only allowed at score`},
		},
		{
			name: "args for a plugin that is not enabled",
			spec: func() ProfileSpec {
				s := baseSpec(nil)
				s.PluginArgs = map[string]apiruntime.Object{"a": section}
				return s
			}(),
			want: []string{`args are given for plugin "a", which is not enabled at any extension point`},
		},
		{
			name: "factory error",
			spec: baseSpec(map[ExtensionPoint]PluginSet{FilterPoint: {{Name: "broken"}}}),
			registry: func(t *testing.T, r *testRegistry) {
				r.add(t, "broken", func(context.Context, apiruntime.Object, framework.Handle) (framework.Plugin, error) {
					return nil, errBoom
				})
			},
			want:   []string{`initializing plugin "broken": boom`},
			wantIs: errBoom,
		},
		{
			name: "factory panics",
			spec: baseSpec(map[ExtensionPoint]PluginSet{FilterPoint: {{Name: "panicky"}}}),
			registry: func(t *testing.T, r *testRegistry) {
				r.add(t, "panicky", func(context.Context, apiruntime.Object, framework.Handle) (framework.Plugin, error) { panic("oops") })
			},
			want: []string{`initializing plugin "panicky": factory panicked: oops`},
		},
		{
			name: "factory returns nothing",
			spec: baseSpec(map[ExtensionPoint]PluginSet{FilterPoint: {{Name: "empty"}}}),
			registry: func(t *testing.T, r *testRegistry) {
				r.add(t, "empty", func(context.Context, apiruntime.Object, framework.Handle) (framework.Plugin, error) {
					return (*fakePlugin)(nil), nil
				})
			},
			want: []string{`initializing plugin "empty": factory returned no plugin and no error`},
		},
		{
			name:     "plugin named differently from its registration",
			spec:     baseSpec(map[ExtensionPoint]PluginSet{FilterPoint: {{Name: "alias"}}}),
			registry: func(t *testing.T, r *testRegistry) { r.add(t, "alias", factoryOf(&plainFilter{name: "real"})) },
			want:     []string{`initializing plugin "alias": the factory's plugin calls itself "real"`},
		},
		{
			name: "problems are aggregated",
			spec: baseSpec(map[ExtensionPoint]PluginSet{QueueSortPoint: nil, FilterPoint: {{Name: "a", Weight: 3}}, ScorePoint: {{Name: "b", Weight: -1}}}),
			want: []string{"queueSort needs exactly one plugin", `plugin "a" at filter has weight 3`, `plugin "b" at score has weight -1`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reg := baseRegistry(t, nil, &fakePlugin{name: "a"}, &fakePlugin{name: "b"})
			if tt.registry != nil {
				tt.registry(t, reg)
			}
			f, err := NewFramework(context.Background(), reg.Registry, tt.spec, fakeHandle{})
			if err == nil {
				t.Fatalf("NewFramework succeeded with %v, want an error", f.ListPlugins())
			}
			if f != nil {
				t.Errorf("NewFramework returned a framework with its error")
			}
			msg := err.Error()
			if strings.Contains(msg, "\n") {
				t.Errorf("error spans lines: %q", msg)
			}
			if !strings.HasPrefix(msg, `building profile "`+tt.spec.SchedulerName+`": `) {
				t.Errorf("error %q does not name the profile", msg)
			}
			for _, w := range tt.want {
				if !strings.Contains(msg, w) {
					t.Errorf("error %q does not contain %q", msg, w)
				}
			}
			if tt.wantIs != nil && !errors.Is(err, tt.wantIs) {
				t.Errorf("errors.Is(%v, %v) = false", err, tt.wantIs)
			}
		})
	}
}

func TestNewFrameworkNilRegistry(t *testing.T) {
	_, err := NewFramework(context.Background(), nil, baseSpec(nil), nil)
	if err == nil || !strings.Contains(err.Error(), "no plugin registry") {
		t.Errorf("NewFramework(nil registry) error = %v", err)
	}
}

// factoryOf returns a factory of p.
func factoryOf(p framework.Plugin) framework.PluginFactory {
	return func(context.Context, apiruntime.Object, framework.Handle) (framework.Plugin, error) { return p, nil }
}

// No factory runs when the profile is malformed or names an unknown
// plugin: a typo must not leave some plugins built.
func TestNewFrameworkBuildsNothingOnBadSpec(t *testing.T) {
	for name, spec := range map[string]ProfileSpec{
		"bad shape":      baseSpec(map[ExtensionPoint]PluginSet{FilterPoint: {{Name: "a"}, {Name: "a"}}}),
		"unknown plugin": baseSpec(map[ExtensionPoint]PluginSet{FilterPoint: {{Name: "a"}, {Name: "typo"}}}),
	} {
		t.Run(name, func(t *testing.T) {
			reg := baseRegistry(t, nil, &fakePlugin{name: "a"})
			if _, err := NewFramework(context.Background(), reg.Registry, spec, nil); err == nil {
				t.Fatal("expected an error")
			}
			for _, p := range []string{"sort", "binder", "a"} {
				if n := reg.buildCount(p); n != 0 {
					t.Errorf("factory of %q ran %d times", p, n)
				}
			}
		})
	}
}

func TestNewFrameworkInstancesArgsAndWeights(t *testing.T) {
	multi := &fakePlugin{name: "multi"}
	other := &fakePlugin{name: "other"}
	reg := baseRegistry(t, nil, multi, other)
	spec := baseSpec(map[ExtensionPoint]PluginSet{
		PreFilterPoint: {{Name: "multi"}},
		FilterPoint:    {{Name: "multi"}, {Name: "other"}},
		ScorePoint:     {{Name: "multi"}, {Name: "other", Weight: 5}},
		ReservePoint:   {{Name: "multi"}},
	})
	spec.PluginArgs = map[string]apiruntime.Object{"multi": configapi.NewRawArgs("sched.yaml", []byte("value: hello\n"))}
	var handle framework.Handle
	reg.add(t, "handle-check", func(_ context.Context, _ apiruntime.Object, h framework.Handle) (framework.Plugin, error) {
		handle = h
		return &fakePlugin{name: "handle-check"}, nil
	})
	spec.Plugins[PermitPoint] = PluginSet{{Name: "handle-check"}}

	f := mustFramework(t, reg, spec)
	if n := reg.buildCount("multi"); n != 1 {
		t.Errorf("multi built %d times, want once", n)
	}
	if !multi.gotArgs || multi.args.Value != "hello" {
		t.Errorf("multi got args %v %+v, want value hello", multi.gotArgs, multi.args)
	}
	// Build a second framework from the same spec: the args section must
	// be handed out fresh, not as a reader the first build consumed.
	multi.args = fakeArgs{}
	_ = mustFramework(t, reg, spec)
	if n := reg.buildCount("multi"); n != 2 {
		t.Errorf("multi built %d times for two frameworks, want once each", n)
	}
	if multi.args.Value != "hello" {
		t.Errorf("second build: multi got args %+v, want value hello", multi.args)
	}
	if other.gotArgs {
		t.Errorf("other got a non-nil args reader without pluginConfig")
	}
	if _, ok := handle.(fakeHandle); !ok {
		t.Errorf("factory got handle %T, want the one passed to NewFramework", handle)
	}
	if _, ok := f.Handle().(fakeHandle); !ok {
		t.Errorf("Handle() = %T", f.Handle())
	}
	if f.SchedulerName() != "test-scheduler" {
		t.Errorf("SchedulerName() = %q", f.SchedulerName())
	}
	want := map[ExtensionPoint]PluginSet{
		QueueSortPoint: {{Name: "sort"}},
		PreFilterPoint: {{Name: "multi"}},
		FilterPoint:    {{Name: "multi"}, {Name: "other"}},
		ScorePoint:     {{Name: "multi", Weight: 1}, {Name: "other", Weight: 5}},
		ReservePoint:   {{Name: "multi"}},
		PermitPoint:    {{Name: "handle-check"}},
		BindPoint:      {{Name: "binder"}},
	}
	got := f.ListPlugins()
	if !reflect.DeepEqual(got, want) {
		t.Errorf("ListPlugins() = %v, want %v", got, want)
	}
	got[ScorePoint][0].Weight = 99
	if f.ListPlugins()[ScorePoint][0].Weight != 1 {
		t.Error("ListPlugins returned the framework's own slices")
	}
}

// A weight exactly at the overflow limit is accepted.
func TestNewFrameworkWeightAtLimit(t *testing.T) {
	reg := baseRegistry(t, nil, &fakePlugin{name: "a"}, &fakePlugin{name: "b"})
	limit := framework.MaxTotalScore/framework.MaxNodeScore - 1
	f := mustFramework(t, reg, baseSpec(map[ExtensionPoint]PluginSet{ScorePoint: {{Name: "a", Weight: limit}, {Name: "b"}}}))
	if w := f.ListPlugins()[ScorePoint][0].Weight; w != limit {
		t.Errorf("weight = %d, want %d", w, limit)
	}
}

func TestResolveProfile(t *testing.T) {
	defArgs := configapi.NewRawArgs("defaults", []byte("value: default\n"))
	cfgArgs := configapi.NewRawArgs("sched.yaml", []byte("value: file\n"))
	defaults := ProfileSpec{
		SchedulerName: "default-name",
		Plugins: map[ExtensionPoint]PluginSet{
			QueueSortPoint: {{Name: "sort"}},
			FilterPoint:    {{Name: "f1"}, {Name: "f2"}},
			ScorePoint:     {{Name: "s1", Weight: 2}},
			BindPoint:      {{Name: "binder"}},
		},
		PluginArgs: map[string]apiruntime.Object{"f1": defArgs, "s1": defArgs},
	}
	// The list form of an extension point: "*" disabled, the list
	// enabled.
	star := []configapi.Plugin{{Name: "*"}}
	list := func(names ...string) *configapi.PluginSet {
		l := &configapi.PluginSet{Enabled: []configapi.Plugin{}, Disabled: star}
		for _, n := range names {
			l.Enabled = append(l.Enabled, configapi.Plugin{Name: n})
		}
		return l
	}
	tests := []struct {
		name    string
		cfg     *configapi.Profile
		lines   map[string]int // the file's line of each field of cfg
		want    ProfileSpec
		wantErr []string
	}{
		{
			name: "nil profile is the defaults",
			cfg:  nil,
			want: defaults,
		},
		{
			name: "absent points keep the defaults",
			cfg:  &configapi.Profile{SchedulerName: "gpu"},
			want: ProfileSpec{SchedulerName: "gpu", Plugins: defaults.Plugins, PluginArgs: defaults.PluginArgs},
		},
		{
			name: "a listed point replaces the default list",
			cfg: &configapi.Profile{SchedulerName: "gpu", Plugins: &configapi.Plugins{
				Filter: list("f3", "f1"),
				Score:  &configapi.PluginSet{Enabled: []configapi.Plugin{{Name: "s2", Weight: 7}}, Disabled: star},
			}},
			want: ProfileSpec{SchedulerName: "gpu",
				Plugins: map[ExtensionPoint]PluginSet{
					QueueSortPoint: {{Name: "sort"}},
					FilterPoint:    {{Name: "f3"}, {Name: "f1"}},
					ScorePoint:     {{Name: "s2", Weight: 7}},
					BindPoint:      {{Name: "binder"}},
				},
				// s1 is disabled, so its default args are dropped.
				PluginArgs: map[string]apiruntime.Object{"f1": defArgs},
			},
		},
		{
			name: "an empty list means none",
			cfg:  &configapi.Profile{SchedulerName: "gpu", Plugins: &configapi.Plugins{Filter: list(), Score: list()}},
			want: ProfileSpec{SchedulerName: "gpu",
				Plugins:    map[ExtensionPoint]PluginSet{QueueSortPoint: {{Name: "sort"}}, BindPoint: {{Name: "binder"}}},
				PluginArgs: map[string]apiruntime.Object{},
			},
		},
		{
			name: "every point can be replaced",
			cfg: &configapi.Profile{SchedulerName: "gpu", Plugins: &configapi.Plugins{
				QueueSort: list("q"), PreFilter: list("pf"), Filter: list("f"), PreScore: list("ps"),
				Score: list("s"), Reserve: list("r"), Permit: list("pm"), Bind: list("b"),
			}},
			want: ProfileSpec{SchedulerName: "gpu",
				Plugins: map[ExtensionPoint]PluginSet{
					QueueSortPoint: {{Name: "q"}}, PreFilterPoint: {{Name: "pf"}}, FilterPoint: {{Name: "f"}}, PreScorePoint: {{Name: "ps"}},
					ScorePoint: {{Name: "s"}}, ReservePoint: {{Name: "r"}}, PermitPoint: {{Name: "pm"}}, BindPoint: {{Name: "b"}},
				},
				PluginArgs: map[string]apiruntime.Object{},
			},
		},
		{
			name: "pluginConfig overrides and clears default args",
			cfg: &configapi.Profile{SchedulerName: "gpu", PluginConfig: []configapi.PluginConfig{
				{Name: "f2", Args: cfgArgs},
				{Name: "f1"}, // no args: f1 gets none, not the default
			}},
			want: ProfileSpec{SchedulerName: "gpu", Plugins: defaults.Plugins,
				PluginArgs: map[string]apiruntime.Object{"f2": cfgArgs, "s1": defArgs}},
		},
		{
			name: "args for a plugin disabled by the profile",
			cfg: &configapi.Profile{SchedulerName: "gpu",
				Plugins:      &configapi.Plugins{Score: list()},
				PluginConfig: []configapi.PluginConfig{{Name: "ok"}, {Name: "s1", Args: cfgArgs}, {Name: "typo"}},
			},
			lines: map[string]int{"": 4, "pluginConfig[0]": 9, "pluginConfig[1]": 12, "pluginConfig[2]": 15},
			wantErr: []string{`profile "gpu" (line 4): `,
				`line 12: pluginConfig[1] gives args for plugin "s1", which is not enabled at any extension point (enabled: binder, f1, f2, sort)`,
				`line 15: pluginConfig[2] gives args for plugin "typo"`},
		},
		{
			name: "no plugins enabled at all",
			cfg: &configapi.Profile{SchedulerName: "gpu",
				Plugins:      &configapi.Plugins{QueueSort: list(), Filter: list(), Score: list(), Bind: list()},
				PluginConfig: []configapi.PluginConfig{{Name: "x"}},
			},
			lines:   map[string]int{"": 4, "pluginConfig[0]": 5},
			wantErr: []string{"(enabled: none)"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ResolveProfile(defaults, tt.cfg, func(field string) int { return tt.lines[field] })
			if len(tt.wantErr) > 0 {
				if err == nil {
					t.Fatalf("ResolveProfile = %+v, want an error", got)
				}
				for _, w := range tt.wantErr {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error %q does not contain %q", err, w)
					}
				}
				return
			}
			if err != nil {
				t.Fatalf("ResolveProfile: %v", err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("ResolveProfile =\n%+v\nwant\n%+v", got, tt.want)
			}
			// The result shares nothing with the defaults.
			for p := range got.Plugins {
				if len(got.Plugins[p]) > 0 && len(defaults.Plugins[p]) > 0 && &got.Plugins[p][0] == &defaults.Plugins[p][0] {
					t.Errorf("result shares the defaults' %s slice", p)
				}
			}
			got.PluginArgs["new"] = nil
			if _, ok := defaults.PluginArgs["new"]; ok {
				t.Error("result shares the defaults' args map")
			}
		})
	}
	if len(defaults.Plugins[FilterPoint]) != 2 || len(defaults.PluginArgs) != 2 {
		t.Errorf("ResolveProfile changed the defaults: %+v", defaults)
	}
}

// End to end: a profile from a configuration file, merged over defaults,
// builds a framework whose plugin decodes its args with the file's line
// numbers.
func TestProfileFromFile(t *testing.T) {
	const file = `apiVersion: batch-scheduler.io/v1alpha1
kind: SchedulerConfiguration
profiles:
- schedulerName: gpu
  plugins:
    score:
    - name: a
      weight: 4
  pluginConfig:
  - name: a
    args:
      value: from-file
`
	f, err := config.Parse("sched.yaml", []byte(file))
	if err != nil {
		t.Fatal(err)
	}
	defaults := baseSpec(map[ExtensionPoint]PluginSet{FilterPoint: {{Name: "a"}}})
	spec, err := ResolveProfile(defaults, &f.Profiles()[0], nil)
	if err != nil {
		t.Fatal(err)
	}
	a := &fakePlugin{name: "a"}
	fw := mustFramework(t, baseRegistry(t, nil, a), spec)
	if a.args.Value != "from-file" {
		t.Errorf("args = %+v", a.args)
	}
	if got := fw.ListPlugins()[ScorePoint]; !reflect.DeepEqual(got, PluginSet{{Name: "a", Weight: 4}}) {
		t.Errorf("score plugins = %v", got)
	}
	if fw.SchedulerName() != "gpu" {
		t.Errorf("SchedulerName() = %q", fw.SchedulerName())
	}

	// A bad field in the args is reported at its line in the file.
	bad := strings.Replace(file, "value: from-file", "valeu: from-file", 1)
	f, err = config.Parse("sched.yaml", []byte(bad))
	if err != nil {
		t.Fatal(err)
	}
	spec, err = ResolveProfile(defaults, &f.Profiles()[0], nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = NewFramework(context.Background(), baseRegistry(t, nil, &fakePlugin{name: "a"}).Registry, spec, nil)
	for _, w := range []string{`building profile "gpu"`, `initializing plugin "a"`, "sched.yaml: line 12", "valeu"} {
		if err == nil || !strings.Contains(err.Error(), w) {
			t.Errorf("error %v does not contain %q", err, w)
		}
	}
}

func TestExtensionPoints(t *testing.T) {
	want := []ExtensionPoint{"queueSort", "preFilter", "filter", "preScore", "score", "reserve", "permit", "postFilter", "bind"}
	if !reflect.DeepEqual(extensionPoints, want) {
		t.Errorf("extension points = %v, want %v", extensionPoints, want)
	}
}

func TestEventsToRegister(t *testing.T) {
	podDelete := framework.EventAssignedPodDelete
	nodeAdd := framework.EventNodeAdd
	pv := framework.ClusterEvent{Resource: framework.PersistentVolume, ActionType: framework.Add}
	tests := []struct {
		name          string
		plugins       []framework.Plugin
		points        map[ExtensionPoint]PluginSet
		wantEvents    []string
		wantResources []framework.EventResource
	}{
		{
			name: "every plugin registers events",
			plugins: []framework.Plugin{
				&fakePlugin{name: "sort"}, &fakePlugin{name: "binder"},
				&fakePlugin{name: "a", events: []framework.ClusterEvent{nodeAdd, podDelete}},
				&fakePlugin{name: "b", events: []framework.ClusterEvent{podDelete, pv}},
			},
			points:        map[ExtensionPoint]PluginSet{FilterPoint: {{Name: "a"}, {Name: "b"}}, ReservePoint: {{Name: "a"}}},
			wantEvents:    []string{"a:" + nodeAdd.String(), "a:" + podDelete.String(), "b:" + podDelete.String(), "b:" + pv.String()},
			wantResources: []framework.EventResource{framework.Node, framework.PersistentVolume, framework.Pod},
		},
		{
			name: "a plugin without EnqueueExtensions needs everything",
			plugins: []framework.Plugin{
				&fakePlugin{name: "sort"}, &fakePlugin{name: "binder"},
				&fakePlugin{name: "a", events: []framework.ClusterEvent{nodeAdd}},
				&plainFilter{name: "plain"},
			},
			points:     map[ExtensionPoint]PluginSet{FilterPoint: {{Name: "a"}, {Name: "plain"}}},
			wantEvents: []string{"a:" + nodeAdd.String(), "plain:*/All"},
			// WildCard, and the resources named, for the opt-in ones.
			wantResources: []framework.EventResource{framework.WildCard, framework.Node},
		},
		{
			name: "registered plugins that are not enabled do not count",
			plugins: []framework.Plugin{
				&fakePlugin{name: "sort"}, &fakePlugin{name: "binder"},
				&plainFilter{name: "plain"},
			},
			wantEvents:    nil,
			wantResources: nil,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := mustFramework(t, newTestRegistry(t, tt.plugins...), baseSpec(tt.points))
			if got := eventNames(f.EventsToRegister()); !reflect.DeepEqual(got, tt.wantEvents) {
				t.Errorf("EventsToRegister() = %v, want %v", got, tt.wantEvents)
			}
			if got := f.ResourcesNeeded(); !reflect.DeepEqual(got, tt.wantResources) {
				t.Errorf("ResourcesNeeded() = %v, want %v", got, tt.wantResources)
			}
		})
	}
}

func TestQueueSortFunc(t *testing.T) {
	// Reverse alphabetical by job name: the opposite of DefaultLess's
	// tie-break, so a framework that ignored the plugin would fail.
	sorter := &fakePlugin{name: "sort", less: func(a, b *framework.QueuedJob) bool { return a.ID.Name > b.ID.Name }}
	f := mustFramework(t, newTestRegistry(t, sorter, &fakePlugin{name: "binder"}), baseSpec(nil))
	a := &framework.QueuedJob{ID: framework.JobID{Namespace: "ns", Name: "a"}}
	b := &framework.QueuedJob{ID: framework.JobID{Namespace: "ns", Name: "b"}}
	less := f.QueueSortFunc()
	if less(a, b) || !less(b, a) {
		t.Errorf("QueueSortFunc does not use the plugin's Less: less(a,b)=%v less(b,a)=%v", less(a, b), less(b, a))
	}
}
