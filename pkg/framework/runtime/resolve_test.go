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
	"reflect"
	"testing"

	"github.com/batch-scheduler/batch-scheduler/pkg/config"
)

// The enabled/disabled form of kube-scheduler's profiles merges with the
// default plugins as kube-scheduler merges them.
func TestResolveProfileEnabledDisabled(t *testing.T) {
	defaults := baseSpec(map[ExtensionPoint]PluginSet{
		FilterPoint: {{Name: "a"}, {Name: "b"}, {Name: "c"}},
		ScorePoint:  {{Name: "a", Weight: 1}, {Name: "b", Weight: 2}},
	})
	tests := []struct {
		name   string
		points string // the plugins: mapping, indented under it
		want   map[ExtensionPoint]PluginSet
	}{
		{"disable one", "    filter:\n      disabled: [{name: b}]\n",
			map[ExtensionPoint]PluginSet{FilterPoint: {{Name: "a"}, {Name: "c"}}}},
		{"enable a new one after the defaults", "    filter:\n      enabled: [{name: d}]\n",
			map[ExtensionPoint]PluginSet{FilterPoint: {{Name: "a"}, {Name: "b"}, {Name: "c"}, {Name: "d"}}}},
		{"disable all, enable in a new order", "    filter:\n      disabled: [{name: '*'}]\n      enabled: [{name: c}, {name: a}]\n",
			map[ExtensionPoint]PluginSet{FilterPoint: {{Name: "c"}, {Name: "a"}}}},
		{"a default re-enabled keeps its place and takes the new weight", "    score:\n      enabled: [{name: x, weight: 5}, {name: a, weight: 7}]\n",
			map[ExtensionPoint]PluginSet{ScorePoint: {{Name: "a", Weight: 7}, {Name: "b", Weight: 2}, {Name: "x", Weight: 5}}}},
		{"disabled and enabled again goes last", "    filter:\n      disabled: [{name: a}]\n      enabled: [{name: a}]\n",
			map[ExtensionPoint]PluginSet{FilterPoint: {{Name: "b"}, {Name: "c"}, {Name: "a"}}}},
		{"the list form still replaces", "    filter: [{name: c}]\n",
			map[ExtensionPoint]PluginSet{FilterPoint: {{Name: "c"}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := config.Parse("sched.yaml", []byte("apiVersion: batch-scheduler.io/v1alpha1\nkind: SchedulerConfiguration\nprofiles:\n- schedulerName: p\n  plugins:\n"+tt.points))
			if err != nil {
				t.Fatal(err)
			}
			spec, err := ResolveProfile(defaults, &f.Profiles()[0], nil)
			if err != nil {
				t.Fatal(err)
			}
			for point, want := range tt.want {
				if got := spec.Plugins[point]; !reflect.DeepEqual(got, want) {
					t.Errorf("%s = %v, want %v", point, got, want)
				}
			}
			// Points the file leaves alone keep the defaults.
			for point, set := range defaults.Plugins {
				if _, changed := tt.want[point]; !changed && !reflect.DeepEqual(spec.Plugins[point], set) {
					t.Errorf("%s = %v, want the defaults %v", point, spec.Plugins[point], set)
				}
			}
		})
	}
}
