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

package tenancy

import (
	"fmt"
	"maps"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
)

const gpu v1.ResourceName = "nvidia.com/gpu"

// queueObj is a cluster-scoped queue named q with spec (none when nil).
func queueObj(spec any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"metadata": map[string]any{"name": "q", "resourceVersion": "1"},
	}}
	if spec != nil {
		u.Object["spec"] = spec
	}
	return u
}

// diffQueueSpec describes how got differs from want, or returns "". Nil
// and empty amounts are the same (nothing guaranteed, nothing limited);
// Err is compared by the caller.
func diffQueueSpec(got, want *framework.QueueSpec) string {
	var d []string
	if got.Name != want.Name || got.Parent != want.Parent || got.Source != want.Source || got.API != want.API {
		d = append(d, fmt.Sprintf("name %q parent %q source %q API %q, want %q %q %q %q",
			got.Name, got.Parent, got.Source, got.API, want.Name, want.Parent, want.Source, want.API))
	}
	if got.Weight != want.Weight {
		d = append(d, fmt.Sprintf("weight %d, want %d", got.Weight, want.Weight))
	}
	if got.Borrow != want.Borrow || got.Lend != want.Lend || got.Reclaimable != want.Reclaimable {
		d = append(d, fmt.Sprintf("borrow %v lend %v reclaimable %v, want %v %v %v",
			got.Borrow, got.Lend, got.Reclaimable, want.Borrow, want.Lend, want.Reclaimable))
	}
	if !maps.Equal(got.Guarantee, want.Guarantee) {
		d = append(d, fmt.Sprintf("guarantee %v, want %v", got.Guarantee, want.Guarantee))
	}
	if !maps.Equal(got.Limit, want.Limit) {
		d = append(d, fmt.Sprintf("limit {%v}, want {%v}", got.Limit, want.Limit))
	}
	return strings.Join(d, "; ")
}

type queueSpecTest struct {
	name string
	spec any
	// want is compared when wantErr is empty; wantErr are substrings of
	// spec.Err.
	want    *framework.QueueSpec
	wantErr []string
}

func runQueueSpecTests(t *testing.T, read func(*unstructured.Unstructured) *framework.QueueSpec, source string, tests []queueSpecTest) {
	t.Helper()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := read(queueObj(tt.spec))
			if got.Name != "q" || got.Source != source {
				t.Errorf("name %q source %q, want %q %q", got.Name, got.Source, "q", source)
			}
			if len(tt.wantErr) > 0 {
				if got.Err == nil {
					t.Fatalf("spec %+v, want an error", got)
				}
				for _, w := range append(tt.wantErr, source+" is invalid") {
					if !strings.Contains(got.Err.Error(), w) {
						t.Errorf("error %q does not contain %q", got.Err, w)
					}
				}
				return
			}
			if got.Err != nil {
				t.Fatalf("error %v", got.Err)
			}
			want := *tt.want
			want.Name, want.Source = "q", source
			if d := diffQueueSpec(got, &want); d != "" {
				t.Error(d)
			}
		})
	}
}

// defaults is the spec of a queue that says nothing but its name.
func defaults(change func(*framework.QueueSpec)) *framework.QueueSpec {
	s := &framework.QueueSpec{Weight: 1, Borrow: true, Lend: true, Reclaimable: true}
	if change != nil {
		change(s)
	}
	return s
}

func TestOwnQueueSpec(t *testing.T) {
	gi := int64(1 << 30)
	runQueueSpecTests(t, OwnQueueSpec, "Queue q", []queueSpecTest{
		{name: "no spec", want: defaults(nil)},
		{name: "an empty spec", spec: map[string]any{}, want: defaults(nil)},
		{name: "weight 0 is the default", spec: map[string]any{"weight": int64(0)}, want: defaults(nil)},
		{
			name: "every field",
			spec: map[string]any{
				"parent": "org", "weight": int64(5),
				"guaranteed":  map[string]any{"cpu": "2", "memory": "4Gi"},
				"limit":       map[string]any{"cpu": "8", string(gpu): "2"},
				"borrow":      false,
				"lend":        false,
				"reclaimable": false,
			},
			want: &framework.QueueSpec{Parent: "org", Weight: 5,
				Guarantee: framework.ResourceAmounts{v1.ResourceCPU: 2000, v1.ResourceMemory: 4 * gi},
				Limit:     framework.ResourceAmounts{v1.ResourceCPU: 8000, gpu: 2}},
		},
		{
			name: "a limit naming a resource at zero limits it to zero",
			spec: map[string]any{"limit": map[string]any{"cpu": "4", string(gpu): "0"}},
			want: defaults(func(s *framework.QueueSpec) {
				s.Limit = framework.ResourceAmounts{v1.ResourceCPU: 4000, gpu: 0}
			}),
		},
		{
			name: "pods in a limit are ignored",
			spec: map[string]any{"limit": map[string]any{"cpu": "4", "pods": "10"}, "guaranteed": map[string]any{"pods": "5"}},
			want: defaults(func(s *framework.QueueSpec) {
				s.Limit = framework.ResourceAmounts{v1.ResourceCPU: 4000}
			}),
		},
		{
			name: "a limit of pods alone limits nothing",
			spec: map[string]any{"limit": map[string]any{"pods": "0"}},
			want: defaults(nil),
		},
		{name: "weight a string", spec: map[string]any{"weight": "heavy"}, wantErr: []string{"spec.weight"}},
		{name: "weight negative", spec: map[string]any{"weight": int64(-1)}, wantErr: []string{"spec.weight", "-1"}},
		{name: "weight too large", spec: map[string]any{"weight": int64(1000001)}, wantErr: []string{"spec.weight", "1000001"}},
		{name: "a quantity that is none", spec: map[string]any{"limit": map[string]any{"cpu": "abc"}}, wantErr: []string{"spec.limit"}},
		{name: "a negative quantity", spec: map[string]any{"guaranteed": map[string]any{"cpu": "-1"}}, wantErr: []string{"spec.guaranteed[cpu]"}},
		{name: "a limit that is not a map", spec: map[string]any{"limit": "lots"}, wantErr: []string{"spec.limit"}},
		{name: "reclaimable a string", spec: map[string]any{"reclaimable": "yes"}, wantErr: []string{"spec.reclaimable"}},
		{name: "borrow a number", spec: map[string]any{"borrow": int64(1)}, wantErr: []string{"spec.borrow"}},
		{name: "a spec that is not a map", spec: "everything", wantErr: []string{"spec"}},
		{name: "its own parent", spec: map[string]any{"parent": "q"}, wantErr: []string{"spec.parent"}},
		{
			name:    "a guarantee above the limit",
			spec:    map[string]any{"guaranteed": map[string]any{"cpu": "8"}, "limit": map[string]any{"cpu": "4"}},
			wantErr: []string{"spec.guaranteed[cpu]"},
		},
	})
}

func TestVolcanoQueueSpec(t *testing.T) {
	gi := int64(1 << 30)
	runQueueSpecTests(t, VolcanoQueueSpec, "Queue.scheduling.volcano.sh q", []queueSpecTest{
		{name: "no spec", want: defaults(nil)},
		{name: "weight 0 is the default", spec: map[string]any{"weight": int64(0)}, want: defaults(nil)},
		{
			name: "every field",
			spec: map[string]any{
				"weight":      int64(3),
				"capability":  map[string]any{"cpu": "8", "memory": "16Gi"},
				"guarantee":   map[string]any{"resource": map[string]any{"cpu": "2"}},
				"reclaimable": false,
				"parent":      "org",
			},
			want: defaults(func(s *framework.QueueSpec) {
				s.Weight, s.Parent, s.Reclaimable = 3, "org", false
				s.Limit = framework.ResourceAmounts{v1.ResourceCPU: 8000, v1.ResourceMemory: 16 * gi}
				s.Guarantee = framework.ResourceAmounts{v1.ResourceCPU: 2000}
			}),
		},
		{name: "the root as parent", spec: map[string]any{"parent": "root"}, want: defaults(nil)},
		{
			name: "deserved counts where it is larger than the guarantee",
			spec: map[string]any{
				"guarantee": map[string]any{"resource": map[string]any{"cpu": "2", "memory": "8Gi"}},
				"deserved":  map[string]any{"cpu": "4", "memory": "1Gi", string(gpu): "1"},
			},
			want: defaults(func(s *framework.QueueSpec) {
				s.Guarantee = framework.ResourceAmounts{v1.ResourceCPU: 4000, v1.ResourceMemory: 8 * gi, gpu: 1}
			}),
		},
		{
			name: "a capability naming a resource at zero limits it to zero",
			spec: map[string]any{"capability": map[string]any{string(gpu): "0"}},
			want: defaults(func(s *framework.QueueSpec) { s.Limit = framework.ResourceAmounts{gpu: 0} }),
		},
		{
			name: "pods in a capability are ignored; numbers are quantities",
			spec: map[string]any{"capability": map[string]any{"pods": int64(10), "cpu": float64(1.5), string(gpu): int64(2)}},
			want: defaults(func(s *framework.QueueSpec) { s.Limit = framework.ResourceAmounts{v1.ResourceCPU: 1500, gpu: 2} }),
		},
		{name: "weight a string", spec: map[string]any{"weight": "heavy"}, wantErr: []string{"spec.weight"}},
		{name: "weight negative", spec: map[string]any{"weight": int64(-1)}, wantErr: []string{"spec.weight", "-1"}},
		{name: "weight too large", spec: map[string]any{"weight": int64(1000001)}, wantErr: []string{"spec.weight", "1000001"}},
		{name: "a quantity that is none", spec: map[string]any{"capability": map[string]any{"cpu": "abc"}}, wantErr: []string{"spec.capability[cpu]"}},
		{name: "a negative quantity", spec: map[string]any{"capability": map[string]any{"cpu": "-1"}}, wantErr: []string{"spec.capability[cpu]", "negative"}},
		{
			name:    "a negative guarantee",
			spec:    map[string]any{"guarantee": map[string]any{"resource": map[string]any{"memory": "-1Gi"}}},
			wantErr: []string{"spec.guarantee.resource[memory]", "negative"},
		},
		{name: "a quantity that is a list", spec: map[string]any{"deserved": map[string]any{"cpu": []any{"1"}}}, wantErr: []string{"spec.deserved[cpu]"}},
		{name: "a capability that is not a map", spec: map[string]any{"capability": "lots"}, wantErr: []string{"spec.capability"}},
		{name: "reclaimable a string", spec: map[string]any{"reclaimable": "yes"}, wantErr: []string{"spec.reclaimable"}},
		{name: "parent a number", spec: map[string]any{"parent": int64(3)}, wantErr: []string{"spec.parent"}},
		{
			name:    "every problem is named",
			spec:    map[string]any{"weight": int64(-2), "capability": map[string]any{"cpu": "-1"}, "reclaimable": "no"},
			wantErr: []string{"spec.weight", "spec.capability[cpu]", "spec.reclaimable"},
		},
	})
}
