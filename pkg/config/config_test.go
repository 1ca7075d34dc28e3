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
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	configapi "github.com/batch-scheduler/batch-scheduler/pkg/apis/config"
)

type handlerArgs struct {
	DynamicResources []string `yaml:"dynamicResources"`
	Limit            int      `yaml:"limit"`
}

const good = `apiVersion: batch-scheduler.io/v1alpha1
kind: SchedulerConfiguration
eventHandlers:
- name: acme
  args:
    dynamicResources:
    - widgets.v1.example.com
    limit: 3
- name: flow
  args: {limit: 7}
- name: empty
customInformers:
- name: vm-manager
  resource: Node
  resyncPeriod: 30s
  source:
    http:
      url: http://127.0.0.1:8080
`

func TestParseGood(t *testing.T) {
	f, err := Parse("sched.yaml", []byte(good))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	var a handlerArgs
	if err := DecodeStrict(f.HandlerArgs("acme"), &a); err != nil {
		t.Fatalf("decoding acme args: %v", err)
	}
	if len(a.DynamicResources) != 1 || a.DynamicResources[0] != "widgets.v1.example.com" || a.Limit != 3 {
		t.Errorf("acme args = %+v", a)
	}
	var b handlerArgs
	if err := DecodeStrict(f.HandlerArgs("flow"), &b); err != nil || b.Limit != 7 {
		t.Errorf("flow args = %+v, %v", b, err)
	}
	if r := f.HandlerArgs("empty"); r != nil {
		t.Errorf("HandlerArgs(empty) = %v, want nil", r)
	}
	if r := f.HandlerArgs("absent"); r != nil {
		t.Errorf("HandlerArgs(absent) = %v, want nil", r)
	}
	if len(f.CustomInformers()) != 1 {
		t.Fatalf("custom informers = %+v", f.CustomInformers())
	}
	ci := f.CustomInformers()[0]
	if ci.Name != "vm-manager" || ci.Resource != "Node" || ci.SourceType != "http" || ci.ResyncPeriod.Duration != 30*time.Second || f.Line("customInformers[0]") != 13 {
		t.Errorf("custom informer = %+v", ci)
	}
	// The http source's settings are typed, defaulted.
	if src, ok := ci.SourceArgs.(*configapi.HTTPSourceArgs); !ok || src.URL != "http://127.0.0.1:8080" || src.Timeout.Duration != configapi.DefaultHTTPSourceTimeout {
		t.Errorf("source args = %#v", ci.SourceArgs)
	}
}

// A handler's own strict decoding must report the file's name and the
// line of the bad field in the file, not in the section.
func TestSectionKeepsFileLines(t *testing.T) {
	in := strings.Replace(good, "    limit: 3\n", "    limit: 3\n    limt: 4\n", 1)
	f, err := Parse("sched.yaml", []byte(in))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	var a handlerArgs
	err = DecodeStrict(f.HandlerArgs("acme"), &a)
	if err == nil {
		t.Fatal("expected an unknown-field error")
	}
	for _, want := range []string{"sched.yaml", "line 9", "limt"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not contain %q", err, want)
		}
	}
	// The flow-style section also keeps its line.
	in = strings.Replace(good, "args: {limit: 7}", "args: {limit: x}", 1)
	f, err = Parse("sched.yaml", []byte(in))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	err = DecodeStrict(f.HandlerArgs("flow"), &a)
	if err == nil || !strings.Contains(err.Error(), "line 10") {
		t.Errorf("flow section error = %v, want one on line 10", err)
	}
}

func TestParseErrors(t *testing.T) {
	header := "apiVersion: batch-scheduler.io/v1alpha1\nkind: SchedulerConfiguration\n"
	tests := []struct {
		name string
		in   string
		want []string
	}{
		{"empty", "", []string{"x.yaml", "empty"}},
		{"not yaml", "a: [", []string{"x.yaml", "line"}},
		{"unknown top-level field", header + "profile: []\n", []string{"line 3", "profile", "not found"}},
		{"no type names leak", header + "profile: []\n", nil},
		{"wrong apiVersion", "apiVersion: v1\nkind: SchedulerConfiguration\n", []string{"line 1", "apiVersion", `"v1"`}},
		{"wrong kind", "apiVersion: batch-scheduler.io/v1alpha1\nkind: Pod\n", []string{"line 2", "kind"}},
		{"handler without name", header + "eventHandlers:\n- args: {a: 1}\n", []string{"line 4", "eventHandlers[0].name: Required value"}},
		{"duplicate handler", header + "eventHandlers:\n- name: a\n- name: a\n", []string{"line 5", "eventHandlers[1].name: Duplicate value: \"a\" (first on line 4)"}},
		{"handler args not a mapping", header + "eventHandlers:\n- name: a\n  args: [1]\n", []string{"line 5", "args must be a mapping"}},
		{"unknown handler field", header + "eventHandlers:\n- name: a\n  arg: {}\n", []string{"line 5", "arg"}},
		{"informer without name", header + "customInformers:\n- resource: Node\n  source: {http: {}}\n", []string{"line 4", "customInformers[0].name: Required value"}},
		{"informer bad name", header + "customInformers:\n- name: Bad_Name\n  resource: Node\n  source: {http: {}}\n", []string{"line 4", "customInformers[0].name: Invalid value: \"Bad_Name\": a lowercase RFC 1123 label"}},
		{"informer duplicate", header + "customInformers:\n- name: a\n  resource: Node\n  source: {http: {}}\n- name: a\n  resource: Node\n  source: {http: {}}\n", []string{"line 7", "customInformers[1].name: Duplicate value: \"a\" (first on line 4)"}},
		{"informer without resource", header + "customInformers:\n- name: a\n  source: {http: {}}\n", []string{"line 4: customInformers[0].resource: Required value"}},
		{"informer without source", header + "customInformers:\n- name: a\n  resource: Node\n", []string{"source is required"}},
		{"informer two sources", header + "customInformers:\n- name: a\n  resource: Node\n  source: {http: {}, file: {}}\n", []string{"exactly one key", "got 2"}},
		{"informer source args not mapping", header + "customInformers:\n- name: a\n  resource: Node\n  source: {http: 3}\n", []string{"source.http must be a mapping"}},
		{"negative resync", header + "customInformers:\n- name: a\n  resource: Node\n  resyncPeriod: -1s\n  source: {http: {}}\n", []string{"line 6: customInformers[0].resyncPeriod: Invalid value: \"-1s\": must not be negative"}},
		{"bad duration", header + "customInformers:\n- name: a\n  resource: Node\n  resyncPeriod: soon\n  source: {http: {}}\n", []string{"line 6", "soon"}},
		{"two documents", header + "---\n" + header, []string{"more than one YAML document"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("x.yaml", []byte(tt.in))
			if err == nil {
				t.Fatal("expected an error")
			}
			if strings.Contains(err.Error(), "config.raw") {
				t.Errorf("error leaks Go type names: %v", err)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("error spans lines: %q", err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "c.yaml")
	if err := os.WriteFile(p, []byte(good), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := Load(p)
	if err != nil || f.Path != p || len(f.API.EventHandlers) != 3 {
		t.Fatalf("Load = %+v, %v", f, err)
	}
	if _, err := Load(filepath.Join(dir, "missing.yaml")); err == nil || !strings.Contains(err.Error(), "missing.yaml") {
		t.Errorf("Load(missing) error = %v, want one naming the file", err)
	}
}

func TestDecodeStrict(t *testing.T) {
	var a handlerArgs
	if err := DecodeStrict(nil, &a); err != nil {
		t.Errorf("nil reader: %v", err)
	}
	if err := DecodeStrict(strings.NewReader("  \n"), &a); err != nil {
		t.Errorf("blank reader: %v", err)
	}
	a.Limit = 5
	if err := DecodeStrict(NewSection("s", []byte("limit: 9\n")), &a); err != nil || a.Limit != 9 {
		t.Errorf("decode = %+v, %v", a, err)
	}
	err := DecodeStrict(NewSection("s.yaml", []byte("limit: nine\n")), &a)
	if err == nil || !strings.HasPrefix(err.Error(), "s.yaml: line 1") {
		t.Errorf("bad value error = %v", err)
	}
	if err := DecodeStrict(strings.NewReader("a: 1\n---\nb: 2\n"), &map[string]int{}); err == nil {
		t.Error("two documents: expected an error")
	}
}
