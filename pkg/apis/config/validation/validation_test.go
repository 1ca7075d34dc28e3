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

	"k8s.io/utils/ptr"

	"github.com/batch-scheduler/batch-scheduler/pkg/apis/config"
)

// A configuration built in code (an embedder's) is held to the same
// rules as a file, with field paths.
func TestValidateSchedulerConfiguration(t *testing.T) {
	valid := func() *config.SchedulerConfiguration {
		return &config.SchedulerConfiguration{
			Parallelism: 16, PodInitialBackoffSeconds: 1, PodMaxBackoffSeconds: 10,
			EventHandlers: []config.EventHandler{{Name: "default"}},
			Profiles: []config.Profile{{
				SchedulerName: "batch-scheduler",
				Plugins:       &config.Plugins{Score: &config.PluginSet{Enabled: []config.Plugin{{Name: "X", Weight: 2}}}},
			}},
		}
	}
	if errs := ValidateSchedulerConfiguration(valid()); len(errs) != 0 {
		t.Fatalf("a valid configuration: %v", errs)
	}
	for _, tt := range []struct {
		name   string
		change func(*config.SchedulerConfiguration)
		want   []string
	}{
		{"tuning", func(c *config.SchedulerConfiguration) {
			c.Parallelism, c.PodInitialBackoffSeconds, c.PercentageOfNodesToScore = 0, 20, ptr.To[int32](150)
		}, []string{"parallelism", "podMaxBackoffSeconds", "percentageOfNodesToScore"}},
		{"handler names", func(c *config.SchedulerConfiguration) {
			c.EventHandlers = append(c.EventHandlers, config.EventHandler{Name: "default"}, config.EventHandler{})
		}, []string{"eventHandlers[1].name", "eventHandlers[2].name"}},
		{"informer", func(c *config.SchedulerConfiguration) {
			c.CustomInformers = []config.CustomInformer{{Name: "Not_A_Label"}}
		}, []string{"customInformers[0].name", "customInformers[0].resource", "customInformers[0].source"}},
		{"weights and stars", func(c *config.SchedulerConfiguration) {
			c.Profiles[0].Plugins.Filter = &config.PluginSet{Enabled: []config.Plugin{{Name: "*"}, {Name: "Y", Weight: 3}}}
			c.Profiles[0].Plugins.MultiPoint = &config.PluginSet{Enabled: []config.Plugin{{Name: "Z", Weight: 3}}}
		}, []string{"profiles[0].plugins.filter.enabled[0].name", "profiles[0].plugins.filter.enabled[1].weight"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := valid()
			tt.change(c)
			errs := ValidateSchedulerConfiguration(c)
			var got []string
			for _, e := range errs {
				got = append(got, e.Field)
			}
			if len(got) != len(tt.want) {
				t.Fatalf("errors at %q, want at %q (%v)", got, tt.want, errs)
			}
			for i := range got {
				if got[i] != tt.want[i] {
					t.Errorf("error %d at %q, want %q (%v)", i, got[i], tt.want[i], errs[i])
				}
			}
		})
	}
}
