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

package eventhandlers_test

import (
	"strings"
	"sync"
	"testing"

	"github.com/go-logr/logr/funcr"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/batch-scheduler/batch-scheduler/pkg/eventhandlers"
)

// captureLogs sends klog's output to the returned function until the test
// ends. Tests using it must not run in parallel.
func captureLogs(t *testing.T) func() string {
	t.Helper()
	var (
		mu  sync.Mutex
		buf strings.Builder
	)
	klog.SetLogger(funcr.New(func(prefix, args string) {
		mu.Lock()
		defer mu.Unlock()
		buf.WriteString(args + "\n")
	}, funcr.Options{}))
	t.Cleanup(klog.ClearLogger)
	return func() string {
		mu.Lock()
		defer mu.Unlock()
		return buf.String()
	}
}

func TestObjectAs(t *testing.T) {
	pod := &v1.Pod{}
	tests := []struct {
		name   string
		obj    any
		want   *v1.Pod
		ok     bool
		logged []string
	}{
		{"object", pod, pod, true, nil},
		{"tombstone", cache.DeletedFinalStateUnknown{Key: "ns/p", Obj: pod}, pod, true, nil},
		{"wrong type", &v1.Node{}, nil, false,
			[]string{"Ignoring object of the wrong type", `"want"="*v1.Pod"`, `"got"="*v1.Node"`}},
		{"value instead of pointer", v1.Pod{}, nil, false,
			[]string{`"got"="v1.Pod"`}},
		{"nil", nil, nil, false,
			[]string{"Ignoring object of the wrong type", `"got"="<nil>"`}},
		{"tombstone of the wrong type", cache.DeletedFinalStateUnknown{Key: "n1", Obj: &v1.Node{}}, nil, false,
			[]string{"Ignoring tombstone holding an object of the wrong type", `"key"="n1"`, `"want"="*v1.Pod"`, `"got"="*v1.Node"`}},
		{"empty tombstone", cache.DeletedFinalStateUnknown{Key: "ns/p"}, nil, false,
			[]string{"Ignoring tombstone", `"got"="<nil>"`}},
		{"typed nil", (*v1.Pod)(nil), nil, false,
			[]string{"Ignoring object of the wrong type or nil", `"got"="*v1.Pod"`}},
		{"tombstone of a typed nil", cache.DeletedFinalStateUnknown{Key: "ns/p", Obj: (*v1.Pod)(nil)}, nil, false,
			[]string{"Ignoring tombstone", `"key"="ns/p"`}},
		{"pointer to a tombstone is not unwrapped", &cache.DeletedFinalStateUnknown{Key: "ns/p", Obj: pod}, nil, false,
			[]string{`"got"="*cache.DeletedFinalStateUnknown"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			logs := captureLogs(t)
			got, ok := eventhandlers.ObjectAs[*v1.Pod](tt.obj)
			if got != tt.want || ok != tt.ok {
				t.Errorf("ObjectAs = %p, %v; want %p, %v", got, ok, tt.want, tt.ok)
			}
			out := logs()
			if len(tt.logged) == 0 && out != "" {
				t.Errorf("logged %q, want nothing", out)
			}
			for _, s := range tt.logged {
				if !strings.Contains(out, s) {
					t.Errorf("log %q does not contain %q", out, s)
				}
			}
		})
	}
	t.Run("interface type", func(t *testing.T) {
		var s any = pod
		if got, ok := eventhandlers.ObjectAs[interface{ GetName() string }](s); !ok || got != pod {
			t.Errorf("ObjectAs[interface] = %v, %v", got, ok)
		}
	})
}

func TestParseDynamicResource(t *testing.T) {
	tests := []struct {
		name    string
		want    schema.GroupVersionResource
		wantErr string
	}{
		{"widgets.v1.example.com", schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}, ""},
		{"widgets.v1alpha1.example.com", schema.GroupVersionResource{Group: "example.com", Version: "v1alpha1", Resource: "widgets"}, ""},
		{"widgets.v2beta3.a.b.example.com", schema.GroupVersionResource{Group: "a.b.example.com", Version: "v2beta3", Resource: "widgets"}, ""},
		{"my-widgets.v10.x", schema.GroupVersionResource{Group: "x", Version: "v10", Resource: "my-widgets"}, ""},
		{"", schema.GroupVersionResource{}, "want <plural>.<version>.<group>"},
		{"widgets", schema.GroupVersionResource{}, "want <plural>.<version>.<group>"},
		{"pods.v1", schema.GroupVersionResource{}, "want <plural>.<version>.<group>"},
		{"Widgets.v1.example.com", schema.GroupVersionResource{}, `resource "Widgets" must be a lower-case plural name`},
		{"-widgets.v1.example.com", schema.GroupVersionResource{}, `resource "-widgets"`},
		{".v1.example.com", schema.GroupVersionResource{}, `resource ""`},
		{"widgets.1.example.com", schema.GroupVersionResource{}, `version "1" must look like v1`},
		{"widgets.v0.example.com", schema.GroupVersionResource{}, `version "v0"`},
		{"widgets.v1gamma1.example.com", schema.GroupVersionResource{}, `version "v1gamma1"`},
		{"widgets.v1beta.example.com", schema.GroupVersionResource{}, `version "v1beta"`},
		{"widgets.v1.Example.com", schema.GroupVersionResource{}, `group "Example.com" must be a DNS subdomain`},
		{"widgets.v1.example..com", schema.GroupVersionResource{}, `group "example..com"`},
		{"widgets.v1.example.com.", schema.GroupVersionResource{}, `group "example.com."`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := eventhandlers.ParseDynamicResource(tt.name)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want one containing %q", err, tt.wantErr)
				}
				if !strings.Contains(err.Error(), `"`+tt.name+`"`) {
					t.Errorf("error %q does not name the input", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseDynamicResource: %v", err)
			}
			if got != tt.want {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
			if name := eventhandlers.DynamicResourceName(got); string(name) != tt.name {
				t.Errorf("DynamicResourceName = %q, want the input %q back", name, tt.name)
			}
		})
	}
}
