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
	"testing"

	configapi "github.com/batch-scheduler/batch-scheduler/pkg/apis/config"
)

// Settings written in flow style, on the line of their key and inside
// another flow mapping, reach their owner as one document that decodes
// strictly.
func TestFlowStyleRawArgs(t *testing.T) {
	f, err := Parse("t.yaml", []byte(`apiVersion: batch-scheduler.io/v1alpha1
kind: SchedulerConfiguration
eventHandlers:
- name: two-level
  args: {framework: batch, evictOnRevoke: true}
customInformers:
- name: allocator
  resource: Grant
  source: {http: {url: "http://127.0.0.1:1/x"}}
- name: vms
  resource: ExternalWorkload
  source: {http: {url: "http://127.0.0.1:2/y"}}
`))
	if err != nil {
		t.Fatal(err)
	}
	for i, ci := range f.CustomInformers() {
		if v, ok := ci.SourceArgs.(*configapi.HTTPSourceArgs); !ok || v.URL == "" {
			t.Errorf("informer %d: source args decode to %#v", i, ci.SourceArgs)
		}
	}
	var h struct {
		Framework     string `yaml:"framework"`
		EvictOnRevoke bool   `yaml:"evictOnRevoke"`
	}
	raw := f.HandlerArgs("two-level")
	if raw == nil {
		t.Fatal("no handler args")
	}
	if err := DecodeStrict(raw, &h); err != nil || h.Framework != "batch" || !h.EvictOnRevoke {
		t.Errorf("handler args decode to %+v, %v", h, err)
	}
}
