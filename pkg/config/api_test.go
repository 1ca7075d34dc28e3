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
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

func TestLineOfPath(t *testing.T) {
	doc := `apiVersion: batch-scheduler.io/v1alpha1
kind: SchedulerConfiguration
parallelism: 4
profiles:
- schedulerName: a
  plugins:
    score:
    - name: X
    - name: Y
      weight: 2
    filter:
      enabled:
      - name: Z
      disabled:
      - name: W
`
	var n yaml.Node
	if err := yaml.Unmarshal([]byte(doc), &n); err != nil {
		t.Fatal(err)
	}
	root := n.Content[0]
	for _, tt := range []struct {
		path string
		line int
	}{
		{"parallelism", 3},
		{"profiles[0].schedulerName", 5},
		// The list form has no enabled: key.
		{"profiles[0].plugins.score.enabled[1].weight", 10},
		{"profiles[0].plugins.score.enabled[1]", 9},
		{"profiles[0].plugins.filter.enabled[0].name", 13},
		{"profiles[0].plugins.filter.disabled[0].name", 15},
		// A field the file leaves out (defaulted): its nearest parent.
		{"podMaxBackoffSeconds", 1},
		{"profiles[0].plugins.bind.enabled[0]", 6},
		{"profiles[3].schedulerName", 4},
	} {
		if got := lineOfPath(root, tt.path); got != tt.line {
			t.Errorf("lineOfPath(%q) = %d, want %d", tt.path, got, tt.line)
		}
	}
}

// The file is YAML 1.2 all through: a plugin named Y, N, on or off is a
// name, not a boolean (as the YAML 1.1 reader of apimachinery's codec
// would make it).
func TestYAML12Names(t *testing.T) {
	doc := "apiVersion: batch-scheduler.io/v1alpha1\nkind: SchedulerConfiguration\nprofiles:\n- schedulerName: a\n  plugins:\n    score:\n    - name: Y\n    - name: off\n    - name: NO\n"
	f, err := Parse("x.yaml", []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range f.API.Profiles[0].Plugins.Score.Enabled {
		got = append(got, p.Name)
	}
	if len(got) != 3 || got[0] != "Y" || got[1] != "off" || got[2] != "NO" {
		t.Errorf("plugin names = %q", got)
	}
}

// Aliases that expand exponentially are refused, not expanded.
func TestDocumentJSONAliasBudget(t *testing.T) {
	doc := "a: &a [x, x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]\nc: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]\nd: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]\ne: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d, *d]\nf: &f [*e, *e, *e, *e, *e, *e, *e, *e, *e, *e]\ng: [*f, *f, *f, *f, *f, *f, *f, *f, *f, *f]\n"
	var n yaml.Node
	if err := yaml.Unmarshal([]byte(doc), &n); err != nil {
		t.Fatal(err)
	}
	if _, err := documentJSON(&n); err == nil {
		t.Error("a document of ten million values was rendered")
	}
	if _, err := documentJSON(n.Content[0].Content[1]); err != nil {
		t.Errorf("a small list: %v", err)
	}
}

func TestSectionJSON(t *testing.T) {
	s := NewSection("x.yaml", []byte("\n\nmode: on\nname: Y\nn: 3\nlist: [a, 1.5, null, true]\n"))
	got, err := s.JSON()
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"list":["a",1.5,null,true],"mode":"on","n":3,"name":"Y"}`; string(got) != want {
		t.Errorf("JSON = %s, want %s", got, want)
	}
	if _, err := NewSection("x.yaml", []byte("\n\na: [\n")).JSON(); err == nil || !strings.HasPrefix(err.Error(), "x.yaml: ") {
		t.Errorf("bad YAML: %v", err)
	}
}
