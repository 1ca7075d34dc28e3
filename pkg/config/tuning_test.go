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
	"reflect"
	"strings"
	"testing"
	"time"

	configapi "github.com/batch-scheduler/batch-scheduler/pkg/apis/config"
)

func TestTuning(t *testing.T) {
	header := "apiVersion: batch-scheduler.io/v1alpha1\nkind: SchedulerConfiguration\n"
	f, err := Parse("x.yaml", []byte(header+"parallelism: 8\npodInitialBackoffSeconds: 2\npodMaxBackoffSeconds: 30\npercentageOfNodesToScore: 100\n"))
	if err != nil {
		t.Fatal(err)
	}
	if want := (Tuning{Parallelism: 8, InitialBackoff: 2 * time.Second, MaxBackoff: 30 * time.Second, PercentageOfNodesToScore: 100}); !reflect.DeepEqual(f.Tuning, want) {
		t.Errorf("Tuning = %+v, want %+v", f.Tuning, want)
	}
	f, err = Parse("x.yaml", []byte(header))
	// Left out, the settings take the API's defaults.
	if want := (Tuning{Parallelism: 16, InitialBackoff: time.Second, MaxBackoff: 10 * time.Second}); err != nil || !reflect.DeepEqual(f.Tuning, want) {
		t.Errorf("no tuning: %+v, %v; want %+v", f.Tuning, err, want)
	}
	// A backoff given alone is checked against the other's default.
	if _, err := Parse("x.yaml", []byte(header+"podInitialBackoffSeconds: 30\n")); err == nil || !strings.Contains(err.Error(), "podMaxBackoffSeconds: Invalid value: 10: must not be below podInitialBackoffSeconds") ||
		!strings.HasSuffix(err.Error(), "(the file leaves it out: that is its default)") {
		t.Errorf("initial backoff above the default maximum: %v", err)
	}

	for _, tt := range []struct{ in, want string }{
		{"parallelism: 0\n", "line 3: parallelism: Invalid value: 0: must be between 1 and 1024"},
		{"parallelism: 5000\n", "line 3: parallelism: Invalid value: 5000: must be between 1 and 1024"},
		{"parallelism: many\n", "line 3"},
		{"podInitialBackoffSeconds: 0\n", "line 3: podInitialBackoffSeconds: Invalid value: 0: must be between 1 and 86400"},
		{"podMaxBackoffSeconds: -1\n", "line 3: podMaxBackoffSeconds: Invalid value: -1: must be between 1 and 86400"},
		{"podInitialBackoffSeconds: 20\npodMaxBackoffSeconds: 10\n", "line 4: podMaxBackoffSeconds: Invalid value: 10: must not be below podInitialBackoffSeconds"},
		{"percentageOfNodesToScore: 150\n", "line 3: percentageOfNodesToScore: Invalid value: 150: must be between 0 and 100"},
		{"percentageOfNodesToScore: -1\n", "line 3: percentageOfNodesToScore: Invalid value: -1: must be between 0 and 100"},
		{"clientConnection: {qps: 50}\n", "line 3: clientConnection is a kube-scheduler setting this file does not take: use --kubeconfig, --kube-api-qps and --kube-api-burst"},
		{"extenders: []\nleaderElection: {}\n", "line 3: extenders is a kube-scheduler setting this file does not take: scheduler extenders are not supported; line 4: leaderElection"},
		{"otherThing: 1\n", "line 3: field otherThing not found"},
	} {
		_, err := Parse("x.yaml", []byte(header+tt.in))
		if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.HasPrefix(err.Error(), "x.yaml: ") {
			t.Errorf("Parse(%q) = %v, want an error containing %q", tt.in, err, tt.want)
		}
	}
}

// A kube-scheduler configuration file is read as it is, as far as it
// holds what this scheduler has: the header, the tuning, the profiles
// (enabled/disabled) and plugin args with their apiVersion and kind.
func TestKubeSchedulerConfiguration(t *testing.T) {
	const file = `apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
parallelism: 4
profiles:
- schedulerName: batch-scheduler
  plugins:
    score:
      disabled:
      - name: "*"
      enabled:
      - name: NodeResourcesFit
        weight: 2
  pluginConfig:
  - name: NodeResourcesFit
    args:
      apiVersion: kubescheduler.config.k8s.io/v1
      kind: NodeResourcesFitArgs
      scoringStrategy:
        type: MostAllocated
`
	f, err := Parse("kube.yaml", []byte(file))
	if err != nil {
		t.Fatal(err)
	}
	if f.Tuning.Parallelism != 4 || len(f.Profiles()) != 1 || f.Profiles()[0].Plugins.Get(configapi.ExtensionScore).Disabled[0].Name != "*" {
		t.Fatalf("parsed %+v", f)
	}
	// The args, with their apiVersion and kind, decode into the plugin's
	// typed args.
	args, ok := f.Profiles()[0].PluginConfig[0].Args.(*configapi.NodeResourcesFitArgs)
	if !ok || args.ScoringStrategy != configapi.MostAllocated {
		t.Errorf("args with their type meta decode to %+v", f.Profiles()[0].PluginConfig[0].Args)
	}
	// A bad field after the type meta is reported at its line.
	bad := strings.Replace(file, "type: MostAllocated", "typ: MostAllocated", 1)
	_, err = Parse("kube.yaml", []byte(bad))
	if err == nil || !strings.Contains(err.Error(), "kube.yaml: line 19: field typ not found") {
		t.Errorf("bad field: %v, want it at kube.yaml line 19", err)
	}
	// The kind must be the plugin's, the version kube-scheduler's, and
	// each on its own line.
	for _, tt := range []struct{ args, want string }{
		{"kind: TaintTolerationArgs\n", `line 1: kind is "TaintTolerationArgs", want "NodeResourcesFitArgs" (or leave it out)`},
		{"apiVersion: kubescheduler.config.k8s.io/v1beta3\n", `line 1: apiVersion is "kubescheduler.config.k8s.io/v1beta3", want "kubescheduler.config.k8s.io/v1"`},
		{"{kind: NodeResourcesFitArgs, scoringStrategy: {type: MostAllocated}}\n", "line 1: write kind on a line of its own, or leave it out"},
	} {
		_, err := WithoutTypeMeta(NewSection("a.yaml", []byte(tt.args)), "NodeResourcesFitArgs")
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("WithoutTypeMeta(%q) = %v, want %q", tt.args, err, tt.want)
		}
	}
	if _, err := Parse("k.yaml", []byte("apiVersion: kubescheduler.config.k8s.io/v1\nkind: SchedulerConfiguration\n")); err == nil ||
		!strings.Contains(err.Error(), `kind is "SchedulerConfiguration", want "KubeSchedulerConfiguration"`) {
		t.Errorf("mixed header: %v", err)
	}
}

// percentageOfNodesToScore, top-level and per profile (kube-scheduler's
// override), reaches the Tuning.
func TestPercentageOfNodesToScore(t *testing.T) {
	header := "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\npercentageOfNodesToScore: 20\nprofiles:\n- schedulerName: a\n"
	f, err := Parse("x.yaml", []byte(header+"  percentageOfNodesToScore: 50\n- schedulerName: b\n"))
	if err != nil {
		t.Fatal(err)
	}
	if f.Tuning.PercentageOfNodesToScore != 20 || !reflect.DeepEqual(f.Tuning.ProfilePercentageOfNodesToScore, map[string]int{"a": 50}) {
		t.Errorf("Tuning = %+v, want 20 and a: 50", f.Tuning)
	}
	_, err = Parse("x.yaml", []byte(header+"  percentageOfNodesToScore: 101\n"))
	if want := "x.yaml: line 6: profiles[0].percentageOfNodesToScore: Invalid value: 101: must be between 0 and 100"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("101: %v, want %q", err, want)
	}
}

// tenantQueueOrder names the policy that orders jobs across tenant
// queues; its form is checked here, whether it is registered when the
// cache is built.
func TestTenantQueueOrder(t *testing.T) {
	header := "apiVersion: batch-scheduler.io/v1alpha1\nkind: SchedulerConfiguration\n"
	f, err := Parse("x.yaml", []byte(header+"tenantQueueOrder: Unranked\n"))
	if err != nil || f.Tuning.TenantQueueOrder != "Unranked" {
		t.Fatalf("tenantQueueOrder: Unranked: %+v, %v; want the policy's name", f, err)
	}
	if _, err := Parse("x.yaml", []byte(header+"tenantQueueOrder: not a name\n")); err == nil ||
		!strings.Contains(err.Error(), "line 3: tenantQueueOrder: Invalid value: \"not a name\"") {
		t.Errorf("a tenantQueueOrder that is no name: %v", err)
	}
}
