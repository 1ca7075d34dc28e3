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

package scheme

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/json"
	"k8s.io/utils/ptr"

	"github.com/batch-scheduler/batch-scheduler/pkg/apis/config"
	"github.com/batch-scheduler/batch-scheduler/pkg/apis/config/v1alpha1"
)

func decode(t *testing.T, doc string) *config.SchedulerConfiguration {
	t.Helper()
	obj, _, err := Codecs.UniversalDecoder().Decode([]byte(doc), nil, nil)
	if err != nil {
		t.Fatalf("decoding %q: %v", doc, err)
	}
	cfg, ok := obj.(*config.SchedulerConfiguration)
	if !ok {
		t.Fatalf("decoded a %T", obj)
	}
	return cfg
}

func TestDefaults(t *testing.T) {
	cfg := decode(t, "apiVersion: batch-scheduler.io/v1alpha1\nkind: SchedulerConfiguration\n")
	if cfg.Parallelism != v1alpha1.DefaultParallelism || cfg.PodInitialBackoffSeconds != v1alpha1.DefaultPodInitialBackoffSeconds ||
		cfg.PodMaxBackoffSeconds != v1alpha1.DefaultPodMaxBackoffSeconds || cfg.PercentageOfNodesToScore != nil {
		t.Errorf("defaults: %+v", cfg)
	}
	cfg = decode(t, "apiVersion: batch-scheduler.io/v1alpha1\nkind: SchedulerConfiguration\nparallelism: 4\npodMaxBackoffSeconds: 60\n")
	if cfg.Parallelism != 4 || cfg.PodInitialBackoffSeconds != 1 || cfg.PodMaxBackoffSeconds != 60 {
		t.Errorf("given values were not kept: %+v", cfg)
	}
}

// The plain list form of an extension point reads as kube-scheduler's
// form with every default disabled.
func TestPluginListForm(t *testing.T) {
	list := decode(t, `apiVersion: batch-scheduler.io/v1alpha1
kind: SchedulerConfiguration
profiles:
- schedulerName: a
  plugins:
    score:
    - name: X
      weight: 3
    filter: []
`)
	merged := decode(t, `apiVersion: batch-scheduler.io/v1alpha1
kind: SchedulerConfiguration
profiles:
- schedulerName: a
  plugins:
    score:
      enabled: [{name: X, weight: 3}]
      disabled: [{name: "*"}]
    filter:
      enabled: []
      disabled: [{name: "*"}]
`)
	if diff := cmp.Diff(merged.Profiles, list.Profiles); diff != "" {
		t.Errorf("list form differs from enabled/disabled (-merged +list):\n%s", diff)
	}
	want := &config.PluginSet{Enabled: []config.Plugin{{Name: "X", Weight: 3}}, Disabled: []config.Plugin{{Name: "*"}}}
	if diff := cmp.Diff(want, list.Profiles[0].Plugins.Score); diff != "" {
		t.Errorf("score (-want +got):\n%s", diff)
	}
}

// A kube-scheduler file decodes into the same configuration.
func TestKubeSchedulerHeader(t *testing.T) {
	body := `profiles:
- schedulerName: a
  plugins:
    score:
      disabled: [{name: TaintToleration}]
  pluginConfig:
  - name: NodeResourcesFit
    args:
      scoringStrategy: {type: MostAllocated}
percentageOfNodesToScore: 100
`
	ours := decode(t, "apiVersion: batch-scheduler.io/v1alpha1\nkind: SchedulerConfiguration\n"+body)
	kube := decode(t, "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"+body)
	if diff := cmp.Diff(ours, kube); diff != "" {
		t.Errorf("kube-scheduler header decodes differently (-ours +kube):\n%s", diff)
	}
	if ptr.Deref(kube.PercentageOfNodesToScore, 0) != 100 {
		t.Errorf("percentageOfNodesToScore = %v", kube.PercentageOfNodesToScore)
	}
}

// Decoding is strict: unknown and repeated fields are errors.
func TestStrict(t *testing.T) {
	for _, doc := range []string{
		"apiVersion: batch-scheduler.io/v1alpha1\nkind: SchedulerConfiguration\nparalelism: 4\n",
		"apiVersion: batch-scheduler.io/v1alpha1\nkind: SchedulerConfiguration\nprofiles:\n- schedulerName: a\n  plugins:\n    score: {enabled: [], disabeld: []}\n",
		"apiVersion: batch-scheduler.io/v1alpha1\nkind: SchedulerConfiguration\nparallelism: 4\nparallelism: 5\n",
	} {
		_, _, err := Codecs.UniversalDecoder().Decode([]byte(doc), nil, nil)
		if err == nil {
			t.Errorf("%q decoded without an error", doc)
		}
	}
}

// The internal version converts back to v1alpha1 and round-trips: what
// a later version needs to convert through the same hub.
func TestRoundTrip(t *testing.T) {
	in := decode(t, `apiVersion: batch-scheduler.io/v1alpha1
kind: SchedulerConfiguration
parallelism: 8
eventHandlers:
- name: default
  args: {maxEventDelay: 2s}
customInformers:
- name: vms
  resource: ExternalWorkload
  resyncPeriod: 30s
  source:
    http: {url: "http://127.0.0.1:8080/"}
profiles:
- schedulerName: a
  plugins:
    score: [{name: X, weight: 2}]
    bind: {disabled: [{name: VolumeBinding}]}
  pluginConfig:
  - name: X
    args: {k: v}
`)
	serializer := json.NewSerializerWithOptions(json.DefaultMetaFactory, Scheme, Scheme, json.SerializerOptions{Yaml: true, Strict: true})
	encoder := Codecs.EncoderForVersion(serializer, v1alpha1.SchemeGroupVersion)
	data, err := runtime.Encode(encoder, in)
	if err != nil {
		t.Fatalf("encoding: %v", err)
	}
	if !strings.Contains(string(data), "apiVersion: batch-scheduler.io/v1alpha1") || !strings.Contains(string(data), "kind: SchedulerConfiguration") {
		t.Errorf("encoded without the v1alpha1 header:\n%s", data)
	}
	if strings.Contains(string(data), "weight: 0") {
		t.Errorf("a default weight was written as 0, which the file refuses:\n%s", data)
	}
	out := decode(t, string(data))
	if diff := cmp.Diff(in, out); diff != "" {
		t.Errorf("round trip changed the configuration (-in +out):\n%s\nencoded:\n%s", diff, data)
	}
}
