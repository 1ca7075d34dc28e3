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
	"errors"
	"reflect"
	"sync/atomic"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
)

// preparer is a FilterPreparer and ScorePreparer whose prepared functions
// reject node "n2" and score each node by its name's length plus the
// pod's name's; its own Filter and Score fail, so calling them shows.
type preparer struct {
	prepared, nodeCalls atomic.Int64
}

func (*preparer) Name() string { return "preparer" }

func (*preparer) Filter(context.Context, *framework.CycleState, *v1.Pod, *framework.NodeInfo) *framework.Status {
	return framework.AsStatus(errCalled)
}

func (*preparer) Score(context.Context, *framework.CycleState, *v1.Pod, *framework.NodeInfo) (int64, *framework.Status) {
	return 0, framework.AsStatus(errCalled)
}

func (*preparer) ScoreExtensions() framework.ScoreExtensions { return nil }

func (p *preparer) PrepareFilter(_ context.Context, _ *framework.CycleState, _ *v1.Pod) framework.NodeFilter {
	p.prepared.Add(1)
	return func(_ context.Context, node *framework.NodeInfo) *framework.Status {
		p.nodeCalls.Add(1)
		if node.Name() == "n2" {
			return framework.NewStatus(framework.Unschedulable, "n2")
		}
		return nil
	}
}

func (p *preparer) PrepareScore(_ context.Context, _ *framework.CycleState, pod *v1.Pod) framework.NodeScorer {
	p.prepared.Add(1)
	return func(_ context.Context, node *framework.NodeInfo) (int64, *framework.Status) {
		p.nodeCalls.Add(1)
		return int64(len(node.Name()) + len(pod.Name)), nil
	}
}

// errCalled is what preparer's own Filter and Score fail with.
var errCalled = errors.New("Filter or Score called instead of the prepared function")

// The framework prepares a FilterPreparer's and a ScorePreparer's
// functions once per pod and calls them on every node, never the
// plugin's own Filter and Score.
func TestPreparedFilterAndScore(t *testing.T) {
	pl := &preparer{}
	f := mustFramework(t, baseRegistry(t, nil, pl),
		baseSpec(map[ExtensionPoint]PluginSet{FilterPoint: {{Name: "preparer"}}, ScorePoint: {{Name: "preparer"}}}), WithParallelism(2))
	nodes := makeNodes(t, "n1", "n2", "n3", "n4")
	ctx := context.Background()

	feasible, d, err := f.FindFeasibleNodes(ctx, framework.NewCycleState(), testPod(), nodes)
	if err != nil {
		t.Fatal(err)
	}
	if len(feasible) != 3 || d.StatusOf("n2").Plugin() != "preparer" {
		t.Fatalf("feasible = %d nodes, n2's status %v; want 3 and n2 rejected by preparer", len(feasible), d.StatusOf("n2"))
	}
	if got, calls := pl.prepared.Load(), pl.nodeCalls.Load(); got != 1 || calls != 4 {
		t.Errorf("Filter: prepared %d times, called on %d nodes; want 1 and 4", got, calls)
	}
	if s := f.RunFilterPlugins(ctx, framework.NewCycleState(), testPod(), nodes[1]); s.Code() != framework.Unschedulable {
		t.Errorf("RunFilterPlugins on n2 = %v, want Unschedulable", s)
	}

	pl.prepared.Store(0)
	pl.nodeCalls.Store(0)
	totals, s := f.RunScorePlugins(ctx, framework.NewCycleState(), testPod(), feasible)
	if !s.IsSuccess() {
		t.Fatal(s)
	}
	want := []framework.NodeScore{{Name: "n1", Score: 3}, {Name: "n3", Score: 3}, {Name: "n4", Score: 3}}
	if !reflect.DeepEqual(totals, want) {
		t.Errorf("totals = %v, want %v", totals, want)
	}
	if got, calls := pl.prepared.Load(), pl.nodeCalls.Load(); got != 1 || calls != 3 {
		t.Errorf("Score: prepared %d times, called on %d nodes; want 1 and 3", got, calls)
	}
}
