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

// localPlugin is a fakePlugin that says it is framework.NodeLocal.
type localPlugin struct{ *fakePlugin }

func (localPlugin) NodeLocal() {}

// TestRawScores checks that a ranking kept as raw scores gives, after
// nodes are scored again or dropped, the totals RunScorePlugins gives on
// the nodes as they are then.
func TestRawScores(t *testing.T) {
	ctx := context.Background()
	nodes := makeNodes(t, "n1", "n2", "n3")
	a := &fakePlugin{name: "a", score: map[string]int64{"n1": 10, "n2": 40, "n3": 20}, normalize: scaleTo100}
	b := &fakePlugin{name: "b", score: map[string]int64{"n1": 1, "n2": 2, "n3": 3}}
	f := mustFramework(t, baseRegistry(t, nil, a, localPlugin{b}),
		baseSpec(map[ExtensionPoint]PluginSet{ScorePoint: {{Name: "a"}, {Name: "b", Weight: 2}}}))
	state := framework.NewCycleState()
	fresh := func(nodes []*framework.NodeInfo) []framework.NodeScore {
		t.Helper()
		scores, s := f.RunScorePlugins(ctx, state, testPod(), nodes)
		if !s.IsSuccess() {
			t.Fatalf("RunScorePlugins: %v", s)
		}
		return scores
	}
	totals := func(nodes []*framework.NodeInfo, raw *RawScores) []framework.NodeScore {
		t.Helper()
		scores, s := f.Totals(ctx, state, testPod(), nodes, raw)
		if !s.IsSuccess() {
			t.Fatalf("Totals: %v", s)
		}
		return scores
	}

	var raw RawScores
	scores, s := f.RunRawScorePlugins(ctx, state, testPod(), nodes, &raw)
	if !s.IsSuccess() || !reflect.DeepEqual(scores, fresh(nodes)) {
		t.Fatalf("RunRawScorePlugins = %v, %v; RunScorePlugins %v", scores, s, fresh(nodes))
	}
	if want := []framework.NodeScore{{Name: "n1", Score: 25 + 2}, {Name: "n2", Score: 100 + 4}, {Name: "n3", Score: 50 + 6}}; !reflect.DeepEqual(scores, want) {
		t.Fatalf("totals %v, want %v", scores, want)
	}
	if raw.Len() != 3 || raw.scores[0][1].Score != 40 {
		t.Fatalf("raw scores %v: want a's raw 40 on n2, not normalised", raw.scores)
	}

	// n2 changes: scored again, the totals are as fresh, and a's
	// normalisation follows the new top score.
	a.score["n2"] = 5
	if s := f.RescoreNode(ctx, state, testPod(), nodes[1], &raw, 1); s != nil {
		t.Fatalf("RescoreNode: %v", s)
	}
	if got, want := totals(nodes, &raw), fresh(nodes); !reflect.DeepEqual(got, want) {
		t.Errorf("after a rescore: %v, want %v", got, want)
	}
	// Totals normalise a copy: the raw scores stay raw.
	if got, want := totals(nodes, &raw), fresh(nodes); !reflect.DeepEqual(got, want) {
		t.Errorf("Totals a second time: %v, want %v", got, want)
	}

	// n1 is dropped; n3 takes its place.
	raw.RemoveNode(0)
	left := []*framework.NodeInfo{nodes[2], nodes[1]}
	if got, want := totals(left, &raw), fresh(left); raw.Len() != 2 || !reflect.DeepEqual(got, want) {
		t.Errorf("after dropping n1: %v (%d nodes), want %v", got, raw.Len(), want)
	}

	if !f.SamePlugins(state, &raw) {
		t.Error("SamePlugins false for the plugins that scored")
	}
	if f.NodeLocal(state) {
		t.Error("NodeLocal true with plugin a, which is not NodeLocal")
	}
	// a skipped by PreScore: other plugins, and only NodeLocal ones.
	a.preScore = framework.NewStatus(framework.Skip)
	f = mustFramework(t, baseRegistry(t, nil, a, localPlugin{b}), baseSpec(map[ExtensionPoint]PluginSet{
		PreScorePoint: {{Name: "a"}}, ScorePoint: {{Name: "a"}, {Name: "b", Weight: 2}}}))
	if s := f.RunPreScorePlugins(ctx, state, testPod(), nodes); !s.IsSuccess() {
		t.Fatalf("RunPreScorePlugins: %v", s)
	}
	if f.SamePlugins(state, &raw) {
		t.Error("SamePlugins true after PreScore skipped a")
	}
	if !f.NodeLocal(state) {
		t.Error("NodeLocal false with only NodeLocal plugins left")
	}
}
