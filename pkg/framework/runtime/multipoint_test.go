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
	"reflect"
	"strings"
	"testing"

	apiruntime "k8s.io/apimachinery/pkg/runtime"

	"github.com/batch-scheduler/batch-scheduler/pkg/config"
	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
)

// nameOnly implements no extension point.
type nameOnly struct{}

func (nameOnly) Name() string { return "nameOnly" }

func resolveFromFile(t *testing.T, defaults ProfileSpec, plugins string) ProfileSpec {
	t.Helper()
	f, err := config.Parse("sched.yaml", []byte("apiVersion: batch-scheduler.io/v1alpha1\nkind: SchedulerConfiguration\nprofiles:\n- schedulerName: p\n  plugins:\n"+plugins))
	if err != nil {
		t.Fatal(err)
	}
	spec, err := ResolveProfile(defaults, &f.Profiles()[0], nil)
	if err != nil {
		t.Fatal(err)
	}
	return spec
}

// kube-scheduler's multiPoint: a plugin goes to every point it
// implements, except where the profile disabled it (or replaced the
// point); an explicit entry at a point wins and goes first.
func TestMultiPoint(t *testing.T) {
	full := &fakePlugin{name: "full"} // implements every point
	reg := baseRegistry(t, nil, full, &plainFilter{name: "pf"}, &plainFilter{name: "pf2"})
	defaults := baseSpec(map[ExtensionPoint]PluginSet{FilterPoint: {{Name: "pf2"}}})
	spec := resolveFromFile(t, defaults, `    multiPoint:
      enabled: [{name: pf}, {name: full, weight: 3}]
    queueSort: {disabled: [{name: full}]}
    bind: {disabled: [{name: full}]}
    filter: {enabled: [{name: full}]}
    reserve: []
`)
	f := mustFramework(t, reg, spec)
	want := map[ExtensionPoint]PluginSet{
		QueueSortPoint:  {{Name: "sort"}},
		PreFilterPoint:  {{Name: "full"}},
		FilterPoint:     {{Name: "full"}, {Name: "pf"}, {Name: "pf2"}},
		PreScorePoint:   {{Name: "full"}},
		ScorePoint:      {{Name: "full", Weight: 3}},
		PermitPoint:     {{Name: "full"}},
		PostFilterPoint: {{Name: "full"}},
		BindPoint:       {{Name: "binder"}},
	}
	if got := f.ListPlugins(); !reflect.DeepEqual(got, want) {
		t.Errorf("ListPlugins() =\n%v\nwant\n%v", got, want)
	}
	for _, name := range []string{"full", "pf"} {
		if n := reg.buildCount(name); n != 1 {
			t.Errorf("%s built %d times, want once", name, n)
		}
	}
}

// multiPoint's disabled plugins leave every point's defaults.
func TestMultiPointDisabled(t *testing.T) {
	defaults := baseSpec(map[ExtensionPoint]PluginSet{
		FilterPoint: {{Name: "a"}, {Name: "b"}},
		ScorePoint:  {{Name: "a", Weight: 1}},
	})
	spec := resolveFromFile(t, defaults, "    multiPoint:\n      disabled: [{name: a}]\n")
	if got, want := spec.Plugins[FilterPoint], (PluginSet{{Name: "b"}}); !reflect.DeepEqual(got, want) {
		t.Errorf("filter = %v, want %v", got, want)
	}
	if got := spec.Plugins[ScorePoint]; len(got) != 0 {
		t.Errorf("score = %v, want none", got)
	}
	spec = resolveFromFile(t, defaults, "    multiPoint:\n      disabled: [{name: '*'}]\n      enabled: [{name: sort}, {name: binder}]\n")
	for point, set := range spec.Plugins {
		t.Errorf("%s = %v, want every default gone", point, set)
	}
	if got := spec.MultiPoint.Names(); !reflect.DeepEqual(got, []string{"sort", "binder"}) {
		t.Errorf("MultiPoint = %v", got)
	}
}

func TestMultiPointErrors(t *testing.T) {
	reg := baseRegistry(t, nil, &plainFilter{name: "pf"})
	reg.add(t, "nameOnly", func(context.Context, apiruntime.Object, framework.Handle) (framework.Plugin, error) {
		return nameOnly{}, nil
	})
	for _, tt := range []struct {
		name  string
		multi PluginSet
		want  string
	}{
		{"unknown plugin", PluginSet{{Name: "nope"}}, `enabled at multiPoint: unknown plugin "nope"`},
		{"twice", PluginSet{{Name: "pf"}, {Name: "pf"}}, `plugin "pf" is enabled twice at multiPoint`},
		{"no extension point", PluginSet{{Name: "nameOnly"}}, `plugin "nameOnly" is enabled at multiPoint but implements no extension point's interface`},
		// sort implements QueueSort: a second queue sort plugin.
		{"a second queue sort", PluginSet{{Name: "sort"}}, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			spec := baseSpec(nil)
			spec.MultiPoint = tt.multi
			_, err := NewFramework(context.Background(), reg.Registry, spec, fakeHandle{})
			if tt.want == "" {
				// sort is already the queue sort plugin: the explicit
				// entry wins, nothing is added twice.
				if err != nil {
					t.Fatalf("NewFramework: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("NewFramework = %v, want an error containing %q", err, tt.want)
			}
		})
	}
}

// A multiPoint plugin that is a default of a point keeps its place there,
// taking multiPoint's weight at score, as kube-scheduler's default
// multiPoint plugins do when a profile enables them again.
func TestMultiPointOverDefaults(t *testing.T) {
	reg := baseRegistry(t, nil, &fakePlugin{name: "s1"}, &fakePlugin{name: "s2"})
	defaults := baseSpec(map[ExtensionPoint]PluginSet{ScorePoint: {{Name: "s1", Weight: 1}, {Name: "s2", Weight: 2}}})
	spec := resolveFromFile(t, defaults, `    multiPoint:
      enabled: [{name: s2, weight: 5}]
    queueSort: {disabled: [{name: s2}]}
    bind: {disabled: [{name: s2}]}
`)
	f := mustFramework(t, reg, spec)
	if got, want := f.ListPlugins()[ScorePoint], (PluginSet{{Name: "s1", Weight: 1}, {Name: "s2", Weight: 5}}); !reflect.DeepEqual(got, want) {
		t.Errorf("score = %v, want %v", got, want)
	}
	if got, want := f.ListPlugins()[FilterPoint], (PluginSet{{Name: "s2"}}); !reflect.DeepEqual(got, want) {
		t.Errorf("filter = %v, want %v", got, want)
	}
}
