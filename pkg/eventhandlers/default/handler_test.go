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

package defaulthandler_test

import (
	"io"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/batch-scheduler/batch-scheduler/pkg/config"
	"github.com/batch-scheduler/batch-scheduler/pkg/eventhandlers"
	defaulthandler "github.com/batch-scheduler/batch-scheduler/pkg/eventhandlers/default"
)

func TestNew(t *testing.T) {
	gadgets := schema.GroupVersionResource{Group: "gadgets.example.org", Version: "v2", Resource: "gadgets"}
	tests := []struct {
		name string
		cfg  io.Reader
		want []schema.GroupVersionResource
		// wantErr lists substrings of the error; none means success.
		wantErr []string
	}{
		{name: "no config", cfg: nil},
		{name: "empty config", cfg: strings.NewReader("")},
		{name: "comment only", cfg: strings.NewReader("# nothing\n")},
		{name: "empty list", cfg: strings.NewReader("dynamicResources: []\n")},
		{name: "dynamic resources, in order",
			cfg:  strings.NewReader("dynamicResources:\n- widgets.v1alpha1.example.com\n- gadgets.v2.gadgets.example.org\n"),
			want: []schema.GroupVersionResource{widgets, gadgets}},
		{name: "unknown field",
			cfg:     strings.NewReader("# defaults\ndynamicResource:\n- widgets.v1alpha1.example.com\n"),
			wantErr: []string{"line 2", "dynamicResource not found"}},
		{name: "unknown field in a section keeps the file's name and line",
			cfg:     config.NewSection("/etc/sched.yaml", []byte("\n\n\n    dynamicResources: []\n    bogus: 1\n")),
			wantErr: []string{"/etc/sched.yaml", "line 5", "bogus"}},
		{name: "wrong type",
			cfg:     strings.NewReader("dynamicResources: widgets.v1alpha1.example.com\n"),
			wantErr: []string{"line 1", "expected a list, got a string"}},
		{name: "two documents",
			cfg:     strings.NewReader("dynamicResources: []\n---\ndynamicResources: []\n"),
			wantErr: []string{"more than one YAML document"}},
		{name: "malformed dynamic resource",
			cfg:     strings.NewReader("dynamicResources:\n- widgets.v1alpha1.example.com\n- foo\n"),
			wantErr: []string{`dynamicResources[1]: dynamic resource "foo": want <plural>.<version>.<group>`}},
		{name: "bad version",
			cfg:     strings.NewReader("dynamicResources: [widgets.1.example.com]\n"),
			wantErr: []string{`dynamicResources[0]: dynamic resource "widgets.1.example.com": version "1"`}},
		{name: "core resource",
			cfg:     strings.NewReader("dynamicResources: [pods.v1]\n"),
			wantErr: []string{`dynamicResources[0]: dynamic resource "pods.v1"`}},
		{name: "duplicate",
			cfg:     strings.NewReader("dynamicResources:\n- widgets.v1alpha1.example.com\n- gadgets.v2.gadgets.example.org\n- widgets.v1alpha1.example.com\n"),
			wantErr: []string{`dynamicResources[2]: "widgets.v1alpha1.example.com" is already listed at dynamicResources[0]`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, err := defaulthandler.New(t.Context(), newFakeCache(t), tt.cfg, nil)
			if len(tt.wantErr) > 0 {
				if err == nil {
					t.Fatalf("New succeeded, want an error containing %q", tt.wantErr)
				}
				for _, s := range tt.wantErr {
					if !strings.Contains(err.Error(), s) {
						t.Errorf("error %q does not contain %q", err, s)
					}
				}
				if h != nil {
					t.Errorf("New returned a handler with its error")
				}
				return
			}
			if err != nil {
				t.Fatalf("New: %v", err)
			}
			if got := h.DynamicResources(); !slices.Equal(got, tt.want) {
				t.Errorf("DynamicResources() = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestNewWithoutCache(t *testing.T) {
	t.Run("New", func(t *testing.T) {
		if _, err := defaulthandler.New(t.Context(), nil, nil, nil); err == nil {
			t.Error("New(nil cache) succeeded")
		}
	})
	t.Run("Factory", func(t *testing.T) {
		h, err := defaulthandler.Factory(t.Context(), nil, nil, nil)
		if err == nil {
			t.Error("Factory(nil cache) succeeded")
		}
		// A nil *Handler inside the interface would not compare equal to nil.
		if h != nil {
			t.Errorf("Factory returned %#v with its error, want a nil Interface", h)
		}
	})
}

func TestDynamicResourcesReturnsACopy(t *testing.T) {
	h, err := defaulthandler.NewWithArgs(newFakeCache(t), defaulthandler.Args{DynamicResources: []string{"widgets.v1alpha1.example.com"}})
	if err != nil {
		t.Fatal(err)
	}
	h.DynamicResources()[0].Resource = "changed"
	if got := h.DynamicResources(); !slices.Equal(got, []schema.GroupVersionResource{widgets}) {
		t.Errorf("DynamicResources() = %v after the caller changed a returned slice", got)
	}
}

func TestCache(t *testing.T) {
	fc := newFakeCache(t)
	h, err := defaulthandler.New(t.Context(), fc, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := h.Cache(); got != fc {
		t.Errorf("Cache() = %v, want the cache given to New", got)
	}
}

// The factory, run through a registry as the command runs it.
func TestFactory(t *testing.T) {
	reg := eventhandlers.NewRegistry()
	if err := reg.Register(defaulthandler.Name, defaulthandler.Factory); err != nil {
		t.Fatal(err)
	}
	t.Run("builds a Handler", func(t *testing.T) {
		fc := newFakeCache(t)
		cfg := strings.NewReader("dynamicResources: [widgets.v1alpha1.example.com]\n")
		i, err := eventhandlers.NewEventHandler(t.Context(), reg, defaulthandler.Name, fc, cfg, nil)
		if err != nil {
			t.Fatalf("NewEventHandler: %v", err)
		}
		h, ok := i.(*defaulthandler.Handler)
		if !ok {
			t.Fatalf("NewEventHandler returned %T, want *defaulthandler.Handler", i)
		}
		if h.Cache() != fc {
			t.Error("handler does not use the given cache")
		}
		r, ok := i.(eventhandlers.DynamicResourceRequester)
		if !ok {
			t.Fatal("handler is not a DynamicResourceRequester")
		}
		if got := r.DynamicResources(); !slices.Equal(got, []schema.GroupVersionResource{widgets}) {
			t.Errorf("DynamicResources() = %v: config not passed through", got)
		}
	})
	t.Run("config errors name the handler", func(t *testing.T) {
		_, err := eventhandlers.NewEventHandler(t.Context(), reg, defaulthandler.Name, newFakeCache(t), strings.NewReader("bogus: 1\n"), nil)
		if err == nil || !strings.Contains(err.Error(), `"default"`) || !strings.Contains(err.Error(), "bogus") {
			t.Errorf("error = %v, want it to name the handler and the field", err)
		}
	})
}
