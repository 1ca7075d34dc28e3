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
	"encoding/json"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"

	configapi "github.com/batch-scheduler/batch-scheduler/pkg/apis/config"
	"github.com/batch-scheduler/batch-scheduler/pkg/apis/config/scheme"
	"github.com/batch-scheduler/batch-scheduler/pkg/apis/config/v1alpha1"
)

const componentHead = "apiVersion: batch-scheduler.io/v1alpha1\nkind: SchedulerConfiguration\n"

// The built-in handlers' and sources' args decode into their types,
// defaulted; vendors' stay raw, with their lines.
func TestComponentArgsDefaults(t *testing.T) {
	f, err := Parse("c.yaml", []byte(componentHead+`eventHandlers:
- name: default
  args: {externalWorkloadNodeLabel: example.com/host}
- name: two-level
  args:
    framework: batch
    dynamicResources: [widgets.v1.example.com]
    ownerGangs: {Job: false}
- name: acme
  args: {zone: eu-1}
customInformers:
- name: vms
  resource: ExternalWorkload
  source:
    http: {url: "https://vms.example"}
- name: inventory
  resource: Node
  source:
    file: {directory: /srv/inventory}
- name: other
  resource: Grant
  source:
    kubeconfig: {kubeconfig: /etc/kc}
`))
	if err != nil {
		t.Fatal(err)
	}
	hs := f.API.EventHandlers
	if a, ok := hs[0].Args.(*configapi.DefaultHandlerArgs); !ok || a.ExternalWorkloadNodeLabel != "example.com/host" {
		t.Errorf("default args = %#v", hs[0].Args)
	}
	if a, ok := hs[1].Args.(*configapi.TwoLevelHandlerArgs); !ok || a.Framework != "batch" ||
		len(a.DynamicResources) != 1 || a.OwnerGangs["Job"] || len(a.OwnerGangs) != 1 {
		t.Errorf("two-level args = %#v", hs[1].Args)
	}
	if raw, ok := hs[2].Args.(*configapi.RawArgs); !ok || !strings.Contains(string(raw.YAML), "zone: eu-1") || raw.Source != "c.yaml" {
		t.Errorf("acme args = %#v", hs[2].Args)
	}
	cis := f.CustomInformers()
	want := &configapi.HTTPSourceArgs{URL: "https://vms.example"}
	want.Timeout.Duration = time.Minute
	want.MaxObjectBytes, want.MaxListBytes = 4<<20, 256<<20
	if a, ok := cis[0].SourceArgs.(*configapi.HTTPSourceArgs); !ok || !equality.Semantic.DeepEqual(a, want) {
		t.Errorf("http settings = %#v, want %#v", cis[0].SourceArgs, want)
	}
	if a, ok := cis[1].SourceArgs.(*configapi.FileSourceArgs); !ok || a.Directory != "/srv/inventory" || a.PollInterval.Duration != 5*time.Second {
		t.Errorf("file settings = %#v", cis[1].SourceArgs)
	}
	if _, ok := cis[2].SourceArgs.(*configapi.RawArgs); !ok {
		t.Errorf("kubeconfig settings = %#v, want raw", cis[2].SourceArgs)
	}

	// HandlerArgs hands a built-in handler's factory its typed args, and
	// the text as written to a YAML decoder.
	obj, err := DecodeHandlerArgs("two-level", f.HandlerArgs("two-level"))
	if err != nil || !equality.Semantic.DeepEqual(obj, hs[1].Args) {
		t.Errorf("DecodeHandlerArgs(two-level) = %v, %v; want the file's typed args", obj, err)
	}
	var written struct {
		Framework        string          `yaml:"framework"`
		DynamicResources []string        `yaml:"dynamicResources"`
		OwnerGangs       map[string]bool `yaml:"ownerGangs"`
	}
	if err := DecodeStrict(f.HandlerArgs("two-level"), &written); err != nil || written.Framework != "batch" {
		t.Errorf("two-level args as YAML = %+v, %v", written, err)
	}
	// Built in code, with nothing set: the defaults, validated.
	if obj, err := DecodeHandlerArgs("default", nil); err != nil || obj.(*configapi.DefaultHandlerArgs).DynamicResources != nil {
		t.Errorf("DecodeHandlerArgs(default, nil) = %#v, %v", obj, err)
	}
	if _, err := DecodeHandlerArgs("two-level", nil); err == nil || !strings.Contains(err.Error(), "framework: required") {
		t.Errorf("DecodeHandlerArgs(two-level, nil) error = %v, want framework required", err)
	}
	r, err := NewHandlerArgsReader(&configapi.TwoLevelHandlerArgs{Framework: "Bad_Name"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := DecodeHandlerArgs("two-level", r); err == nil || !strings.Contains(err.Error(), `framework "Bad_Name"`) {
		t.Errorf("typed args built in code: error = %v, want the framework refused", err)
	}
}

// The typed args convert to the file's version and back unchanged.
func TestComponentArgsRoundTrip(t *testing.T) {
	f, err := Parse("c.yaml", []byte(componentHead+`eventHandlers:
- name: two-level
  args: {framework: batch, evictOnRevoke: true, disableQueues: true, ownerGangs: {RayCluster: false}}
customInformers:
- name: vms
  resource: ExternalWorkload
  source:
    http: {url: "https://vms.example", qps: 5, burst: 10, timeout: 30s, caFile: /ca.pem}
- name: inventory
  resource: Node
  source:
    file: {directory: /srv/inventory, pollInterval: 1s}
`))
	if err != nil {
		t.Fatal(err)
	}
	versioned, err := scheme.Scheme.ConvertToVersion(f.API.DeepCopy(), v1alpha1.SchemeGroupVersion)
	if err != nil {
		t.Fatal(err)
	}
	v := versioned.(*v1alpha1.SchedulerConfiguration)
	if got := string(v.CustomInformers[0].Source["http"].Raw); !strings.Contains(got, `"url":"https://vms.example"`) || !strings.Contains(got, `"timeout":"30s"`) {
		t.Errorf("http settings written as %s", got)
	}
	if got := string(v.EventHandlers[0].Args.Raw); !strings.Contains(got, `"framework":"batch"`) || !strings.Contains(got, `"ownerGangs":{"RayCluster":false}`) {
		t.Errorf("two-level args written as %s", got)
	}
	v.APIVersion, v.Kind = APIVersion, Kind
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	back, err := Parse("c.yaml", data)
	if err != nil {
		t.Fatalf("parsing what was written: %v\n%s", err, data)
	}
	for i := range f.API.EventHandlers {
		if !equality.Semantic.DeepEqual(back.API.EventHandlers[i].Args, f.API.EventHandlers[i].Args) {
			t.Errorf("handler %d: %#v after a round trip, want %#v", i, back.API.EventHandlers[i].Args, f.API.EventHandlers[i].Args)
		}
	}
	for i := range f.API.CustomInformers {
		if !equality.Semantic.DeepEqual(back.API.CustomInformers[i].SourceArgs, f.API.CustomInformers[i].SourceArgs) {
			t.Errorf("informer %d: %#v after a round trip, want %#v", i, back.API.CustomInformers[i].SourceArgs, f.API.CustomInformers[i].SourceArgs)
		}
	}
}

// Each problem of a built-in handler's or source's args names its field
// and the line of the file it is on.
func TestComponentArgsErrors(t *testing.T) {
	handler := func(name, args string) string {
		return componentHead + "eventHandlers:\n- name: " + name + "\n  args:\n" + args
	}
	source := func(typ, args string) string {
		return componentHead + "customInformers:\n- name: src\n  resource: Node\n  source:\n    " + typ + ":\n" + args
	}
	for _, tt := range []struct {
		name, in string
		want     []string
	}{
		{"default: unknown field", handler("default", "    dynamicResource: [a.v1.b]\n"), []string{"line 6: default handler args: field dynamicResource not found"}},
		{"default: bad dynamic resource", handler("default", "    dynamicResources:\n    - widgets.v1.example.com\n    - widgets\n"),
			[]string{`line 8: default handler args: dynamicResources[1]: dynamic resource "widgets": want <plural>.<version>.<group>`}},
		{"default: dynamic resource twice", handler("default", "    dynamicResources: [w.v1.x, w.v1.x]\n"),
			[]string{`line 6: default handler args: dynamicResources[1]: "w.v1.x" is already listed at dynamicResources[0]`}},
		{"default: bad label", handler("default", "    externalWorkloadNodeLabel: a b\n"),
			[]string{`line 6: default handler args: externalWorkloadNodeLabel: "a b" is not a valid label key`}},
		{"default: unknown owner kind", handler("default", "    ownerGangs:\n      Rays: true\n"),
			[]string{`line 7: default handler args: ownerGangs: unknown kind "Rays" (known: Job, JobSet, LeaderWorkerSet, MPIJob, PyTorchJob, RayCluster)`}},
		{"default: owner kind not a boolean", handler("default", "    ownerGangs: {Job: 1}\n"),
			[]string{`line 6: default handler args: ownerGangs.Job: expected true or false, got "1"`}},
		{"two-level: no framework", handler("two-level", "    evictOnRevoke: true\n"),
			[]string{"line 5: two-level handler args: framework: required"}},
		{"two-level: bad framework and inline field", handler("two-level", "    framework: Batch_1\n    externalWorkloadNodeLabel: a b\n"),
			[]string{`line 6: two-level handler args: framework "Batch_1"`, `line 7: two-level handler args: externalWorkloadNodeLabel: "a b"`}},
		{"http: no url", source("http", "      timeout: 5s\n"), []string{`line 7: custom informer "src": source http: url: required`}},
		{"http: unknown field", source("http", "      url: http://x\n      bogus: 1\n"), []string{`line 9: custom informer "src": source http: field bogus not found`}},
		{"http: tls over http", source("http", "      url: http://x\n      caFile: /ca.pem\n"), []string{`line 8: custom informer "src": source http: url: caFile, certFile, keyFile and insecureSkipTLSVerify need an https url`}},
		{"http: bad timeout", source("http", "      url: https://x\n      timeout: soon\n"), []string{`line 9: custom informer "src": source http: timeout: "soon" is not a duration`}},
		{"http: qps without burst", source("http", "      url: https://x\n      qps: 5\n"), []string{`custom informer "src": source http: burst: required with qps`}},
		{"file: no directory", source("file", "      pollInterval: 1s\n"), []string{`line 7: custom informer "src": source file: directory: required`}},
		{"file: short poll", source("file", "      directory: /d\n      pollInterval: 10ms\n"),
			[]string{`line 9: custom informer "src": source file: pollInterval: must be at least 100ms (or unset for 5s), got 10ms`}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("c.yaml", []byte(tt.in))
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}
