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

package scheduler

import (
	"context"
	"fmt"
	"strconv"
	"sync/atomic"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
	frameworkruntime "github.com/batch-scheduler/batch-scheduler/pkg/framework/runtime"
	"github.com/batch-scheduler/batch-scheduler/pkg/metrics/metricstest"
	"github.com/batch-scheduler/batch-scheduler/pkg/plugins/pluginutil"
	st "github.com/batch-scheduler/batch-scheduler/pkg/testing"
)

// rankPlugin scores node nK 100 - 10·(pods on it) - K (K < 10): no two
// nodes ever tie, so the best node is one, and a run with rankings reused
// must place every pod where a run that ranks each pod afresh does. Its
// NormalizeScore stretches the best score to 100, so that the totals of
// a reused ranking depend on every node's raw score, as TaintToleration's
// and NodeAffinity's do. It counts its Score calls.
type rankPlugin struct{ calls atomic.Int64 }

func (*rankPlugin) Name() string { return "RankTest" }
func (*rankPlugin) NodeLocal()   {}

func (p *rankPlugin) Score(_ context.Context, _ *framework.CycleState, _ *v1.Pod, node *framework.NodeInfo) (int64, *framework.Status) {
	p.calls.Add(1)
	k, err := strconv.Atoi(node.Name()[1:])
	if err != nil {
		return 0, framework.AsStatus(fmt.Errorf("node %q: %w", node.Name(), err))
	}
	return max(0, 100-10*int64(len(node.Pods))-int64(k)), nil
}

func (p *rankPlugin) ScoreExtensions() framework.ScoreExtensions { return p }

func (*rankPlugin) NormalizeScore(_ context.Context, _ *framework.CycleState, _ *v1.Pod, scores []framework.NodeScore) *framework.Status {
	pluginutil.NormalizeScores(scores, false)
	return nil
}

// rankingRun schedules, on ten nodes of 8 CPUs, 40 single pods and a gang
// of 12, all alike, while the cluster changes under the scheduler: a pod
// of another scheduler lands on n0, n3 leaves, n5 is cordoned. It returns
// where each pod went, how many pods a reused ranking placed, and the
// Score calls.
func rankingRun(t *testing.T, reuse bool) (map[string]string, float64, int64) {
	t.Helper()
	plugin := &rankPlugin{}
	h := newHarnessWith(t, harnessConfig{
		extra: []framework.Plugin{plugin},
		score: frameworkruntime.PluginSet{{Name: plugin.Name(), Weight: 1}},
		opts:  func(o *Options) { o.NoRankingReuse = !reuse },
	})
	for i := range 10 {
		h.addNode(fmt.Sprintf("n%d", i), "8")
	}
	alike := func(name string) *v1.Pod {
		return st.MakePod().Name(name).Label("app", "web").Req(res{"cpu": "100m"}).Obj()
	}
	schedule := func(pods ...*v1.Pod) {
		t.Helper()
		for _, p := range pods {
			h.addPod(p)
		}
		for h.cache.Queue().Lengths().Active > 0 {
			h.cycle()
		}
	}
	for i := range 20 {
		schedule(alike(fmt.Sprintf("a-%d", i)))
	}
	// Changes the ranking must see: n0 fills up from outside...
	for i := range 3 {
		h.addPod(st.MakePod().Name(fmt.Sprintf("other-%d", i)).Scheduler("other").Node("n0").Phase(v1.PodRunning).Req(res{"cpu": "100m"}).Obj())
	}
	schedule(alike("b-0"), alike("b-1"), alike("b-2"))
	// ...n3 leaves and n5 is cordoned.
	if err := h.cache.RemoveNode(st.MakeNode().Name("n3").Obj()); err != nil {
		t.Fatalf("RemoveNode: %v", err)
	}
	h.addNodeObj(st.MakeNode().Name("n5").Unschedulable(true).Capacity(res{v1.ResourceCPU: "8", v1.ResourcePods: "110"}).Obj())
	for i := range 17 {
		schedule(alike(fmt.Sprintf("c-%d", i)))
	}
	var gang []*v1.Pod
	for i := range 12 {
		gang = append(gang, st.MakePod().Name(fmt.Sprintf("g-%d", i)).Label("app", "web").Group("train").MinAvailable("12").Req(res{"cpu": "100m"}).Obj())
	}
	schedule(gang...)
	got := h.boundTo()
	if len(got) != 52 {
		t.Fatalf("bound %d pods, want 52: %v", len(got), got)
	}
	return got, metricstest.CounterValue(t, h.metrics.RankingReuses), plugin.calls.Load()
}

// TestRankingReuseMatchesFreshRanking checks that reusing the ranking of
// the alike pod before places every pod where ranking it afresh does,
// while nodes fill up, change from outside, leave and are cordoned, and
// within a gang's cycle; and that it scores far fewer nodes.
func TestRankingReuseMatchesFreshRanking(t *testing.T) {
	fresh, freshReuses, freshCalls := rankingRun(t, false)
	reused, reuses, calls := rankingRun(t, true)
	for pod, node := range fresh {
		if reused[pod] != node {
			t.Errorf("pod %s: on %s with rankings reused, on %s when ranked afresh", pod, reused[pod], node)
		}
	}
	for pod, node := range reused {
		if (node == "n3" && pod[0] == 'c') || (node == "n5" && pod[0] == 'c') || (node == "n3" || node == "n5") && pod[0] == 'g' {
			t.Errorf("pod %s placed on %s after it left or was cordoned", pod, node)
		}
	}
	if freshReuses != 0 {
		t.Errorf("%v pods placed by a reused ranking with reuse off", freshReuses)
	}
	// Every pod but the first, and the first after each change that
	// touched every node (n3 leaving), reuses the ranking.
	if reuses < 45 {
		t.Errorf("%v of 52 pods placed by a reused ranking, want at least 45", reuses)
	}
	if calls*3 > freshCalls {
		t.Errorf("%d Score calls with rankings reused, %d without: want at most a third", calls, freshCalls)
	}
	t.Logf("Score calls: %d reused, %d fresh; %v pods by a reused ranking", calls, freshCalls, reuses)
}
