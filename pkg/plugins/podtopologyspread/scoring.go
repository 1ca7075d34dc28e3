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
	"context"
	"fmt"
	"math"

	v1 "k8s.io/api/core/v1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"k8s.io/klog/v2"

	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
)

// nodesKey is where PreFilterPod leaves all the nodes for PreScore, which
// is only given the feasible ones, while a domain counts the pods on
// every node of it.
const nodesKey framework.StateKey = Name + "/nodes"

// scoreKey is where PreScore leaves its result for Score.
const scoreKey framework.StateKey = Name + "/score"

// allNodes is the state under nodesKey.
type allNodes struct {
	pod   *v1.Pod
	nodes []*framework.NodeInfo
}

// Clone implements framework.StateData; the state is never changed.
func (s *allNodes) Clone() framework.StateData { return s }

// softConstraints returns pod's ScheduleAnyway constraints.
func softConstraints(pod *v1.Pod) ([]constraint, error) {
	return constraintsOf(pod, v1.ScheduleAnyway)
}

// scoreState is the state under scoreKey.
type scoreState struct {
	pod         *v1.Pod
	constraints []constraint
	// ignored are the feasible nodes without all the topology keys.
	ignored map[string]bool
	// counts[i] maps each domain of constraint i among the feasible nodes
	// to the matching pods in it (not used for hostname constraints,
	// which count the node's own pods).
	counts []map[string]int64
	// weights[i] is log(domains of constraint i + 2).
	weights []float64
}

// Clone implements framework.StateData; the state is never changed.
func (s *scoreState) Clone() framework.StateData { return s }

// PreScore implements framework.PreScorePlugin for the pod's
// ScheduleAnyway constraints, as kube-scheduler scores them: Skip for a
// pod without any.
func (pl *PodTopologySpread) PreScore(ctx context.Context, state *framework.CycleState, pod *v1.Pod, feasible []*framework.NodeInfo) *framework.Status {
	if len(pod.Spec.TopologySpreadConstraints) == 0 {
		return framework.NewStatus(framework.Skip)
	}
	cs, err := softConstraints(pod)
	if err != nil {
		return framework.AsStatus(fmt.Errorf("pod %s: %w", klog.KObj(pod), err))
	}
	if len(cs) == 0 {
		return framework.NewStatus(framework.Skip)
	}
	all := feasible
	if d, ok := state.Read(nodesKey); ok {
		if a, ok := d.(*allNodes); ok && a.pod == pod {
			all = a.nodes
		}
	}
	s := &scoreState{pod: pod, constraints: cs, ignored: map[string]bool{}, counts: make([]map[string]int64, len(cs)), weights: make([]float64, len(cs))}
	for i := range cs {
		s.counts[i] = map[string]int64{}
	}
	// The domains are those of the feasible nodes.
	for _, n := range feasible {
		if n.Node == nil || !hasAllTopologyKeys(n.Node.Labels, cs) {
			s.ignored[n.Name()] = true
			continue
		}
		for i := range cs {
			if cs[i].topologyKey != v1.LabelHostname {
				s.counts[i][n.Node.Labels[cs[i].topologyKey]] += 0
			}
		}
	}
	for i := range cs {
		size := len(s.counts[i])
		if cs[i].topologyKey == v1.LabelHostname {
			size = len(feasible) - len(s.ignored)
		}
		s.weights[i] = math.Log(float64(size + 2))
	}
	// Their counts span all nodes.
	logger := klog.FromContext(ctx)
	required := nodeaffinity.GetRequiredNodeAffinity(pod)
	for _, n := range all {
		if n.Node == nil || !hasAllTopologyKeys(n.Node.Labels, cs) {
			continue
		}
		for i := range cs {
			c := &cs[i]
			if c.topologyKey == v1.LabelHostname || !c.admits(logger, pod, n.Node, required) {
				continue
			}
			v := n.Node.Labels[c.topologyKey]
			if _, ok := s.counts[i][v]; ok {
				s.counts[i][v] += int64(countMatching(n, c.selector, pod.Namespace))
			}
		}
	}
	state.Write(scoreKey, s)
	return nil
}

// readScoreState returns PreScore's state for pod, or nil.
func readScoreState(state *framework.CycleState, pod *v1.Pod) *scoreState {
	d, _ := state.Read(scoreKey)
	if s, _ := d.(*scoreState); s != nil && s.pod == pod {
		return s
	}
	return nil
}

// Score implements framework.ScorePlugin: for each constraint, the
// matching pods in the node's domain times the constraint's weight, plus
// maxSkew-1; lower is better (NormalizeScore reverses it). Without
// PreScore's state for pod every node scores 0.
func (pl *PodTopologySpread) Score(_ context.Context, state *framework.CycleState, pod *v1.Pod, node *framework.NodeInfo) (int64, *framework.Status) {
	s := readScoreState(state, pod)
	if s == nil || node.Node == nil || s.ignored[node.Name()] {
		return 0, nil
	}
	var score float64
	for i := range s.constraints {
		c := &s.constraints[i]
		v, ok := node.Node.Labels[c.topologyKey]
		if !ok {
			continue
		}
		var count int64
		if c.topologyKey == v1.LabelHostname {
			count = int64(countMatching(node, c.selector, pod.Namespace))
		} else {
			count = s.counts[i][v]
		}
		score += float64(count)*s.weights[i] + float64(c.maxSkew-1)
	}
	return int64(math.Round(score)), nil
}

// ScoreExtensions implements framework.ScorePlugin.
func (pl *PodTopologySpread) ScoreExtensions() framework.ScoreExtensions { return pl }

// NormalizeScore implements framework.ScoreExtensions as kube-scheduler
// does: a node with score s gets MaxNodeScore*(max+min-s)/max, every node
// MaxNodeScore when max is 0, and an ignored node 0.
func (pl *PodTopologySpread) NormalizeScore(_ context.Context, state *framework.CycleState, pod *v1.Pod, scores []framework.NodeScore) *framework.Status {
	s := readScoreState(state, pod)
	if s == nil {
		return nil
	}
	lo, hi := int64(math.MaxInt64), int64(0)
	for i := range scores {
		if s.ignored[scores[i].Name] {
			continue
		}
		lo, hi = min(lo, scores[i].Score), max(hi, scores[i].Score)
	}
	for i := range scores {
		switch {
		case s.ignored[scores[i].Name]:
			scores[i].Score = 0
		case hi == 0:
			scores[i].Score = framework.MaxNodeScore
		default:
			scores[i].Score = framework.MaxNodeScore * (hi + lo - scores[i].Score) / hi
		}
	}
	return nil
}
