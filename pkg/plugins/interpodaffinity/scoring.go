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
	"context"
	"fmt"
	"math"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
)

// hardPodAffinityWeight is the weight of an existing pod's required
// affinity term that the incoming pod matches, kube-scheduler's default
// (InterPodAffinityArgs.hardPodAffinityWeight).
const hardPodAffinityWeight = 1

// nodesKey is where PreFilterPod leaves all the nodes for PreScore, which
// is only given the feasible ones, while a domain's score counts pods on
// every node of it.
const nodesKey framework.StateKey = Name + "/nodes"

// scoreKey is where PreScore leaves the domain scores for Score.
const scoreKey framework.StateKey = Name + "/score"

// allNodes is the state under nodesKey.
type allNodes struct {
	pod   *v1.Pod
	nodes []*framework.NodeInfo
}

// Clone implements framework.StateData; the state is never changed.
func (s *allNodes) Clone() framework.StateData { return s }

// weightedTerm is a preferred term and its weight.
type weightedTerm struct {
	term
	weight int64
}

// parseWeighted parses preferred terms.
func parseWeighted(ownerNamespace string, kind string, in []v1.WeightedPodAffinityTerm) ([]weightedTerm, error) {
	out := make([]weightedTerm, 0, len(in))
	for i := range in {
		ts, err := parseTerms(ownerNamespace, kind, []v1.PodAffinityTerm{in[i].PodAffinityTerm})
		if err != nil {
			return nil, fmt.Errorf("preferred %w", err)
		}
		out = append(out, weightedTerm{term: ts[0], weight: int64(in[i].Weight)})
	}
	return out, nil
}

// preferredTerms returns pod's preferred affinity and anti-affinity terms,
// unparsed.
func preferredTerms(a *v1.Affinity) (affinity, anti []v1.WeightedPodAffinityTerm) {
	if a != nil {
		if a.PodAffinity != nil {
			affinity = a.PodAffinity.PreferredDuringSchedulingIgnoredDuringExecution
		}
		if a.PodAntiAffinity != nil {
			anti = a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution
		}
	}
	return affinity, anti
}

// hasPodAffinity reports whether pod has any pod affinity or anti-affinity.
func hasPodAffinity(a *v1.Affinity) bool {
	return a != nil && (a.PodAffinity != nil || a.PodAntiAffinity != nil)
}

// domainScores sums weights per topology key and value.
type domainScores map[string]map[string]int64

func (m domainScores) add(node *v1.Node, key string, w int64) {
	v, ok := node.Labels[key]
	if !ok {
		return
	}
	if m[key] == nil {
		m[key] = map[string]int64{}
	}
	m[key][v] += w
}

// scoreState is the state under scoreKey.
type scoreState struct {
	pod    *v1.Pod
	scores domainScores
}

// Clone implements framework.StateData; the state is never changed.
func (s *scoreState) Clone() framework.StateData { return s }

// PreScore implements framework.PreScorePlugin. For every domain it sums
// the weights of: the pod's preferred affinity terms (positive) and
// anti-affinity terms (negative) matching pods there, and the terms of the
// pods there matching the pod: required affinity (weight 1), preferred
// affinity (positive) and preferred anti-affinity (negative). It returns
// Skip when nothing scores.
func (pl *InterPodAffinity) PreScore(ctx context.Context, state *framework.CycleState, pod *v1.Pod, feasible []*framework.NodeInfo) *framework.Status {
	nodes := feasible
	if d, ok := state.Read(nodesKey); ok {
		if a, ok := d.(*allNodes); ok && a.pod == pod {
			nodes = a.nodes
		}
	}
	rawAff, rawAnti := preferredTerms(pod.Spec.Affinity)
	hasPreferred := len(rawAff) > 0 || len(rawAnti) > 0
	if !hasPreferred && !anyPodWithAffinity(state, nodes) {
		return framework.NewStatus(framework.Skip)
	}
	aff, err := parseWeighted(pod.Namespace, "podAffinity", rawAff)
	if err != nil {
		return framework.AsStatus(fmt.Errorf("pod %s: %w", klog.KObj(pod), err))
	}
	anti, err := parseWeighted(pod.Namespace, "podAntiAffinity", rawAnti)
	if err != nil {
		return framework.AsStatus(fmt.Errorf("pod %s: %w", klog.KObj(pod), err))
	}
	for _, ts := range [][]weightedTerm{aff, anti} {
		for i := range ts {
			if err := pl.resolveTerm(&ts[i].term); err != nil {
				return framework.AsStatus(fmt.Errorf("pod %s: %w", klog.KObj(pod), err))
			}
		}
	}
	logger := klog.FromContext(ctx)
	var nsErr error
	nsLabels := pl.namespaceLabels(logger, pod.Namespace, &nsErr)
	scores := domainScores{}
	for _, n := range nodes {
		if n.Node == nil || len(n.Node.Labels) == 0 || (!hasPreferred && n.PodsWithAffinity == 0) {
			continue
		}
		for _, t := range n.Pods {
			if !t.Counted || (!hasPreferred && !hasPodAffinity(t.Affinity())) {
				continue
			}
			scoreExisting(logger, scores, n.Node, pod, t, aff, anti, nsLabels, &pl.existing)
		}
	}
	if nsErr != nil {
		return framework.AsStatus(fmt.Errorf("pod %s: namespace labels: %w", klog.KObj(pod), nsErr))
	}
	if len(scores) == 0 {
		return framework.NewStatus(framework.Skip)
	}
	state.Write(scoreKey, &scoreState{pod: pod, scores: scores})
	return nil
}

// scoreExisting adds what existing, on node, contributes to scores.
func scoreExisting(logger klog.Logger, scores domainScores, node *v1.Node, pod *v1.Pod, existing *framework.TaskInfo, aff, anti []weightedTerm, nsLabels nsLabelsFunc, cache *termCache) {
	for i := range aff {
		if aff[i].matches(existing, nil) {
			scores.add(node, aff[i].topologyKey, aff[i].weight)
		}
	}
	for i := range anti {
		if anti[i].matches(existing, nil) {
			scores.add(node, anti[i].topologyKey, -anti[i].weight)
		}
	}
	if !hasPodAffinity(existing.Affinity()) {
		return
	}
	parsed := cache.get(existing)
	required, err := parsed.required, parsed.errRequired
	if err != nil {
		logger.V(4).Info("Ignoring the unparsable affinity of an existing pod", "pod", klog.KObj(existing), "err", err)
		return
	}
	for i := range required {
		if required[i].matches(pod, nsLabels) {
			scores.add(node, required[i].topologyKey, hardPodAffinityWeight)
		}
	}
	exAff, err := parsed.preferred, parsed.errPreferred
	if err != nil {
		logger.V(4).Info("Ignoring the unparsable affinity of an existing pod", "pod", klog.KObj(existing), "err", err)
		return
	}
	exAnti, err := parsed.preferredAnti, parsed.errPrefAnti
	if err != nil {
		logger.V(4).Info("Ignoring the unparsable anti-affinity of an existing pod", "pod", klog.KObj(existing), "err", err)
		return
	}
	for i := range exAff {
		if exAff[i].matches(pod, nsLabels) {
			scores.add(node, exAff[i].topologyKey, exAff[i].weight)
		}
	}
	for i := range exAnti {
		if exAnti[i].matches(pod, nsLabels) {
			scores.add(node, exAnti[i].topologyKey, -exAnti[i].weight)
		}
	}
}

// anyPodWithAffinity reports whether some node holds a counted pod with
// pod affinity or anti-affinity; the cycle's census first, as in
// anyRequiredAntiAffinity.
func anyPodWithAffinity(state *framework.CycleState, nodes []*framework.NodeInfo) bool {
	if c := framework.AffinityCensusOf(state); c != nil && !c.MayHoldAffinity() {
		return false
	}
	for _, n := range nodes {
		if n.PodsWithAffinity > 0 {
			return true
		}
	}
	return false
}

// Score implements framework.ScorePlugin: the sum of the scores of the
// node's domains (raw; NormalizeScore scales them). Without PreScore's
// state for pod (PreScore was not run) every node scores 0.
func (pl *InterPodAffinity) Score(_ context.Context, state *framework.CycleState, pod *v1.Pod, node *framework.NodeInfo) (int64, *framework.Status) {
	s := readScoreState(state, pod)
	if s == nil || node.Node == nil {
		return 0, nil
	}
	var total int64
	for key, values := range s.scores {
		if v, ok := node.Node.Labels[key]; ok {
			total += values[v]
		}
	}
	return total, nil
}

// readScoreState returns PreScore's state for pod, or nil.
func readScoreState(state *framework.CycleState, pod *v1.Pod) *scoreState {
	d, _ := state.Read(scoreKey)
	if s, _ := d.(*scoreState); s != nil && s.pod == pod {
		return s
	}
	return nil
}

// ScoreExtensions implements framework.ScorePlugin.
func (pl *InterPodAffinity) ScoreExtensions() framework.ScoreExtensions { return pl }

// NormalizeScore implements framework.ScoreExtensions: scores are mapped
// linearly from [lowest, highest] onto [0, MaxNodeScore], truncated; all
// become 0 when they are equal.
func (pl *InterPodAffinity) NormalizeScore(_ context.Context, state *framework.CycleState, pod *v1.Pod, scores []framework.NodeScore) *framework.Status {
	if readScoreState(state, pod) == nil {
		return nil // every score is 0
	}
	lo, hi := int64(math.MaxInt64), int64(math.MinInt64)
	for i := range scores {
		lo, hi = min(lo, scores[i].Score), max(hi, scores[i].Score)
	}
	for i := range scores {
		var s float64
		if hi > lo {
			s = float64(framework.MaxNodeScore) * float64(scores[i].Score-lo) / float64(hi-lo)
		}
		scores[i].Score = int64(s)
	}
	return nil
}
