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
	"maps"
	"slices"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/klog/v2"

	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
)

var _ framework.PodPreFilterExtensions = &PodTopologySpread{}

// Clone implements framework.StateData. The constraints are shared (they
// are not changed after PreFilterPod); the counts and minimums, which
// AddPod and RemovePod change, are copied.
func (s *podState) Clone() framework.StateData {
	c := *s
	c.counts = make([]map[string]int, len(s.counts))
	for i, m := range s.counts {
		c.counts[i] = maps.Clone(m)
	}
	c.minimum = slices.Clone(s.minimum)
	return &c
}

// AddPod implements framework.PodPreFilterExtensions: it counts added, on
// node, in the domains where PreFilterPod would have counted it.
func (*PodTopologySpread) AddPod(ctx context.Context, state *framework.CycleState, podToSchedule *v1.Pod, added *framework.TaskInfo, node *framework.NodeInfo) *framework.Status {
	return update(ctx, state, podToSchedule, added, node, 1)
}

// RemovePod implements framework.PodPreFilterExtensions: it takes removed,
// on node, out of the counts.
func (*PodTopologySpread) RemovePod(ctx context.Context, state *framework.CycleState, podToSchedule *v1.Pod, removed *framework.TaskInfo, node *framework.NodeInfo) *framework.Status {
	return update(ctx, state, podToSchedule, removed, node, -1)
}

// update adds delta (1 or -1) for t on n to the count of n's domain of
// each constraint that counts t's pod there (under the same rules as
// PreFilterPod: n has every constraint's topology key, the constraint's
// node inclusion policies admit n, and the pod is counted, not
// terminating, in podToSchedule's namespace and matches the selector),
// and keeps each constraint's global minimum. The domains themselves
// depend on the nodes only, not on their pods, so none appears or goes.
func update(ctx context.Context, state *framework.CycleState, podToSchedule *v1.Pod, t *framework.TaskInfo, n *framework.NodeInfo, delta int) *framework.Status {
	d, _ := state.Read(stateKey)
	s, _ := d.(*podState)
	if s == nil || s.pod != podToSchedule {
		return framework.AsStatus(fmt.Errorf("%s: no pre-filter state for pod %s to update", Name, klog.KObj(podToSchedule)))
	}
	node := n.Node
	if !t.Counted || t.GetDeletionTimestamp() != nil || t.GetNamespace() != s.pod.Namespace || node == nil ||
		!hasAllTopologyKeys(node.Labels, s.constraints) {
		return nil
	}
	logger := klog.FromContext(ctx)
	podLabels := labels.Set(t.GetLabels())
	for i := range s.constraints {
		c := &s.constraints[i]
		if c.selector.Empty() || !c.selector.Matches(podLabels) || !c.admits(logger, s.pod, node, s.required) {
			continue
		}
		domain := node.Labels[c.topologyKey]
		before, ok := s.counts[i][domain]
		if !ok {
			return framework.AsStatus(fmt.Errorf("%s: pod %s: node %q is not among the nodes the pre-filter state counted", Name, klog.KObj(s.pod), n.Name()))
		}
		after := before + delta
		s.counts[i][domain] = after
		switch {
		case len(s.counts[i]) < int(c.minDomains):
			// Fewer domains than minDomains: the minimum stays 0.
		case after < s.minimum[i]:
			s.minimum[i] = after
		case before == s.minimum[i] && after > before:
			// The domain may have been the only one at the minimum.
			s.minimum[i] = s.globalMinimum(i)
		}
	}
	return nil
}
