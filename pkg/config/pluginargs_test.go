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

	configapi "github.com/batch-scheduler/batch-scheduler/pkg/apis/config"
)

// A known plugin's args decode into its typed args, defaulted; an
// unknown plugin's stay raw at the file's lines; problems of typed args
// name the plugin and the line.
func TestTypedPluginArgs(t *testing.T) {
	const head = "apiVersion: batch-scheduler.io/v1alpha1\nkind: SchedulerConfiguration\nprofiles:\n- schedulerName: a\n  pluginConfig:\n"
	f, err := Parse("t.yaml", []byte(head+"  - name: TopologyAware\n    args: {maxPlacements: 3}\n  - name: Capacity\n  - name: Vendor\n    args:\n      zone: eu-1\n"))
	if err != nil {
		t.Fatal(err)
	}
	pcs := f.Profiles()[0].PluginConfig
	ta, ok := pcs[0].Args.(*configapi.TopologyAwareArgs)
	if !ok || ta.MaxPlacements != 3 || ta.MaxNarrowerPlacements != 2 || len(ta.Levels) != 3 {
		t.Errorf("TopologyAware args = %#v, want typed, maxPlacements 3 and the defaults", pcs[0].Args)
	}
	if ca, ok := pcs[1].Args.(*configapi.CapacityArgs); !ok || ca.StarvationAfter != "5m" {
		t.Errorf("Capacity without args = %#v, want its typed defaults", pcs[1].Args)
	}
	raw, ok := pcs[2].Args.(*configapi.RawArgs)
	if !ok || raw.Source != "t.yaml" {
		t.Fatalf("Vendor args = %#v, want raw args of t.yaml", pcs[2].Args)
	}
	var v struct {
		Zone string `yaml:"zone"`
	}
	if err := DecodeStrict(raw.Reader(), &v); err != nil || v.Zone != "eu-1" {
		t.Errorf("Vendor args decode to %+v, %v", v, err)
	}

	for _, tt := range []struct{ args, want string }{
		{"    args:\n      resources: [{name: cpu, weight: 101}]\n", "t.yaml: line 8: NodeResourcesFit args: resources[0].weight: must be between 1 and 100, got 101"},
		{"    args:\n      strategy: MostAllocated\n", "t.yaml: line 8: field strategy not found (NodeResourcesFit args)"},
		{"    args:\n      kind: TopologyAwareArgs\n", `line 8: kind is "TopologyAwareArgs", want "NodeResourcesFitArgs" (or leave it out) (NodeResourcesFit args)`},
		{"    args:\n      scoringStrategy:\n        type: MostAllocated\n        requestedToCapacityRatio: {}\n", "line 10: scoringStrategy.requestedToCapacityRatio is not supported"},
	} {
		_, err := Parse("t.yaml", []byte(head+"  - name: NodeResourcesFit\n"+tt.args))
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("args %q: error %v, want %q", tt.args, err, tt.want)
		}
	}
}

// Args built in code decode as the file's; unknown plugins' stay raw.
func TestDecodePluginArgs(t *testing.T) {
	obj, err := DecodePluginArgs("Reclaim", nil)
	if a, ok := obj.(*configapi.ReclaimArgs); err != nil || !ok || a.Below != configapi.ReclaimBelowFairShare {
		t.Errorf("Reclaim defaults = %#v, %v", obj, err)
	}
	_, err = DecodePluginArgs("Reclaim", configapi.NewRawArgs("r.yaml", []byte("\nbelow: Sometimes\n")))
	if err == nil || err.Error() != `Reclaim args: below: "Sometimes" is not one of FairShare, Guarantee` {
		t.Errorf("bad below: %v", err)
	}
	_, err = DecodePluginArgs("Reclaim", configapi.NewRawArgs("r.yaml", []byte("\nbelo: Guarantee\n")))
	if err == nil || err.Error() != "Reclaim args: r.yaml: line 2: field belo not found" {
		t.Errorf("unknown field: %v", err)
	}
	raw := configapi.NewRawArgs("r.yaml", []byte("x: 1\n"))
	if obj, err := DecodePluginArgs("Vendor", raw); err != nil || obj != raw {
		t.Errorf("vendor args = %#v, %v; want them unchanged", obj, err)
	}
}

// A duration YAML reads as a number is taken as its text: 0 turns
// Capacity's anti-starvation off, as "0" does; 5 has no unit and is
// refused by validation; a bool is refused at its line.
func TestDurationArgsWrittenAsNumbers(t *testing.T) {
	const head = "apiVersion: batch-scheduler.io/v1alpha1\nkind: SchedulerConfiguration\nprofiles:\n- schedulerName: a\n  pluginConfig:\n  - name: Capacity\n    args:\n"
	for _, v := range []string{"0", `"0"`} {
		f, err := Parse("t.yaml", []byte(head+"      starvationAfter: "+v+"\n"))
		if err != nil {
			t.Fatalf("starvationAfter: %s: %v", v, err)
		}
		if ca, ok := f.Profiles()[0].PluginConfig[0].Args.(*configapi.CapacityArgs); !ok || ca.StarvationAfter != "0" {
			t.Errorf("starvationAfter: %s gives %#v, want \"0\"", v, f.Profiles()[0].PluginConfig[0].Args)
		}
	}
	for v, want := range map[string]string{
		"5":    `t.yaml: line 8: Capacity args: starvationAfter: "5" is not a duration of 0 or more`,
		"true": "t.yaml: line 8: starvationAfter: expected a duration such as 30s or 5m, got a boolean (Capacity args)",
		"[1]":  "t.yaml: line 8: starvationAfter: expected a duration such as 30s or 5m, got a list (Capacity args)",
	} {
		_, err := Parse("t.yaml", []byte(head+"      starvationAfter: "+v+"\n"))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("starvationAfter: %s: error %v, want %q", v, err, want)
		}
	}
}
