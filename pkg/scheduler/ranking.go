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
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
	frameworkruntime "github.com/batch-scheduler/batch-scheduler/pkg/framework/runtime"
)

// A ranking is what filtering and scoring a window of nodes for one pod
// found: the feasible nodes and their raw scores. Most pods come in runs
// of pods alike (a Deployment's replicas, a Job's or a gang's tasks), and
// for the next pod of a run that ranking still holds but on the nodes
// that changed since: the one the last pod took, and any the cache or the
// cycle touched meanwhile (Snapshot.Touched). So when every Filter and
// Score plugin that runs for the pods is framework.NodeLocal and the
// profile judges them alike (Framework.Alike), the next pod is placed by
// filtering and scoring again only those nodes, normalising the scores
// afresh and taking the best, which one Filter call confirms. The window
// costs one pod in a run, not every pod: at 20,000 nodes a window is
// 1,000 nodes. As with the window itself, a node outside the ranking
// that became better meanwhile is not seen until the ranking is rebuilt:
// when it runs out of nodes, when maxRankingAge passes, when nodes join
// or leave, or when a pod not alike comes.
type ranking struct {
	fwk *frameworkruntime.Framework
	// pod is the pod the ranking was last used for.
	pod *v1.Pod
	// nodes are the feasible nodes, in raw's order; index maps their
	// names to their positions.
	nodes []*framework.NodeInfo
	index map[string]int
	raw   frameworkruntime.RawScores
	// built is when the window was filtered and scored.
	built time.Time
}

// maxRankingAge is how long a ranking serves before the window is ranked
// afresh (and moves on: see nodeWindow): long enough for hundreds of
// pods, short enough that nodes outside it that freed room are seen.
const maxRankingAge = 500 * time.Millisecond

// remove drops the i-th node of r.
func (r *ranking) remove(i int) {
	delete(r.index, r.nodes[i].Name())
	last := len(r.nodes) - 1
	if i != last {
		r.nodes[i] = r.nodes[last]
		r.index[r.nodes[i].Name()] = i
	}
	r.nodes[last] = nil
	r.nodes = r.nodes[:last]
	r.raw.RemoveNode(i)
}

// mayRank reports whether pod of c may be ranked by, or leave, a reused
// ranking: the loop reuses rankings, the pod may take any node (no plan
// narrows the nodes) and preemption nominated no node for it.
func (s *Scheduler) mayRank(c *cycle, pod *v1.Pod) bool {
	return !s.opts.NoRankingReuse && c.nodes == nil && s.nominatedNode(pod) == ""
}

// keepRanking scores feasible, the nodes pod of c found feasible, as
// RunScorePlugins does, and keeps their ranking for the next pod alike to
// pod when every plugin that ran is NodeLocal. Call it after PreScore.
func (s *Scheduler) keepRanking(ctx context.Context, c *cycle, pod *v1.Pod, feasible []*framework.NodeInfo) ([]framework.NodeScore, *framework.Status) {
	if !s.mayRank(c, pod) || !c.fwk.NodeLocal(c.state) {
		s.ranking = nil
		return c.fwk.RunScorePlugins(ctx, c.state, pod, feasible)
	}
	r := s.spareRanking
	if r == nil {
		r = &ranking{index: map[string]int{}}
	}
	s.ranking, s.spareRanking = nil, r
	scores, st := c.fwk.RunRawScorePlugins(ctx, c.state, pod, feasible, &r.raw)
	if !st.IsSuccess() {
		return nil, st
	}
	r.fwk, r.pod, r.built = c.fwk, pod, time.Now()
	r.nodes = append(r.nodes[:0], feasible...)
	clear(r.index)
	for i, n := range r.nodes {
		r.index[n.Name()] = i
	}
	s.ranking = r
	// The ranking is current with every node now.
	s.snapshot.ResetTouched()
	return scores, nil
}

// reuseRanking places pod of c by the ranking the last pod left, when
// pod is alike to it and it is still current (see ranking): it filters
// and scores again the nodes touched since, and returns the best node,
// or false when the ranking does not serve (it is then dropped, and the
// caller ranks a window afresh). all are the snapshot's nodes.
func (s *Scheduler) reuseRanking(ctx context.Context, c *cycle, pod *v1.Pod, all []*framework.NodeInfo) (*framework.NodeInfo, bool) {
	r := s.ranking
	if r == nil {
		return nil, false
	}
	touched, allTouched := s.snapshot.Touched()
	if !s.mayRank(c, pod) || allTouched || r.fwk != c.fwk || time.Since(r.built) > maxRankingAge || !c.fwk.Alike(r.pod, pod) {
		s.ranking = nil
		return nil, false
	}
	node, ok := s.rankAgain(ctx, c, pod, all, touched)
	if !ok {
		s.ranking = nil
		return nil, false
	}
	s.snapshot.ResetTouched()
	r.pod = pod
	return node, true
}

// rankAgain is reuseRanking once the ranking r may serve pod: it runs
// pod's PreFilterPod and PreScore plugins, filters and scores the
// touched nodes of the ranking again, and takes the best node that
// passes Filter. Any failure but a node's rejection gives up: the caller
// ranks afresh, and meets it again.
func (s *Scheduler) rankAgain(ctx context.Context, c *cycle, pod *v1.Pod, all []*framework.NodeInfo, touched map[string]bool) (*framework.NodeInfo, bool) {
	r, fwk := s.ranking, c.fwk
	if fwk.HasPodPreFilterPlugins() {
		if st := fwk.RunPreFilterPodPlugins(ctx, c.state, pod, all); !st.IsSuccess() {
			return nil, false
		}
	}
	if st := fwk.RunPreScorePlugins(ctx, c.state, pod, r.nodes); !st.IsSuccess() {
		return nil, false
	}
	if !fwk.SamePlugins(c.state, &r.raw) || !fwk.NodeLocal(c.state) {
		return nil, false
	}
	for name := range touched {
		i, ok := r.index[name]
		if !ok {
			continue
		}
		node := r.nodes[i]
		if st := fwk.RunFilterPlugins(ctx, c.state, pod, node); !st.IsSuccess() {
			if !st.IsRejected() {
				return nil, false
			}
			r.remove(i)
			continue
		}
		if st := fwk.RescoreNode(ctx, c.state, pod, node, &r.raw, i); st != nil {
			return nil, false
		}
	}
	for len(r.nodes) > 0 {
		var node *framework.NodeInfo
		if len(r.nodes) == 1 {
			node = r.nodes[0]
		} else {
			scores, st := fwk.Totals(ctx, c.state, pod, r.nodes, &r.raw)
			if !st.IsSuccess() {
				return nil, false
			}
			node = pickHighest(r.nodes, scores)
		}
		// A node not touched since an alike pod passed it passes again;
		// one Filter call says so for sure.
		st := fwk.RunFilterPlugins(ctx, c.state, pod, node)
		if st.IsSuccess() {
			klog.FromContext(ctx).V(5).Info("Pod placed by the ranking of an alike pod", "pod", klog.KObj(pod), "node", node.Name(), "like", klog.KObj(r.pod), "ranked", len(r.nodes))
			s.metrics.RankingReuses.Inc()
			return node, true
		}
		if !st.IsRejected() {
			return nil, false
		}
		r.remove(r.index[node.Name()])
	}
	return nil, false
}
