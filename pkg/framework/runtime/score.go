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
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
)

// RunScorePlugins scores pod on each of nodes with every Score plugin not
// skipped by PreScore, in parallel across nodes; normalises each plugin's
// scores with its ScoreExtensions, when it has them; checks that every
// score is within [MinNodeScore, MaxNodeScore]; and returns each node's
// weighted sum, in the order of nodes. Any failure is returned as an Error
// status naming the plugin.
func (f *Framework) RunScorePlugins(ctx context.Context, state *framework.CycleState, pod *v1.Pod, nodes []*framework.NodeInfo) (_ []framework.NodeScore, st *framework.Status) {
	defer f.observePoint(metricScore, time.Now(), &st)
	plugins, weights := f.activeScorePlugins(state)
	if len(plugins) == 0 || len(nodes) == 0 {
		return namedScores(nodes), nil
	}
	// scores[p][i] is plugins[p]'s score of nodes[i].
	buf := getScores(len(plugins), len(nodes))
	defer putScores(buf)
	if st := f.scoreNodes(ctx, state, pod, nodes, plugins, buf.scores); st != nil {
		return nil, st
	}
	return f.totalScores(ctx, state, pod, plugins, weights, buf.scores, namedScores(nodes))
}

// RawScores are the scores of one pod on a list of nodes by each Score
// plugin that PreScore left active, before normalisation: what
// RunScorePlugins computes on the way to its totals, kept so that a pod
// judged alike to that one can be ranked on the same nodes by scoring
// again only the nodes that changed since (RescoreNode, RemoveNode,
// Totals). The scheduling loop keeps one across cycles.
type RawScores struct {
	plugins []framework.ScorePlugin
	weights []int64
	// scores[p][i] is plugins[p]'s raw score of the i-th node.
	scores [][]framework.NodeScore
	// totals is Totals' result, reused by the next call: a ranking
	// reused for every pod of a run must not cost an allocation the size
	// of its nodes per pod.
	totals []framework.NodeScore
}

// Len is the number of nodes scored.
func (r *RawScores) Len() int {
	if len(r.scores) == 0 {
		return 0
	}
	return len(r.scores[0])
}

// RunRawScorePlugins is RunScorePlugins keeping the raw scores in into
// (whose memory it reuses) before it returns the totals.
func (f *Framework) RunRawScorePlugins(ctx context.Context, state *framework.CycleState, pod *v1.Pod, nodes []*framework.NodeInfo, into *RawScores) (_ []framework.NodeScore, st *framework.Status) {
	defer f.observePoint(metricScore, time.Now(), &st)
	into.plugins, into.weights = f.activeScorePlugins(state)
	into.scores = slices.Grow(into.scores[:0], len(into.plugins))[:len(into.plugins)]
	for p := range into.scores {
		into.scores[p] = slices.Grow(into.scores[p][:0], len(nodes))[:len(nodes)]
		clear(into.scores[p])
	}
	if len(into.plugins) == 0 || len(nodes) == 0 {
		return namedScores(nodes), nil
	}
	if st := f.scoreNodes(ctx, state, pod, nodes, into.plugins, into.scores); st != nil {
		return nil, st
	}
	return f.Totals(ctx, state, pod, nodes, into)
}

// SamePlugins reports whether PreScore left active for the current pod of
// state the Score plugins that raw holds the scores of.
func (f *Framework) SamePlugins(state *framework.CycleState, raw *RawScores) bool {
	plugins, _ := f.activeScorePlugins(state)
	return slices.Equal(plugins, raw.plugins)
}

// RescoreNode replaces the raw scores of the i-th node of raw, node, by
// its scores for pod.
func (f *Framework) RescoreNode(ctx context.Context, state *framework.CycleState, pod *v1.Pod, node *framework.NodeInfo, raw *RawScores, i int) *framework.Status {
	for p, pl := range raw.plugins {
		score, s := pl.Score(ctx, state, pod, node)
		if !s.IsSuccess() {
			return pluginError(s, pl.Name(), "running Score plugin %q for pod %s on node %q", pl.Name(), klog.KObj(pod), node.Name())
		}
		raw.scores[p][i] = framework.NodeScore{Name: node.Name(), Score: score}
	}
	return nil
}

// RemoveNode drops the i-th node of raw; the last node takes its place,
// as the caller's list of nodes must do too.
func (raw *RawScores) RemoveNode(i int) {
	for p := range raw.scores {
		last := len(raw.scores[p]) - 1
		raw.scores[p][i] = raw.scores[p][last]
		raw.scores[p] = raw.scores[p][:last]
	}
}

// Totals normalises a copy of raw's scores of nodes (the nodes raw
// scored, in its order) and returns each node's weighted sum, as
// RunScorePlugins would have on those nodes. The result is raw's: the
// next call on raw overwrites it.
func (f *Framework) Totals(ctx context.Context, state *framework.CycleState, pod *v1.Pod, nodes []*framework.NodeInfo, raw *RawScores) ([]framework.NodeScore, *framework.Status) {
	raw.totals = slices.Grow(raw.totals[:0], len(nodes))[:len(nodes)]
	for i, n := range nodes {
		raw.totals[i] = framework.NodeScore{Name: n.Name()}
	}
	if len(raw.plugins) == 0 || len(nodes) == 0 {
		return raw.totals, nil
	}
	buf := getScores(len(raw.plugins), len(nodes))
	defer putScores(buf)
	for p := range raw.scores {
		copy(buf.scores[p], raw.scores[p])
	}
	return f.totalScores(ctx, state, pod, raw.plugins, raw.weights, buf.scores, raw.totals)
}

// namedScores returns zero scores of nodes.
func namedScores(nodes []*framework.NodeInfo) []framework.NodeScore {
	totals := make([]framework.NodeScore, len(nodes))
	for i, n := range nodes {
		totals[i].Name = n.Name()
	}
	return totals
}

// activeScorePlugins returns the Score plugins that PreScore did not skip
// for the current pod, and their weights.
func (f *Framework) activeScorePlugins(state *framework.CycleState) ([]framework.ScorePlugin, []int64) {
	skip := skipped(state, skipScoreKey)
	var (
		plugins []framework.ScorePlugin
		weights []int64
	)
	for i, pl := range f.score {
		if !skip.Has(pl.Name()) {
			plugins = append(plugins, pl)
			weights = append(weights, f.scoreWeights[i])
		}
	}
	return plugins, weights
}

// scoreNodes writes into scores[p][i] plugins[p]'s score of nodes[i], in
// parallel across nodes.
func (f *Framework) scoreNodes(ctx context.Context, state *framework.CycleState, pod *v1.Pod, nodes []*framework.NodeInfo, plugins []framework.ScorePlugin, scores [][]framework.NodeScore) *framework.Status {
	// scorers[p] is plugins[p]'s NodeScorer for pod when it is a
	// framework.ScorePreparer, else nil and its Score runs.
	scorers := make([]framework.NodeScorer, len(plugins))
	for p, pl := range plugins {
		if sp, ok := pl.(framework.ScorePreparer); ok {
			scorers[p] = sp.PrepareScore(ctx, state, pod)
		}
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		errOnce  sync.Once
		firstErr *framework.Status
		scored   atomic.Int64
	)
	fail := func(s *framework.Status) {
		errOnce.Do(func() {
			firstErr = s
			cancel()
		})
	}
	sampled := state.ShouldRecordPluginMetrics()
	f.parallelize(ctx, len(nodes), func(i int) {
		timed := sampled && f.metrics != nil && i%perNodeTimingStride == 0
		for p, pl := range plugins {
			var start time.Time
			if timed {
				start = time.Now()
			}
			var (
				score int64
				s     *framework.Status
			)
			if scorers[p] != nil {
				score, s = scorers[p](ctx, nodes[i])
			} else {
				score, s = pl.Score(ctx, state, pod, nodes[i])
			}
			f.observePlugin(start, pl.Name(), metricScore, s)
			if !s.IsSuccess() {
				fail(pluginError(s, pl.Name(), "running Score plugin %q for pod %s on node %q", pl.Name(), klog.KObj(pod), nodes[i].Name()))
				return
			}
			scores[p][i] = framework.NodeScore{Name: nodes[i].Name(), Score: score}
		}
		scored.Add(1)
	})
	if firstErr != nil {
		return firstErr
	}
	if scored.Load() < int64(len(nodes)) {
		// The caller's context ended before every node was scored.
		return framework.AsStatus(fmt.Errorf("scoring nodes for pod %s: %w", klog.KObj(pod), context.Cause(ctx)))
	}
	return nil
}

// serialNormalizeNodes is the most nodes whose scores totalScores
// normalises plugin after plugin in the calling goroutine: below it a
// plugin's NormalizeScore takes a few microseconds, less than starting
// goroutines for them, which a pod ranked by a reused ranking would pay
// every time.
const serialNormalizeNodes = 2048

// totalScores normalises scores (scores[p][i] is plugins[p]'s of the
// i-th node) in place, checks their range and adds each node's weighted
// sum to totals, which holds the nodes' names and zero scores.
func (f *Framework) totalScores(ctx context.Context, state *framework.CycleState, pod *v1.Pod,
	plugins []framework.ScorePlugin, weights []int64, scores [][]framework.NodeScore, totals []framework.NodeScore) ([]framework.NodeScore, *framework.Status) {
	// Normalisation is per plugin, over all nodes; it runs in parallel
	// across plugins, to completion (a plugin's NormalizeScore may not be
	// interrupted half way).
	normalize := func(p int) *framework.Status {
		if ext := plugins[p].ScoreExtensions(); ext != nil {
			if s := ext.NormalizeScore(ctx, state, pod, scores[p]); !s.IsSuccess() {
				return pluginError(s, plugins[p].Name(), "normalizing the scores of plugin %q for pod %s", plugins[p].Name(), klog.KObj(pod))
			}
		}
		return nil
	}
	if len(totals) <= serialNormalizeNodes {
		for p := range plugins {
			if s := normalize(p); s != nil {
				return nil, s
			}
		}
	} else {
		normalizeErrs := make([]*framework.Status, len(plugins))
		f.parallelize(context.WithoutCancel(ctx), len(plugins), func(p int) { normalizeErrs[p] = normalize(p) })
		for _, s := range normalizeErrs {
			if s != nil {
				return nil, s
			}
		}
	}
	for p, pl := range plugins {
		for i, ns := range scores[p] {
			if ns.Score < framework.MinNodeScore || ns.Score > framework.MaxNodeScore {
				return nil, framework.AsStatus(fmt.Errorf("plugin %q scored node %q %d for pod %s, outside [%d, %d]",
					pl.Name(), totals[i].Name, ns.Score, klog.KObj(pod), framework.MinNodeScore, framework.MaxNodeScore)).WithPlugin(pl.Name())
			}
			totals[i].Score += ns.Score * weights[p]
		}
	}
	return totals, nil
}
