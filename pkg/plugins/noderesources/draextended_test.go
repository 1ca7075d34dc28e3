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
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
	"github.com/batch-scheduler/batch-scheduler/pkg/plugins/internal/testutil"
	"github.com/batch-scheduler/batch-scheduler/pkg/plugins/pluginutil"
	st "github.com/batch-scheduler/batch-scheduler/pkg/testing"
)

// TestFilterDRAExtended: an extended resource the DynamicResources plugin
// found backed by DRA (pluginutil.DRAExtended) is not a shortage on a node
// that does not list it in its allocatable; a node that lists it serves it
// by its device plugin and is checked as before; without the plugin's
// word (disabled, or written for another pod) nothing changes.
func TestFilterDRAExtended(t *testing.T) {
	const gpu v1.ResourceName = "example.com/gpu"
	std := res{"cpu": "4", "memory": "8Gi", "pods": "10"}
	p := st.MakePod().Name("p").UID("uid-p").Req(res{"cpu": "1", gpu: "1"}).Obj()
	draFor := func(uid string) *framework.CycleState {
		state := framework.NewCycleState()
		state.Write(pluginutil.DRAExtendedKey, &pluginutil.DRAExtended{Pod: p.UID, Names: map[v1.ResourceName]bool{gpu: true}})
		if uid != string(p.UID) {
			state.Write(pluginutil.DRAExtendedKey, &pluginutil.DRAExtended{Pod: "uid-other", Names: map[v1.ResourceName]bool{gpu: true}})
		}
		return state
	}
	withGPUs := res{"cpu": "4", "memory": "8Gi", "pods": "10", gpu: "2"}
	tests := []struct {
		name  string
		pod   *v1.Pod
		state *framework.CycleState
		node  *framework.NodeInfo
		want  string // "" for a fit
	}{
		{name: "no DRA word: a shortage", pod: p, state: framework.NewCycleState(),
			node: testutil.NodeInfo(t, node(std)), want: "Insufficient example.com/gpu"},
		{name: "DRA-backed on a node without it", pod: p, state: draFor("uid-p"),
			node: testutil.NodeInfo(t, node(std))},
		{name: "word for another pod", pod: p, state: draFor("uid-other"),
			node: testutil.NodeInfo(t, node(std)), want: "Insufficient example.com/gpu"},
		{name: "device plugin node, used up", pod: p, state: draFor("uid-p"),
			node: testutil.NodeInfo(t, node(withGPUs), st.MakePod().Name("a").Req(res{gpu: "2"}).Obj()),
			want: "Insufficient example.com/gpu"},
		{name: "device plugin node with room", pod: p, state: draFor("uid-p"),
			node: testutil.NodeInfo(t, node(withGPUs))},
		{name: "DRA-backed, but the cpu is short", pod: p, state: draFor("uid-p"),
			node: testutil.NodeInfo(t, node(res{"cpu": "500m", "memory": "8Gi", "pods": "10"})), want: "Insufficient cpu"},
	}
	f := newFit(t, "")
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			job := &framework.Job{Pending: []*v1.Pod{tt.pod}}
			if s := f.PreFilter(t.Context(), tt.state, job); !s.IsSuccess() {
				t.Fatalf("PreFilter = %v", s)
			}
			for name, s := range map[string]*framework.Status{
				"Filter":        f.Filter(t.Context(), tt.state, tt.pod, tt.node),
				"PrepareFilter": f.PrepareFilter(t.Context(), tt.state, tt.pod)(t.Context(), tt.node),
			} {
				switch {
				case tt.want == "" && !s.IsSuccess():
					t.Errorf("%s = %v, want a fit", name, s)
				case tt.want != "" && (s.Code() != framework.Unschedulable || s.Message() != tt.want):
					t.Errorf("%s = %v, want Unschedulable %q", name, s, tt.want)
				}
			}
			// The requests PreFilter computed keep the resource.
			if got := requestsOf(tt.state, tt.pod).Scalar[gpu]; got != 1 {
				t.Errorf("the pod's requests lost %s: %d", gpu, got)
			}
		})
	}
}
