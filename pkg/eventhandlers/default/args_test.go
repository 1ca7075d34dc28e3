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
	"slices"
	"strings"
	"testing"

	configapi "github.com/batch-scheduler/batch-scheduler/pkg/apis/config"
	"github.com/batch-scheduler/batch-scheduler/pkg/config"
	"github.com/batch-scheduler/batch-scheduler/pkg/dialects"
	defaulthandler "github.com/batch-scheduler/batch-scheduler/pkg/eventhandlers/default"
)

// The configuration API types the args of the handler under the name it
// registers, and knows the owner kinds of the built-in dialects.
func TestArgsAreTyped(t *testing.T) {
	if !config.HasTypedHandlerArgs(defaulthandler.Name) {
		t.Errorf("pkg/config has no typed args for handler %q", defaulthandler.Name)
	}
	if got, want := strings.Join(configapi.OwnerGangKinds, ", "), dialects.Builtin().OwnerNames(); got != want {
		t.Errorf("configapi.OwnerGangKinds = %s, want the built-in dialects' owner kinds %s", got, want)
	}
}

// The factory takes the args a file's Parse typed, and typed args built
// in code.
func TestFactoryTakesTypedArgs(t *testing.T) {
	f, err := config.Parse("c.yaml", []byte(`apiVersion: batch-scheduler.io/v1alpha1
kind: SchedulerConfiguration
eventHandlers:
- name: default
  args:
    dynamicResources: [widgets.v1alpha1.example.com]
`))
	if err != nil {
		t.Fatal(err)
	}
	h, err := defaulthandler.Factory(t.Context(), newFakeCache(t), f.HandlerArgs(defaulthandler.Name), nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := h.(*defaulthandler.Handler).DynamicResources(); len(got) != 1 || got[0].Resource != "widgets" {
		t.Errorf("dynamic resources from the file = %v", got)
	}
	r, err := config.NewHandlerArgsReader(&defaulthandler.Args{DynamicResources: []string{"gadgets.v1.example.com", "widgets.v1.example.com"}})
	if err != nil {
		t.Fatal(err)
	}
	h, err = defaulthandler.Factory(t.Context(), newFakeCache(t), r, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, gvr := range h.(*defaulthandler.Handler).DynamicResources() {
		names = append(names, gvr.Resource)
	}
	if !slices.Equal(names, []string{"gadgets", "widgets"}) {
		t.Errorf("dynamic resources built in code = %v", names)
	}
	r, _ = config.NewHandlerArgsReader(&defaulthandler.Args{ExternalWorkloadNodeLabel: "not a label"})
	if _, err := defaulthandler.Factory(t.Context(), newFakeCache(t), r, nil); err == nil || !strings.Contains(err.Error(), "externalWorkloadNodeLabel") {
		t.Errorf("a bad label built in code: error = %v, want it named", err)
	}
}
