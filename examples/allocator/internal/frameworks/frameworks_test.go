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

package frameworks

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func TestLoad(t *testing.T) {
	tests := []struct {
		name    string
		content string
		wantErr []string // substrings; none: must load
	}{
		{name: "valid", content: `
frameworks:
- name: batch
  weight: 2
  demandURL: http://127.0.0.1:10259/demand
- name: vms
revoked:
- grant: vms.node-1
  message: maintenance
`},
		{name: "empty file"},
		{name: "unknown field", content: "frameworks:\n- name: a\n  wieght: 2\n", wantErr: []string{"line 3", "wieght"}},
		{name: "zero weight", content: "frameworks:\n- name: a\n- name: b\n  weight: 0\n", wantErr: []string{"line 4", "frameworks[1].weight"}},
		{name: "bad name", content: "frameworks:\n- name: Batch_1\n", wantErr: []string{"line 2", "frameworks[0].name"}},
		{name: "duplicate", content: "frameworks:\n- name: a\n- name: a\n", wantErr: []string{"line 3", "Duplicate"}},
		{name: "bad URL", content: "frameworks:\n- name: a\n  demandURL: ftp://x/demand\n", wantErr: []string{"line 3", "demandURL"}},
		{name: "token without URL", content: "frameworks:\n- name: a\n  bearerTokenFile: /t\n", wantErr: []string{"bearerTokenFile"}},
		{name: "revocation of an unknown framework", content: "frameworks:\n- name: a\nrevoked:\n- grant: b.n1\n", wantErr: []string{"line 4", "revoked[0].grant"}},
		{name: "not YAML", content: "frameworks: [\n", wantErr: []string{"line"}},
		{name: "held, also of frameworks no longer registered", content: `
frameworks:
- name: a
held:
- grant: a.n1
  resources: {cpu: 1500m, memory: 4Gi}
- grant: gone.n1
  resources: {cpu: "2"}
`},
		{name: "held: bad quantity", content: "frameworks: []\nheld:\n- grant: a.n1\n  resources:\n    cpu: lots\n", wantErr: []string{"line 5", "held[0].resources[cpu]"}},
		{name: "held: negative", content: "frameworks: []\nheld:\n- grant: a.n1\n  resources: {cpu: -1}\n", wantErr: []string{"line 4", "must not be negative"}},
		{name: "held: bad grant name", content: "frameworks: []\nheld:\n- grant: nodot\n  resources: {}\n", wantErr: []string{"line 3", "held[0].grant"}},
		{name: "held: duplicate", content: "frameworks: []\nheld:\n- grant: a.n1\n- grant: a.n1\n", wantErr: []string{"line 4", "Duplicate"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "frameworks.yaml")
			if err := os.WriteFile(path, []byte(tt.content), 0o600); err != nil {
				t.Fatal(err)
			}
			f, err := Load(path)
			if len(tt.wantErr) == 0 {
				if err != nil {
					t.Fatalf("Load: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Load = %+v, want an error", f)
			}
			for _, w := range append(tt.wantErr, path) {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not name %q", err, w)
				}
			}
		})
	}
}

func TestSaveLoad(t *testing.T) {
	w := 3.0
	in := &File{
		Frameworks: []Framework{{Name: "vms", DemandURL: "https://vm:8443/demand", CAFile: "/ca.crt"}, {Name: "batch", Weight: &w}},
		Revoked:    []Revocation{{Grant: "vms.n1", Message: "maintenance"}},
		Held: []Held{
			HeldOf("vms.n1", v1.ResourceList{v1.ResourceCPU: resource.MustParse("1500m"), "example.com/gpu": resource.MustParse("2")}),
			HeldOf("batch.n1", v1.ResourceList{v1.ResourceMemory: resource.MustParse("6Gi")}),
		},
	}
	path := filepath.Join(t.TempDir(), "state.yaml")
	if err := Save(path, in); err != nil {
		t.Fatal(err)
	}
	out, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	want := &File{Frameworks: []Framework{in.Frameworks[1], in.Frameworks[0]}, Revoked: in.Revoked, Held: []Held{in.Held[1], in.Held[0]}}
	if !reflect.DeepEqual(out, want) {
		t.Errorf("Load(Save(x)) = %+v, want %+v", out, want)
	}
	if l, err := out.Held[1].List(); err != nil || !l.Cpu().Equal(resource.MustParse("1500m")) || l.Name("example.com/gpu", resource.DecimalSI).Value() != 2 {
		t.Errorf("held vms.n1 = %v, %v; want cpu 1500m and 2 example.com/gpu", l, err)
	}
	entries, _ := os.ReadDir(filepath.Dir(path))
	if len(entries) != 1 {
		t.Errorf("directory holds %d files, want only the state file", len(entries))
	}
}

func TestParseGrantName(t *testing.T) {
	for _, tt := range []struct {
		name, fw, node string
		ok             bool
	}{
		{"batch.node-1", "batch", "node-1", true},
		{"batch.node-1.example.com", "batch", "node-1.example.com", true},
		{"batch", "", "", false},
		{"Batch.n1", "", "", false},
		{"batch.N1", "", "", false},
	} {
		fw, node, err := ParseGrantName(tt.name)
		if (err == nil) != tt.ok || fw != tt.fw || node != tt.node {
			t.Errorf("ParseGrantName(%q) = %q, %q, %v", tt.name, fw, node, err)
		}
	}
}
