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
	"maps"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
)

var _ framework.PodPreFilterExtensions = &InterPodAffinity{}

// Clone implements framework.StateData. The parsed terms are shared (they
// are not changed after PreFilterPod); the counts, which AddPod and
// RemovePod change, are copied.
func (s *podState) Clone() framework.StateData {
	c := *s
	c.affinityCounts = maps.Clone(s.affinityCounts)
	c.antiAffinityCounts = maps.Clone(s.antiAffinityCounts)
	c.existingAntiCounts = maps.Clone(s.existingAntiCounts)
	return &c
}

// AddPod implements framework.PodPreFilterExtensions: it counts added, on
// node, as PreFilterPod would have.
func (pl *InterPodAffinity) AddPod(ctx context.Context, state *framework.CycleState, podToSchedule *v1.Pod, added *framework.TaskInfo, node *framework.NodeInfo) *framework.Status {
	return pl.update(ctx, state, podToSchedule, added, node, 1)
}

// RemovePod implements framework.PodPreFilterExtensions: it takes removed,
// on node, out of the counts.
func (pl *InterPodAffinity) RemovePod(ctx context.Context, state *framework.CycleState, podToSchedule *v1.Pod, removed *framework.TaskInfo, node *framework.NodeInfo) *framework.Status {
	return pl.update(ctx, state, podToSchedule, removed, node, -1)
}

// update adds delta (1 or -1) for t on n to each count of podToSchedule's
// state that t's pod counts in: the existing pods' anti-affinity terms
// matching podToSchedule, and podToSchedule's own affinity and
// anti-affinity terms matching t's pod. A domain whose count reaches zero
// is dropped, as if no pod had been counted there (affinitySatisfied
// tells "no matching pod anywhere" by an empty map).
func (pl *InterPodAffinity) update(ctx context.Context, state *framework.CycleState, podToSchedule *v1.Pod, t *framework.TaskInfo, n *framework.NodeInfo, delta int) *framework.Status {
	d, _ := state.Read(stateKey)
	s, _ := d.(*podState)
	if s == nil || s.pod != podToSchedule {
		return framework.AsStatus(fmt.Errorf("%s: no pre-filter state for pod %s to update", Name, klog.KObj(podToSchedule)))
	}
	if !t.Counted || n.Node == nil {
		// PreFilterPod counts neither.
		return nil
	}
	if len(requiredAntiAffinity(t.Affinity())) > 0 {
		parsed := pl.existing.get(t)
		if parsed.errAnti == nil {
			var nsErr error
			nsLabels := pl.namespaceLabels(klog.FromContext(ctx), s.pod.Namespace, &nsErr)
			for i := range parsed.requiredAnti {
				if parsed.requiredAnti[i].matches(s.pod, nsLabels) {
					s.existingAntiCounts.update(n.Node, parsed.requiredAnti[i].topologyKey, delta)
				}
			}
			if nsErr != nil {
				return framework.AsStatus(fmt.Errorf("pod %s: namespace labels: %w", klog.KObj(s.pod), nsErr))
			}
		}
	}
	if s.affinityCounts == nil {
		// The pod has no required terms of its own.
		return nil
	}
	if matchesAll(s.affinity, t) {
		for i := range s.affinity {
			s.affinityCounts.update(n.Node, s.affinity[i].topologyKey, delta)
		}
	}
	for i := range s.antiAffinity {
		if s.antiAffinity[i].matches(t, nil) {
			s.antiAffinityCounts.update(n.Node, s.antiAffinity[i].topologyKey, delta)
		}
	}
	return nil
}

// update adds delta to the count of node's domain of key, if node has the
// label, and drops the domain when its count reaches zero.
func (m pairCounts) update(node *v1.Node, key string, delta int) {
	v, ok := node.Labels[key]
	if !ok {
		return
	}
	p := topologyPair{key, v}
	if c := m[p] + delta; c != 0 {
		m[p] = c
	} else {
		delete(m, p)
	}
}
