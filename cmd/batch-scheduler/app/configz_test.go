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

package app

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/batch-scheduler/batch-scheduler/pkg/config"
	frameworkruntime "github.com/batch-scheduler/batch-scheduler/pkg/framework/runtime"
	"github.com/batch-scheduler/batch-scheduler/pkg/plugins"
)

// /configz shows the flags' settings, every profile's plugins as
// resolved (the file's changes to the default profile applied), the
// file's plugin, handler and source args, and hides inline credentials
// (of a vendor's source: the http source's typed settings have no inline
// credential).
func TestConfigz(t *testing.T) {
	const file = `apiVersion: batch-scheduler.io/v1alpha1
kind: SchedulerConfiguration
parallelism: 8
podMaxBackoffSeconds: 30
percentageOfNodesToScore: 20
eventHandlers:
- name: default
  args:
    dynamicResources: []
customInformers:
- name: vms
  resource: ExternalWorkload
  source:
    acme:
      url: http://127.0.0.1:1/vms
      bearerTokenFile: /var/run/token
      token: s3cr3t
profiles:
- schedulerName: batch-scheduler
  percentageOfNodesToScore: 40
  plugins:
    score:
    - name: NodeResourcesFit
      weight: 3
  pluginConfig:
  - name: NodeResourcesFit
    args:
      scoringStrategy: MostAllocated
`
	cfg, err := config.Parse("config.yaml", []byte(file))
	if err != nil {
		t.Fatal(err)
	}
	o := NewOptions()
	o.ConfigPath = "config.yaml"
	profiles, _, err := buildProfiles(t.Context(), o.SchedulerNames, cfg, plugins.NewInTreeRegistry(), testHandle())
	if err != nil {
		t.Fatal(err)
	}
	c, err := newEffectiveConfig(o, cfg, profiles)
	if err != nil {
		t.Fatal(err)
	}
	h, err := configzHandler(c)
	if err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, ConfigzPath, nil))
	body, _ := io.ReadAll(rec.Body)
	if rec.Code != http.StatusOK || rec.Header().Get("Content-Type") != "application/json" {
		t.Fatalf("GET /configz = %d %s", rec.Code, rec.Header().Get("Content-Type"))
	}
	if strings.Contains(string(body), "s3cr3t") {
		t.Errorf("/configz shows an inline token:\n%s", body)
	}
	var got struct {
		Config effectiveConfig `json:"componentconfig"`
	}
	if err := json.Unmarshal(body, &got); err != nil {
		t.Fatalf("decoding /configz: %v\n%s", err, body)
	}
	e := got.Config
	// The raw args come back indented.
	compact := func(raw json.RawMessage) string {
		var b bytes.Buffer
		if err := json.Compact(&b, raw); err != nil {
			t.Fatalf("compacting %s: %v", raw, err)
		}
		return b.String()
	}
	if e.EventHandler != "default" || e.ConfigPath != "config.yaml" || !e.LeaderElection.Enabled || e.LeaderElection.Lease != "kube-system/batch-scheduler" {
		t.Errorf("flags: %+v", e)
	}
	if e.Parallelism != 8 || e.PodInitialBackoffSeconds != 1 || e.PodMaxBackoffSeconds != 30 {
		t.Errorf("tuning: parallelism %d, backoffs %d..%d s; want 8, 1..30 (the default initial backoff)", e.Parallelism, e.PodInitialBackoffSeconds, e.PodMaxBackoffSeconds)
	}
	if len(e.Profiles) != 1 || e.Profiles[0].SchedulerName != "batch-scheduler" {
		t.Fatalf("profiles = %+v", e.Profiles)
	}
	p := e.Profiles[0]
	if e.PercentageOfNodesToScore != 20 || p.PercentageOfNodesToScore == nil || *p.PercentageOfNodesToScore != 40 {
		t.Errorf("percentageOfNodesToScore %d, profile's %v; want 20 and 40", e.PercentageOfNodesToScore, p.PercentageOfNodesToScore)
	}
	if got := p.Plugins["score"]; len(got) != 1 || got[0] != (pluginOut{Name: "NodeResourcesFit", Weight: 3}) {
		t.Errorf("score plugins = %+v, want only NodeResourcesFit with weight 3 (the file replaced the list)", got)
	}
	if len(p.Plugins["filter"]) < 5 {
		t.Errorf("filter plugins = %+v, want the default profile's", p.Plugins["filter"])
	}
	if args := compact(p.PluginConfig["NodeResourcesFit"]); args != `{"scoringStrategy":"MostAllocated"}` {
		t.Errorf("NodeResourcesFit args = %s", args)
	}
	if len(e.CustomInformers) != 1 {
		t.Fatalf("custom informers = %+v", e.CustomInformers)
	}
	if args := compact(e.CustomInformers[0].SourceArgs); !strings.Contains(args, `"bearerTokenFile":"/var/run/token"`) || !strings.Contains(args, `"token":"\u003credacted\u003e"`) {
		t.Errorf("custom informer vms's source args = %s, want the token file shown and the token redacted", args)
	}
	if compact(e.EventHandlerArgs) != `{"dynamicResources":[]}` {
		t.Errorf("event handler args = %s", e.EventHandlerArgs)
	}
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, ConfigzPath, nil))
	if rec.Code != http.StatusMethodNotAllowed {
		t.Errorf("POST /configz = %d", rec.Code)
	}
}

// A backoff given alone may not cross the other's default.
func TestCheckBackoffs(t *testing.T) {
	for _, tt := range []struct {
		in   config.Tuning
		want string
	}{
		{config.Tuning{}, ""},
		{config.Tuning{InitialBackoff: 5 * time.Second}, ""},
		{config.Tuning{InitialBackoff: 20 * time.Second}, "podInitialBackoffSeconds 20 is above the default podMaxBackoffSeconds (10): set podMaxBackoffSeconds too"},
		{config.Tuning{InitialBackoff: 20 * time.Second, MaxBackoff: 30 * time.Second}, ""},
	} {
		err := checkBackoffs(tt.in)
		if (err == nil) != (tt.want == "") || err != nil && err.Error() != tt.want {
			t.Errorf("checkBackoffs(%+v) = %v, want %q", tt.in, err, tt.want)
		}
	}
}

// A kube-scheduler configuration file builds the profile it describes:
// enabled/disabled plugins merged with the defaults, and plugin args in
// kube-scheduler's shape with their apiVersion and kind.
func TestKubeSchedulerConfigurationBuilds(t *testing.T) {
	const file = `apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: batch-scheduler
  plugins:
    score:
      disabled:
      - name: TaintToleration
      enabled:
      - name: NodeResourcesFit
        weight: 5
  pluginConfig:
  - name: NodeResourcesFit
    args:
      apiVersion: kubescheduler.config.k8s.io/v1
      kind: NodeResourcesFitArgs
      scoringStrategy:
        type: MostAllocated
        resources:
        - name: cpu
          weight: 1
  - name: TaintToleration
    args: {}
`
	cfg, err := config.Parse("kube.yaml", []byte(file))
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = buildProfiles(t.Context(), []string{"batch-scheduler"}, cfg, plugins.NewInTreeRegistry(), testHandle())
	// TaintToleration is disabled at score but still enabled at filter,
	// so its args are accepted.
	if err != nil {
		t.Fatalf("building the profile of a KubeSchedulerConfiguration: %v", err)
	}
	profiles, _, _ := buildProfiles(t.Context(), []string{"batch-scheduler"}, cfg, plugins.NewInTreeRegistry(), testHandle())
	score := profiles["batch-scheduler"].ListPlugins()["score"]
	var names []string
	for _, p := range score {
		names = append(names, p.Name)
		if p.Name == "NodeResourcesFit" && p.Weight != 5 {
			t.Errorf("NodeResourcesFit weight %d, want 5", p.Weight)
		}
	}
	if slices.Contains(names, "TaintToleration") || !slices.Contains(names, "NodeResourcesFit") {
		t.Errorf("score plugins %v: want NodeResourcesFit and not TaintToleration", names)
	}
}

// A kube-scheduler configuration written the way kube-scheduler dumps or
// users extend its defaults (multiPoint, every plugin's default args with
// their type meta) builds here unchanged.
func TestKubeSchedulerMultiPointAndDefaultArgs(t *testing.T) {
	const file = `apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
parallelism: 8
percentageOfNodesToScore: 0
podInitialBackoffSeconds: 1
podMaxBackoffSeconds: 10
profiles:
- schedulerName: batch-scheduler
  plugins:
    multiPoint:
      enabled:
      - name: NodeResourcesFit
        weight: 2
      disabled:
      - name: TaintToleration
  pluginConfig:
  - name: InterPodAffinity
    args:
      apiVersion: kubescheduler.config.k8s.io/v1
      kind: InterPodAffinityArgs
      hardPodAffinityWeight: 1
      ignorePreferredTermsOfExistingPods: false
  - name: NodeAffinity
    args:
      apiVersion: kubescheduler.config.k8s.io/v1
      kind: NodeAffinityArgs
  - name: PodTopologySpread
    args:
      apiVersion: kubescheduler.config.k8s.io/v1
      kind: PodTopologySpreadArgs
      defaultingType: System
  - name: VolumeBinding
    args:
      apiVersion: kubescheduler.config.k8s.io/v1
      kind: VolumeBindingArgs
      bindTimeoutSeconds: 600
  - name: NodeResourcesFit
    args:
      apiVersion: kubescheduler.config.k8s.io/v1
      kind: NodeResourcesFitArgs
      scoringStrategy:
        type: LeastAllocated
        resources:
        - {name: cpu, weight: 1}
        - {name: memory, weight: 1}
`
	cfg, err := config.Parse("kube.yaml", []byte(file))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Tuning.Parallelism != 8 {
		t.Errorf("parallelism %d, want 8", cfg.Tuning.Parallelism)
	}
	profiles, _, err := buildProfiles(t.Context(), []string{"batch-scheduler"}, cfg, plugins.NewInTreeRegistry(), testHandle())
	if err != nil {
		t.Fatalf("building the profile: %v", err)
	}
	for point, set := range profiles["batch-scheduler"].ListPlugins() {
		for _, p := range set {
			if p.Name == "TaintToleration" {
				t.Errorf("TaintToleration, disabled at multiPoint, is enabled at %s", point)
			}
			if p.Name == "NodeResourcesFit" && point == "score" && p.Weight != 2 {
				t.Errorf("NodeResourcesFit has weight %d at score, want multiPoint's 2", p.Weight)
			}
		}
	}
	if !slices.ContainsFunc(profiles["batch-scheduler"].ListPlugins()["filter"], func(r frameworkruntime.PluginRef) bool { return r.Name == "NodeResourcesFit" }) {
		t.Error("NodeResourcesFit is not at filter")
	}

	// Another value of a kube-scheduler default is refused at its line.
	bad := strings.Replace(file, "bindTimeoutSeconds: 600", "bindTimeoutSeconds: 30", 1)
	cfg, err = config.Parse("kube.yaml", []byte(bad))
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = buildProfiles(t.Context(), []string{"batch-scheduler"}, cfg, plugins.NewInTreeRegistry(), testHandle())
	if err == nil || !strings.Contains(err.Error(), "VolumeBinding args: kube.yaml: line 36: bindTimeoutSeconds 30 is not supported") {
		t.Errorf("bindTimeoutSeconds 30: %v", err)
	}
}
