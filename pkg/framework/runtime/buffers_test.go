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

package runtime

import (
	"context"
	"reflect"
	"testing"

	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
)

// Successive FindFeasibleNodes and RunScorePlugins calls share pooled
// buffers: a call on fewer nodes than the one before, or with different
// verdicts, sees only its own nodes and its own plugins' results.
func TestPooledBuffersAcrossCalls(t *testing.T) {
	names := []string{"n1", "n2", "n3", "n4", "n5", "n6"}
	nodes := makeNodes(t, names...)
	reject := framework.NewStatus(framework.Unschedulable, "no")
	filter := &fakePlugin{name: "filter", filter: map[string]*framework.Status{"n1": reject, "n2": reject, "n3": reject}}
	score := map[string]int64{}
	for i, n := range names {
		score[n] = int64(10 * (i + 1))
	}
	var normalized [][]framework.NodeScore
	a := &fakePlugin{name: "a", score: score, normalize: func(s []framework.NodeScore) *framework.Status {
		normalized = append(normalized, append([]framework.NodeScore(nil), s...))
		return nil
	}}
	b := &fakePlugin{name: "b", score: score}
	f := mustFramework(t, baseRegistry(t, nil, filter, a, b),
		baseSpec(map[ExtensionPoint]PluginSet{FilterPoint: {{Name: "filter"}}, ScorePoint: {{Name: "a"}, {Name: "b", Weight: 2}}}), WithParallelism(2))
	ctx := context.Background()

	for _, tt := range []struct {
		nodes    []*framework.NodeInfo
		feasible []string
		rejected int
	}{
		{nodes, []string{"n4", "n5", "n6"}, 3},
		{nodes[:3], nil, 3},
		{nodes[4:], []string{"n5", "n6"}, 0},
		{nodes, []string{"n4", "n5", "n6"}, 3},
	} {
		feasible, d, err := f.FindFeasibleNodes(ctx, framework.NewCycleState(), testPod(), tt.nodes)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, n := range feasible {
			got = append(got, n.Name())
		}
		if !reflect.DeepEqual(got, tt.feasible) || d.Rejected() != tt.rejected {
			t.Fatalf("on %d nodes: feasible %v, %d rejected; want %v, %d", len(tt.nodes), got, d.Rejected(), tt.feasible, tt.rejected)
		}
	}

	for _, from := range []int{0, 3, 5, 0} {
		normalized = nil
		totals, s := f.RunScorePlugins(ctx, framework.NewCycleState(), testPod(), nodes[from:])
		if !s.IsSuccess() {
			t.Fatal(s)
		}
		var want, wantA []framework.NodeScore
		for _, n := range names[from:] {
			want = append(want, framework.NodeScore{Name: n, Score: 3 * score[n]})
			wantA = append(wantA, framework.NodeScore{Name: n, Score: score[n]})
		}
		if !reflect.DeepEqual(totals, want) {
			t.Errorf("from node %d: totals %v, want %v", from, totals, want)
		}
		if want := [][]framework.NodeScore{wantA}; !reflect.DeepEqual(normalized, want) {
			t.Errorf("from node %d: NormalizeScore saw %v, want %v", from, normalized, want)
		}
	}
}
