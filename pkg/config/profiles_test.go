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

package config

import (
	"fmt"
	"io"
	"reflect"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"

	configapi "github.com/batch-scheduler/batch-scheduler/pkg/apis/config"
)

const withProfiles = `apiVersion: batch-scheduler.io/v1alpha1
kind: SchedulerConfiguration
profiles:
- schedulerName: batch-scheduler
- schedulerName: gpu-scheduler
  plugins:
    filter: []
    score:
    - name: NodeResourcesFit
      weight: 3
    - name: GPUTopology
    bind: [{name: DefaultBinder}]
  pluginConfig:
  - name: GPUTopology
    args:
      limit: 2
  - name: GPUSpread
    args: {limit: 5}
  - name: NoArgs
`

func TestParseProfiles(t *testing.T) {
	f, err := Parse("sched.yaml", []byte(withProfiles))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	if len(f.Profiles()) != 2 {
		t.Fatalf("profiles = %+v", f.Profiles())
	}
	def := f.Profiles()[0]
	if def.SchedulerName != "batch-scheduler" || f.Line("profiles[0]") != 4 || def.Plugins != nil || def.PluginConfig != nil {
		t.Errorf("profile 0 = %+v, want only a name, on line 4", def)
	}
	gpu := f.Profiles()[1]
	if gpu.SchedulerName != "gpu-scheduler" || f.Line("profiles[1]") != 5 {
		t.Errorf("profile 1 = %q on line %d", gpu.SchedulerName, f.Line("profiles[1]"))
	}
	// Absent points are nil (defaults apply), an empty list is non-nil.
	for _, key := range []string{configapi.ExtensionQueueSort, configapi.ExtensionPreFilter, configapi.ExtensionPreScore, configapi.ExtensionReserve, configapi.ExtensionPermit} {
		if l := gpu.Plugins.Get(key); l != nil {
			t.Errorf("%s = %+v, want nil (absent)", key, l)
		}
	}
	star := []configapi.Plugin{{Name: "*"}} // a plain list replaces the defaults
	if l := gpu.Plugins.Filter; l == nil || len(l.Enabled) != 0 || !reflect.DeepEqual(l.Disabled, star) || f.Line("profiles[1].plugins.filter") != 7 {
		t.Errorf("filter = %+v, want an empty list on line 7", l)
	}
	wantScore := &configapi.PluginSet{Disabled: star, Enabled: []configapi.Plugin{
		{Name: "NodeResourcesFit", Weight: 3},
		{Name: "GPUTopology", Weight: 0},
	}}
	if !reflect.DeepEqual(gpu.Plugins.Score, wantScore) || gpu.Plugins.Get(configapi.ExtensionScore) != gpu.Plugins.Score ||
		f.Line("profiles[1].plugins.score") != 8 || f.Line("profiles[1].plugins.score.enabled[0]") != 9 || f.Line("profiles[1].plugins.score.enabled[1]") != 11 {
		t.Errorf("score = %+v, want %+v on lines 8, 9 and 11", gpu.Plugins.Score, wantScore)
	}
	if l := gpu.Plugins.Bind; l == nil || !reflect.DeepEqual(l.Enabled, []configapi.Plugin{{Name: "DefaultBinder"}}) || f.Line("profiles[1].plugins.bind.enabled[0]") != 12 {
		t.Errorf("bind = %+v", l)
	}
	if gpu.Plugins.Get("unknown") != nil {
		t.Error("Get(unknown) is not nil")
	}
	if len(gpu.PluginConfig) != 3 {
		t.Fatalf("pluginConfig = %+v", gpu.PluginConfig)
	}
	for i, want := range []struct {
		name  string
		line  int
		limit int
	}{{"GPUTopology", 14, 2}, {"GPUSpread", 17, 5}} {
		pc := gpu.PluginConfig[i]
		var a handlerArgs
		line := f.Line(fmt.Sprintf("profiles[1].pluginConfig[%d]", i))
		if pc.Name != want.name || line != want.line {
			t.Errorf("pluginConfig[%d] = %q on line %d, want %q on line %d", i, pc.Name, line, want.name, want.line)
		}
		if err := DecodeStrict(rawArgs(t, pc.Args), &a); err != nil || a.Limit != want.limit {
			t.Errorf("pluginConfig[%d] args = %+v, %v", i, a, err)
		}
	}
	if pc := gpu.PluginConfig[2]; pc.Name != "NoArgs" || pc.Args != nil {
		t.Errorf("pluginConfig[2] = %+v, want no args", pc)
	}
}

// rawArgs returns a reader over the raw args of a plugin the API has no
// type for.
func rawArgs(t *testing.T, args runtime.Object) io.Reader {
	t.Helper()
	raw, ok := args.(*configapi.RawArgs)
	if !ok {
		t.Fatalf("args are %T, want *RawArgs", args)
	}
	return raw.Reader()
}

// A plugin's strict decoding of its args reports the file and the line in
// the file, for block and flow style args.
func TestPluginArgsKeepFileLines(t *testing.T) {
	in := strings.Replace(withProfiles, "      limit: 2\n", "      limit: 2\n      limt: 3\n", 1)
	in = strings.Replace(in, "args: {limit: 5}", "args: {limit: five}", 1)
	f, err := Parse("sched.yaml", []byte(in))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	var a handlerArgs
	err = DecodeStrict(rawArgs(t, f.Profiles()[1].PluginConfig[0].Args), &a)
	if err == nil || !strings.Contains(err.Error(), "sched.yaml: line 17") || !strings.Contains(err.Error(), "limt") {
		t.Errorf("block args error = %v, want one naming limt on line 17 of sched.yaml", err)
	}
	err = DecodeStrict(rawArgs(t, f.Profiles()[1].PluginConfig[1].Args), &a)
	if err == nil || !strings.Contains(err.Error(), "sched.yaml: line 19") {
		t.Errorf("flow args error = %v, want one on line 19 of sched.yaml", err)
	}
}

func TestParseProfilesEmpty(t *testing.T) {
	header := "apiVersion: batch-scheduler.io/v1alpha1\nkind: SchedulerConfiguration\n"
	for _, in := range []string{header, header + "profiles:\n", header + "profiles: []\n"} {
		f, err := Parse("x.yaml", []byte(in))
		if err != nil || f.Profiles() != nil {
			t.Errorf("Parse(%q) = %+v, %v; want no profiles", in, f, err)
		}
	}
	// Null optional fields mean absent; anchors and aliases work.
	in := header + "profiles:\n- schedulerName: a\n  plugins:\n  pluginConfig:\n" +
		"- schedulerName: b\n  plugins:\n    filter: &f [{name: X}]\n    preFilter: *f\n  pluginConfig: [{name: X, args: }]\n"
	f, err := Parse("x.yaml", []byte(in))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	if p := f.Profiles()[0]; p.Plugins != nil || p.PluginConfig != nil {
		t.Errorf("profile a = %+v", p)
	}
	p := f.Profiles()[1]
	if p.Plugins.PreFilter == nil || len(p.Plugins.PreFilter.Enabled) != 1 || p.Plugins.PreFilter.Enabled[0].Name != "X" {
		t.Errorf("aliased preFilter = %+v", p.Plugins.PreFilter)
	}
	if len(p.PluginConfig) != 1 || p.PluginConfig[0].Args != nil {
		t.Errorf("pluginConfig = %+v", p.PluginConfig)
	}
}

func TestParseProfileErrors(t *testing.T) {
	header := "apiVersion: batch-scheduler.io/v1alpha1\nkind: SchedulerConfiguration\nprofiles:\n"
	tests := []struct {
		name string
		in   string // after header; line 4 is the first line here
		want []string
	}{
		{"not a list", "  a: b\n", []string{"line 4", "profiles must be a list"}},
		{"entry not a mapping", "- 4\n", []string{"line 4", "profiles[0] must be a mapping"}},
		{"unknown profile field", "- schedulerName: a\n  plugin: {}\n", []string{"line 5", `profiles[0] (a): unknown field "plugin" (known: schedulerName, plugins, pluginConfig, percentageOfNodesToScore)`}},
		{"repeated field", "- schedulerName: a\n  schedulerName: b\n", []string{"line 5", "profiles[0] (a).schedulerName is given twice, first on line 4"}},
		{"missing schedulerName", "- plugins: {}\n", []string{"line 4", "profiles[0].schedulerName: Required value"}},
		{"null schedulerName", "- schedulerName:\n", []string{"line 4", "profiles[0].schedulerName is required"}},
		{"empty schedulerName", "- schedulerName: ''\n", []string{"line 4", "profiles[0].schedulerName: Required value"}},
		{"schedulerName not a string", "- schedulerName: [a]\n", []string{"line 4", "profiles[0].schedulerName must be a string"}},
		{"schedulerName not DNS", "- schedulerName: Big_Name\n", []string{"line 4", `profiles[0].schedulerName: Invalid value: "Big_Name": a lowercase RFC 1123 subdomain`}},
		{"duplicate schedulerName", "- schedulerName: a\n- schedulerName: b\n- schedulerName: a\n", []string{"line 6", `profiles[2].schedulerName: Duplicate value: "a" (first on line 4)`}},
		{"plugins not a mapping", "- schedulerName: a\n  plugins: [filter]\n", []string{"line 5", "profiles[0] (a).plugins must be a mapping"}},
		{"unknown extension point", "- schedulerName: a\n  plugins:\n    postFilters: []\n", []string{"line 6", `profiles[0] (a).plugins: unknown field "postFilters" (known: queueSort, preFilter, filter, preScore, score, reserve, permit, postFilter, bind, multiPoint, postBind, preBind, preEnqueue)`}},
		{"kube-scheduler's postBind", "- schedulerName: a\n  plugins:\n    postBind: {enabled: [{name: X}]}\n", []string{"line 6", "profiles[0] (a).plugins.postBind is an extension point of kube-scheduler that this scheduler does not have: PostBind plugins are not supported"}},
		{"multiPoint as a list", "- schedulerName: a\n  plugins:\n    multiPoint: [{name: X}]\n", []string{"line 6", "profiles[0] (a).plugins.multiPoint must be a mapping of enabled and disabled plugins, as in kube-scheduler"}},
		{"multiPoint with a plugin twice", "- schedulerName: a\n  plugins:\n    multiPoint:\n      enabled: [{name: X}, {name: X}]\n", []string{"line 7", `profiles[0].plugins.multiPoint.enabled[1].name: Duplicate value: "X"`}},
		{"enabled/disabled unknown key", "- schedulerName: a\n  plugins:\n    filter: {enable: [{name: X}]}\n", []string{"line 6", `profiles[0] (a).plugins.filter: unknown field "enable" (known: enabled, disabled)`}},
		{"enabled not a list", "- schedulerName: a\n  plugins:\n    filter:\n      enabled: {name: X}\n", []string{"line 7", "profiles[0] (a).plugins.filter.enabled must be a list of {name, weight}"}},
		{"star enabled", "- schedulerName: a\n  plugins:\n    filter:\n      enabled: [{name: '*'}]\n", []string{"line 7", `profiles[0].plugins.filter.enabled[0].name: Invalid value: "*": can only be disabled`}},
		{"disabled with a weight", "- schedulerName: a\n  plugins:\n    score:\n      disabled: [{name: X, weight: 2}]\n", []string{"line 7", "profiles[0].plugins.score.disabled[0].weight: Forbidden: a disabled plugin has no weight"}},
		{"disabled duplicate", "- schedulerName: a\n  plugins:\n    filter:\n      disabled:\n      - name: X\n      - name: X\n", []string{"line 9", `profiles[0].plugins.filter.disabled[1].name: Duplicate value: "X" (first on line 8)`}},
		{"null extension point", "- schedulerName: a\n  plugins:\n    filter:\n", []string{"line 6", "profiles[0] (a).plugins.filter must be a list (write [] for no plugins, or leave filter out for the default ones)"}},
		{"extension point neither a list nor enabled/disabled", "- schedulerName: a\n  plugins:\n    filter: {name: X}\n", []string{"line 6", "profiles[0] (a).plugins.filter: unknown field \"name\" (known: enabled, disabled)"}},
		{"extension point a scalar", "- schedulerName: a\n  plugins:\n    filter: X\n", []string{"line 6", "profiles[0] (a).plugins.filter must be a list of {name, weight}, or a mapping of enabled and disabled plugins"}},
		{"plugin not a mapping", "- schedulerName: a\n  plugins:\n    filter: [X]\n", []string{"line 6", "profiles[0] (a).plugins.filter[0] must be a mapping"}},
		{"unknown plugin field", "- schedulerName: a\n  plugins:\n    filter:\n    - name: X\n      wieght: 2\n", []string{"line 8", `profiles[0] (a).plugins.filter[0]: unknown field "wieght" (known: name, weight)`}},
		{"plugin without name", "- schedulerName: a\n  plugins:\n    score:\n    - weight: 2\n", []string{"line 7", "profiles[0].plugins.score.enabled[0].name: Required value"}},
		{"plugin with empty name", "- schedulerName: a\n  plugins:\n    score:\n    - name: ''\n", []string{"line 7", "profiles[0].plugins.score.enabled[0].name: Required value"}},
		{"duplicate plugin in a point", "- schedulerName: a\n  plugins:\n    score:\n    - name: X\n    - name: Y\n    - name: X\n", []string{"line 9", `profiles[0].plugins.score.enabled[2].name: Duplicate value: "X" (first on line 7)`}},
		{"weight outside score", "- schedulerName: a\n  plugins:\n    filter:\n    - name: X\n      weight: 2\n", []string{"line 8", "profiles[0].plugins.filter.enabled[0].weight: Forbidden: a weight is only allowed under score"}},
		{"weight not a number", "- schedulerName: a\n  plugins:\n    score:\n    - name: X\n      weight: heavy\n", []string{"line 8", `profiles[0] (a).plugins.score[0].weight must be an integer, got "heavy"`}},
		{"weight a float", "- schedulerName: a\n  plugins:\n    score:\n    - {name: X, weight: 1.5}\n", []string{"line 7", `profiles[0] (a).plugins.score[0].weight must be an integer, got "1.5"`}},
		{"weight a quoted number", "- schedulerName: a\n  plugins:\n    score:\n    - {name: X, weight: '2'}\n", []string{"line 7", `score[0].weight must be an integer, got "2"`}},
		{"weight too big", "- schedulerName: a\n  plugins:\n    score:\n    - {name: X, weight: 9223372036854775808}\n", []string{"line 7", `weight must be an integer, got "9223372036854775808"`}},
		{"weight above int32", "- schedulerName: a\n  plugins:\n    score:\n    - {name: X, weight: 3000000000}\n", []string{"line 7", "weight must be between 1 and 2147483647, got 3000000000"}},
		{"weight not a scalar", "- schedulerName: a\n  plugins:\n    score:\n    - {name: X, weight: [1]}\n", []string{"line 7", "profiles[0] (a).plugins.score[0].weight must be an integer"}},
		{"zero weight", "- schedulerName: a\n  plugins:\n    score:\n    - {name: X, weight: 0}\n", []string{"line 7", "profiles[0] (a).plugins.score[0].weight must be between 1 and 2147483647, got 0"}},
		{"negative weight", "- schedulerName: a\n  plugins:\n    score:\n    - {name: X, weight: -3}\n", []string{"line 7", "weight must be between 1 and 2147483647, got -3"}},
		{"pluginConfig not a list", "- schedulerName: a\n  pluginConfig: {name: X}\n", []string{"line 5", "profiles[0] (a).pluginConfig must be a list of {name, args}"}},
		{"pluginConfig entry not a mapping", "- schedulerName: a\n  pluginConfig: [X]\n", []string{"line 5", "profiles[0] (a).pluginConfig[0] must be a mapping"}},
		{"pluginConfig unknown field", "- schedulerName: a\n  pluginConfig:\n  - name: X\n    arg: {}\n", []string{"line 7", `profiles[0] (a).pluginConfig[0]: unknown field "arg" (known: name, args)`}},
		{"pluginConfig without name", "- schedulerName: a\n  pluginConfig:\n  - args: {}\n", []string{"line 6", "profiles[0].pluginConfig[0].name: Required value"}},
		{"pluginConfig empty name", "- schedulerName: a\n  pluginConfig:\n  - name: ''\n", []string{"line 6", "profiles[0].pluginConfig[0].name: Required value"}},
		{"pluginConfig duplicate", "- schedulerName: a\n  pluginConfig:\n  - name: X\n  - name: X\n", []string{"line 7", `profiles[0].pluginConfig[1].name: Duplicate value: "X" (first on line 6)`}},
		{"pluginConfig args not a mapping", "- schedulerName: a\n  pluginConfig:\n  - name: X\n    args: [1]\n", []string{"line 7", "profiles[0] (a).pluginConfig[0].args must be a mapping"}},
		{"several problems at once", "- schedulerName: a\n  plugins:\n    bind:\n- schedulerName: b\n  bogus: 1\n", []string{"line 6", "plugins.bind must be a list", "line 8", "profiles[1] (b): unknown field \"bogus\""}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("x.yaml", []byte(header+tt.in))
			if err == nil {
				t.Fatal("expected an error")
			}
			msg := err.Error()
			if !strings.HasPrefix(msg, "x.yaml: ") {
				t.Errorf("error %q does not start with the file name", msg)
			}
			if strings.Contains(msg, "\n") {
				t.Errorf("error spans lines: %q", msg)
			}
			for _, w := range tt.want {
				if !strings.Contains(msg, w) {
					t.Errorf("error %q does not contain %q", msg, w)
				}
			}
		})
	}
}
