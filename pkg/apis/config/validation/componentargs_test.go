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

package validation

import (
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/batch-scheduler/batch-scheduler/pkg/apis/config"
)

// The built-in handlers' and sources' typed args are checked with field
// paths under their entry; vendors' raw args are not.
func TestValidateComponentArgs(t *testing.T) {
	cfg := &config.SchedulerConfiguration{
		Parallelism: 16, PodInitialBackoffSeconds: 1, PodMaxBackoffSeconds: 10,
		EventHandlers: []config.EventHandler{
			{Name: "default", Args: &config.DefaultHandlerArgs{DynamicResources: []string{"w.v1.x", "w.v1.x", "bad"}, OwnerGangs: config.OwnerGangs{"Rays": true}}},
			{Name: "two-level", Args: &config.TwoLevelHandlerArgs{DefaultHandlerArgs: config.DefaultHandlerArgs{ExternalWorkloadNodeLabel: "a b"}}},
			{Name: "acme", Args: config.NewRawArgs("", []byte("anything: 1"))},
		},
		CustomInformers: []config.CustomInformer{
			{Name: "vms", Resource: "Node", SourceType: "http", SourceArgs: &config.HTTPSourceArgs{URL: "ftp://x", Path: "p", QPS: 1}},
			{Name: "inv", Resource: "Node", SourceType: "file", SourceArgs: &config.FileSourceArgs{}},
		},
	}
	errs := ValidateSchedulerConfiguration(cfg)
	want := []string{
		"eventHandlers[0].args.dynamicResources[1]", "eventHandlers[0].args.dynamicResources[2]", "eventHandlers[0].args.ownerGangs[Rays]",
		"eventHandlers[1].args.framework", "eventHandlers[1].args.externalWorkloadNodeLabel",
		"customInformers[0].source.http.url", "customInformers[0].source.http.path", "customInformers[0].source.http.burst",
		"customInformers[1].source.file.directory", "customInformers[1].source.file.pollInterval",
	}
	if len(errs) != len(want) {
		t.Fatalf("errors %v, want at %q", errs, want)
	}
	for i, e := range errs {
		if e.Field != want[i] {
			t.Errorf("error %d at %q, want %q (%v)", i, e.Field, want[i], e)
		}
	}
	if errs[3].Type != field.ErrorTypeRequired {
		t.Errorf("framework error = %v, want required", errs[3])
	}
}
