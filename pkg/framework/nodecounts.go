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

package framework

import v1 "k8s.io/api/core/v1"

// nodeCounts is what a NodeInfo counts of a counted task besides its
// requests: whether the pod has pod affinity or anti-affinity, required
// anti-affinity, host ports. A task works it out once, when it is built:
// preemption's simulations take tasks off nodes and put them back by the
// thousand, and reading these in the pod's record is a cache miss each.
type nodeCounts uint8

const (
	// countsKnown marks counts worked out; a TaskInfo built as a literal
	// (in tests) has none, and its counts are read from the pod.
	countsKnown nodeCounts = 1 << iota
	countsAffinity
	countsRequiredAntiAffinity
	countsHostPorts
)

// nodeCountsOf works out the counts of pod.
func nodeCountsOf(pod *v1.Pod) nodeCounts {
	return countsKnown | affinityCounts(pod.Spec.Affinity) |
		hostPortCounts(mayHoldHostPorts(pod.Spec.Containers, pod.Spec.InitContainers))
}

func affinityCounts(a *v1.Affinity) nodeCounts {
	if a == nil || (a.PodAffinity == nil && a.PodAntiAffinity == nil) {
		return 0
	}
	c := countsAffinity
	if a.PodAntiAffinity != nil && len(a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution) > 0 {
		c |= countsRequiredAntiAffinity
	}
	return c
}

func hostPortCounts(holds bool) nodeCounts {
	if holds {
		return countsHostPorts
	}
	return 0
}

// nodeCounts returns t's counts: those worked out when t was built, else
// read from its pod.
func (t *TaskInfo) nodeCounts() nodeCounts {
	if t.counts&countsKnown != 0 {
		return t.counts
	}
	return affinityCounts(t.Affinity()) | hostPortCounts(t.MayHoldHostPorts())
}

// count adds c, times delta, to n's counters.
func (n *NodeInfo) count(c nodeCounts, delta int) {
	if c&countsAffinity != 0 {
		n.PodsWithAffinity += delta
	}
	if c&countsRequiredAntiAffinity != 0 {
		n.PodsWithRequiredAntiAffinity += delta
	}
	if c&countsHostPorts != 0 {
		n.PodsWithHostPorts += delta
	}
}
