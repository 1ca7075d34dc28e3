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

package podtopologyspread

import (
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
	"github.com/batch-scheduler/batch-scheduler/pkg/plugins/internal/testutil"
)

// soft returns a ScheduleAnyway constraint over key selecting app=app.
func soft(key string, maxSkew int32, app string) v1.TopologySpreadConstraint {
	c := spread(key, maxSkew, app)
	c.WhenUnsatisfiable = v1.ScheduleAnyway
	return c
}

func TestScore(t *testing.T) {
	tests := []struct {
		name     string
		pod      *v1.Pod
		existing map[string][]*v1.Pod
		feasible []int // indexes of the feasible nodes; nil: all
		want     []int64
		wantSkip bool
	}{
		{name: "no constraints", pod: podWith("p", "x"), wantSkip: true},
		{name: "DoNotSchedule only", pod: podWith("p", "x", spread(zoneKey, 1, "x")), wantSkip: true},
		{
			// Domains a, b: weight ln 4. Raw: n1, n2 round(2 ln 4) = 3,
			// n3 round(ln 4) = 1, n4 ignored (no zone). Normalized
			// 100*(3+1-s)/3.
			name:     "zone",
			pod:      podWith("p", "x", soft(zoneKey, 1, "x")),
			existing: map[string][]*v1.Pod{"n1": many("e", "x", 2), "n3": many("f", "x", 1)},
			want:     []int64{33, 33, 100, 0},
		},
		{
			// 4 hostnames: weight ln 6. Raw: n1 round(2 ln 6 + 1) = 5,
			// n2 1, n3 round(ln 6 + 1) = 3, n4 1. Normalized 100*(5+1-s)/5.
			name:     "hostname",
			pod:      podWith("p", "x", soft(hostKey, 2, "x")),
			existing: map[string][]*v1.Pod{"n1": many("e", "x", 2), "n3": many("f", "x", 1)},
			want:     []int64{20, 100, 60, 100},
		},
		{
			// Only n2 and n3 are feasible, but zone a counts n1's pods.
			name:     "domains count pods on infeasible nodes",
			pod:      podWith("p", "x", soft(zoneKey, 1, "x")),
			existing: map[string][]*v1.Pod{"n1": many("e", "x", 2), "n3": many("f", "x", 1)},
			feasible: []int{1, 2},
			want:     []int64{33, 100},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pl := &PodTopologySpread{}
			var nodes []*framework.NodeInfo
			for _, n := range testNodes(false) {
				nodes = append(nodes, testutil.NodeInfo(t, n, tt.existing[n.Name]...))
			}
			state := framework.NewCycleState()
			if s := pl.PreFilterPod(t.Context(), state, tt.pod, nodes); !s.IsSuccess() && !s.IsSkip() {
				t.Fatalf("PreFilterPod = %v", s)
			}
			feasible := nodes
			if tt.feasible != nil {
				feasible = nil
				for _, i := range tt.feasible {
					feasible = append(feasible, nodes[i])
				}
			}
			s := pl.PreScore(t.Context(), state, tt.pod, feasible)
			if s.IsSkip() != tt.wantSkip {
				t.Fatalf("PreScore = %v, want skip %v", s, tt.wantSkip)
			}
			if tt.wantSkip {
				return
			}
			if !s.IsSuccess() {
				t.Fatalf("PreScore = %v", s)
			}
			scores := make([]framework.NodeScore, len(feasible))
			for i, n := range feasible {
				sc, st := pl.Score(t.Context(), state, tt.pod, n)
				if !st.IsSuccess() {
					t.Fatalf("Score(%s) = %v", n.Name(), st)
				}
				scores[i] = framework.NodeScore{Name: n.Name(), Score: sc}
			}
			if st := pl.NormalizeScore(t.Context(), state, tt.pod, scores); !st.IsSuccess() {
				t.Fatalf("NormalizeScore = %v", st)
			}
			var got []int64
			for _, s := range scores {
				got = append(got, s.Score)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("scores = %v, want %v", got, tt.want)
			}
		})
	}
}
