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

package interpodaffinity

import (
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
	"github.com/batch-scheduler/batch-scheduler/pkg/plugins/internal/testutil"
)

// preferred adds a preferred affinity (anti false) or anti-affinity term
// for app=app within key, of weight w, to pod.
func preferred(pod *v1.Pod, anti bool, app, key string, w int32) *v1.Pod {
	t := v1.WeightedPodAffinityTerm{Weight: w, PodAffinityTerm: v1.PodAffinityTerm{
		LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}}, TopologyKey: key}}
	if pod.Spec.Affinity == nil {
		pod.Spec.Affinity = &v1.Affinity{}
	}
	a := pod.Spec.Affinity
	if anti {
		if a.PodAntiAffinity == nil {
			a.PodAntiAffinity = &v1.PodAntiAffinity{}
		}
		a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution = append(a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution, t)
	} else {
		if a.PodAffinity == nil {
			a.PodAffinity = &v1.PodAffinity{}
		}
		a.PodAffinity.PreferredDuringSchedulingIgnoredDuringExecution = append(a.PodAffinity.PreferredDuringSchedulingIgnoredDuringExecution, t)
	}
	return pod
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
		{name: "nothing to score", pod: pod("p", "web").Obj(), existing: map[string][]*v1.Pod{"n1": {pod("db", "db").Obj()}}, wantSkip: true},
		{
			name:     "preferred affinity to a zone",
			pod:      preferred(pod("p", "web").Obj(), false, "db", zoneKey, 10),
			existing: map[string][]*v1.Pod{"n1": {pod("db", "db").Obj()}},
			want:     []int64{100, 100, 0, 0},
		},
		{
			name:     "the matching pod is on a node that is not feasible: its zone still counts",
			pod:      preferred(pod("p", "web").Obj(), false, "db", zoneKey, 10),
			existing: map[string][]*v1.Pod{"n1": {pod("db", "db").Obj()}},
			feasible: []int{1, 2},
			want:     []int64{100, 0},
		},
		{
			name:     "preferred anti-affinity by hostname",
			pod:      preferred(pod("p", "web").Obj(), true, "web", hostKey, 5),
			existing: map[string][]*v1.Pod{"n1": {pod("w", "web").Obj()}},
			want:     []int64{0, 100, 100, 100},
		},
		{
			// zone a +10, host n2 -4: 10, 6, 0, 0.
			name:     "both, scaled between the lowest and the highest",
			pod:      preferred(preferred(pod("p", "web").Obj(), false, "db", zoneKey, 10), true, "web", hostKey, 4),
			existing: map[string][]*v1.Pod{"n1": {pod("db", "db").Obj()}, "n2": {pod("w", "web").Obj()}},
			want:     []int64{100, 60, 0, 0},
		},
		{
			name:     "an existing pod's required affinity to the pod counts 1",
			pod:      pod("p", "web").Obj(),
			existing: map[string][]*v1.Pod{"n3": {withTerms(pod("x", "").Obj(), []affTerm{{app: "web", key: zoneKey}}, nil)}},
			want:     []int64{0, 0, 100, 0},
		},
		{
			name:     "an existing pod's preferred anti-affinity to the pod",
			pod:      pod("p", "web").Obj(),
			existing: map[string][]*v1.Pod{"n1": {preferred(pod("x", "").Obj(), true, "web", zoneKey, 7)}},
			want:     []int64{0, 0, 100, 100},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pl := newPlugin(t)
			var nodes []*framework.NodeInfo
			for _, n := range testNodes() {
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
