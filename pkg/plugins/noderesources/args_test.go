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

package noderesources

import (
	"context"
	"reflect"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"

	configapi "github.com/batch-scheduler/batch-scheduler/pkg/apis/config"
)

func TestArgsDecoding(t *testing.T) {
	defaults := DefaultArgs()
	tests := []struct {
		name    string
		args    string
		want    Args
		wantErr string
	}{
		{name: "none", args: "", want: defaults},
		{name: "empty map", args: "{}", want: defaults},
		{name: "most allocated", args: "scoringStrategy: MostAllocated",
			want: Args{ScoringStrategy: MostAllocated, Resources: defaults.Resources}},
		{name: "explicit least allocated", args: "scoringStrategy: LeastAllocated", want: defaults},
		{name: "resources replace the defaults",
			args: "resources:\n- name: nvidia.com/gpu\n  weight: 5\n- name: cpu\n",
			want: Args{ScoringStrategy: LeastAllocated, Resources: []ResourceWeight{{Name: "nvidia.com/gpu", Weight: 5}, {Name: v1.ResourceCPU, Weight: 1}}}},
		{name: "weight 0 means 1", args: "resources: [{name: memory, weight: 0}]",
			want: Args{ScoringStrategy: LeastAllocated, Resources: []ResourceWeight{{Name: v1.ResourceMemory, Weight: 1}}}},
		{name: "empty resources mean the defaults", args: "resources: []", want: defaults},
		{name: "max weight", args: "resources: [{name: pods, weight: 100}, {name: ephemeral-storage, weight: 1}, {name: hugepages-2Mi}]",
			want: Args{ScoringStrategy: LeastAllocated, Resources: []ResourceWeight{{Name: v1.ResourcePods, Weight: 100}, {Name: v1.ResourceEphemeralStorage, Weight: 1}, {Name: "hugepages-2Mi", Weight: 1}}}},

		{name: "unknown strategy", args: "scoringStrategy: Balanced",
			wantErr: `NodeResourcesFit args: scoringStrategy: unknown strategy "Balanced" (want LeastAllocated or MostAllocated)`},
		{name: "strategy is case sensitive", args: "scoringStrategy: mostallocated", wantErr: "scoringStrategy: unknown strategy"},
		{name: "weight too high", args: "resources: [{name: cpu, weight: 101}]",
			wantErr: "NodeResourcesFit args: resources[0].weight: must be between 1 and 100, got 101"},
		{name: "negative weight", args: "resources: [{name: cpu}, {name: memory, weight: -1}]",
			wantErr: "resources[1].weight: must be between 1 and 100, got -1"},
		{name: "duplicate", args: "resources: [{name: cpu}, {name: memory}, {name: cpu, weight: 2}]",
			wantErr: `resources[2].name: resource "cpu" is listed more than once`},
		{name: "missing name", args: "resources: [{weight: 2}]", wantErr: "resources[0].name: required"},
		{name: "invalid name", args: "resources: [{name: 'not a name!'}]",
			wantErr: `resources[0].name: "not a name!" is not a valid resource name`},
		{name: "unknown field", args: "strategy: MostAllocated", wantErr: "NodeResourcesFit args: line 1: field strategy not found"},
		// kube-scheduler's shape, as a KubeSchedulerConfiguration profile
		// writes it.
		{name: "kube-scheduler's shape", args: "scoringStrategy:\n  type: MostAllocated\n  resources:\n  - {name: cpu, weight: 3}\n  - {name: nvidia.com/gpu, weight: 1}\n",
			want: Args{ScoringStrategy: MostAllocated, Resources: []ResourceWeight{{Name: v1.ResourceCPU, Weight: 3}, {Name: "nvidia.com/gpu", Weight: 1}}}},
		{name: "kube-scheduler's shape, type only", args: "scoringStrategy: {type: MostAllocated}",
			want: Args{ScoringStrategy: MostAllocated, Resources: defaults.Resources}},
		{name: "kube-scheduler's shape, defaults", args: "scoringStrategy: {}", want: defaults},
		{name: "kube-scheduler's RequestedToCapacityRatio", args: "scoringStrategy:\n  type: RequestedToCapacityRatio\n  requestedToCapacityRatio:\n    shape: [{utilization: 0, score: 10}]\n",
			wantErr: "NodeResourcesFit args: line 4: scoringStrategy.requestedToCapacityRatio is not supported (types: LeastAllocated, MostAllocated)"},
		{name: "kube-scheduler's RequestedToCapacityRatio type alone", args: "scoringStrategy: {type: RequestedToCapacityRatio}",
			wantErr: `scoringStrategy: unknown strategy "RequestedToCapacityRatio"`},
		{name: "kube-scheduler's ignoredResources", args: "ignoredResources: [example.com/foo]\nscoringStrategy: {type: LeastAllocated}",
			wantErr: "NodeResourcesFit args: line 1: field ignoredResources not found"},
		{name: "kube-scheduler's shape, unknown field", args: "scoringStrategy: {typ: MostAllocated}", wantErr: "field typ not found"},
		{name: "resources in both places", args: "resources: [{name: cpu}]\nscoringStrategy: {resources: [{name: memory}]}",
			wantErr: "resources are given twice, beside scoringStrategy and in it"},
		{name: "unknown resource field", args: "resources: [{name: cpu, wieght: 2}]", wantErr: "field wieght not found"},
		{name: "wrong type", args: "resources: cpu", wantErr: "NodeResourcesFit args:"},
		{name: "weight not a number", args: "resources: [{name: cpu, weight: heavy}]", wantErr: "NodeResourcesFit args:"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := New(context.Background(), configapi.NewRawArgs("", []byte(tt.args)), nil)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("New(%q) error = %v, want one containing %q", tt.args, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("New(%q): %v", tt.args, err)
			}
			if got := p.(*Fit).Args(); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("args = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestNewWithArgs(t *testing.T) {
	in := Args{Resources: []ResourceWeight{{Name: v1.ResourceCPU}}}
	f, err := NewWithArgs(in)
	if err != nil {
		t.Fatal(err)
	}
	want := Args{ScoringStrategy: LeastAllocated, Resources: []ResourceWeight{{Name: v1.ResourceCPU, Weight: 1}}}
	if got := f.Args(); !reflect.DeepEqual(got, want) {
		t.Errorf("Args = %+v, want %+v", got, want)
	}
	if in.Resources[0].Weight != 0 {
		t.Error("defaulting changed the caller's args")
	}
	got := f.Args()
	got.Resources[0].Weight = 50
	if f.Args().Resources[0].Weight != 1 {
		t.Error("Args shares its slice with the plugin")
	}
	if _, err := NewWithArgs(Args{ScoringStrategy: "X"}); err == nil || !strings.Contains(err.Error(), "NodeResourcesFit args: scoringStrategy") {
		t.Errorf("bad strategy: %v", err)
	}
	bad := Args{ScoringStrategy: LeastAllocated}
	if err := Validate(&bad); err == nil || !strings.Contains(err.Error(), "resources: at least one") {
		t.Errorf("Validate of no resources = %v", err)
	}
	zero := Args{ScoringStrategy: LeastAllocated, Resources: []ResourceWeight{{Name: "cpu"}}}
	if err := Validate(&zero); err == nil || !strings.Contains(err.Error(), "resources[0].weight") {
		t.Errorf("Validate of an undefaulted weight = %v", err)
	}
}
