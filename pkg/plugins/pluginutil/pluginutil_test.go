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

package pluginutil

import (
	"reflect"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"

	configapi "github.com/batch-scheduler/batch-scheduler/pkg/apis/config"
	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
)

func TestDecodeNoArgs(t *testing.T) {
	for _, ok := range []string{"", "  \n", "{}", "null", "# only a comment\n"} {
		if err := DecodeNoArgs("P", configapi.NewRawArgs("", []byte(ok))); err != nil {
			t.Errorf("DecodeNoArgs(%q) = %v, want nil", ok, err)
		}
	}
	if err := DecodeNoArgs("P", nil); err != nil {
		t.Errorf("DecodeNoArgs(nil) = %v", err)
	}
	for _, bad := range []string{"foo: 1", "just-a-string", "[1, 2]", "{}\n---\n{}\n"} {
		err := DecodeNoArgs("MyPlugin", configapi.NewRawArgs("", []byte(bad)))
		if err == nil || !strings.Contains(err.Error(), "MyPlugin args: the plugin takes no args") {
			t.Errorf("DecodeNoArgs(%q) = %v, want an error naming the plugin", bad, err)
		}
	}
	// Args of a type the plugin does not read (another plugin's typed
	// args) are refused, naming the plugin.
	if err := DecodeNoArgs("P", &configapi.TopologyAwareArgs{}); err == nil || !strings.Contains(err.Error(), "P args: got *config.TopologyAwareArgs") {
		t.Errorf("typed args were not refused: %v", err)
	}
}

func TestDecodeArgs(t *testing.T) {
	var out struct {
		A int `yaml:"a"`
	}
	out.A = 7
	if err := DecodeArgs("P", nil, &out); err != nil || out.A != 7 {
		t.Fatalf("nil args: %v, %+v (defaults must stay)", err, out)
	}
	if err := DecodeArgs("P", configapi.NewRawArgs("", []byte("a: 3")), &out); err != nil || out.A != 3 {
		t.Fatalf("a: 3 gave %v, %+v", err, out)
	}
	err := DecodeArgs("P", configapi.NewRawArgs("", []byte("b: 3")), &out)
	if err == nil || !strings.HasPrefix(err.Error(), "P args: ") || !strings.Contains(err.Error(), "field b not found") {
		t.Errorf("unknown field: %v", err)
	}
}

func TestNormalizeScores(t *testing.T) {
	tests := []struct {
		name    string
		in      []int64
		reverse bool
		want    []int64
	}{
		{"scaled to the highest", []int64{0, 5, 10}, false, []int64{0, 50, 100}},
		{"rounds down", []int64{1, 3}, false, []int64{33, 100}},
		{"all zero", []int64{0, 0}, false, []int64{0, 0}},
		{"reversed", []int64{0, 1, 2}, true, []int64{100, 50, 0}},
		{"reversed all zero", []int64{0, 0}, true, []int64{100, 100}},
		{"reversed all equal", []int64{3, 3}, true, []int64{0, 0}},
		{"negative counts as zero", []int64{-5, 4}, false, []int64{0, 100}},
		{"none", nil, false, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			scores := make([]framework.NodeScore, len(tt.in))
			for i, s := range tt.in {
				scores[i] = framework.NodeScore{Name: string(rune('a' + i)), Score: s}
			}
			NormalizeScores(scores, tt.reverse)
			var got []int64
			for i, s := range scores {
				if s.Name != string(rune('a'+i)) {
					t.Errorf("names were reordered: %v", scores)
				}
				got = append(got, s.Score)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}

func TestEventObjects(t *testing.T) {
	pod, node := &v1.Pod{}, &v1.Node{}
	if got, err := PodOf(pod, "added"); got != pod || err != nil {
		t.Errorf("PodOf(pod) = %v, %v", got, err)
	}
	for _, bad := range []any{nil, (*v1.Pod)(nil), node} {
		if _, err := PodOf(bad, "deleted"); err == nil || !strings.Contains(err.Error(), "want the deleted *v1.Pod") {
			t.Errorf("PodOf(%T) error = %v", bad, err)
		}
	}
	if o, n, err := NodesOf(nil, node); o != nil || n != node || err != nil {
		t.Errorf("NodesOf(nil, node) = %v, %v, %v", o, n, err)
	}
	old := &v1.Node{}
	if o, n, err := NodesOf(old, node); o != old || n != node || err != nil {
		t.Errorf("NodesOf(old, node) = %v, %v, %v", o, n, err)
	}
	if _, _, err := NodesOf(nil, pod); err == nil || !strings.Contains(err.Error(), "new *v1.Node") {
		t.Errorf("NodesOf(nil, pod) error = %v", err)
	}
	if _, _, err := NodesOf(pod, node); err == nil || !strings.Contains(err.Error(), "old *v1.Node") {
		t.Errorf("NodesOf(pod, node) error = %v", err)
	}
}
