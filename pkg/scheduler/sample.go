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
	v1 "k8s.io/api/core/v1"

	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
)

// minNodesToFind is the fewest nodes a pod's window holds: clusters up to
// this size are always searched whole.
const minNodesToFind = 100

// numNodesToFind is the size of a pod's window of nodes among all, for
// percentage (0: adaptive), as kube-scheduler sizes its search: the
// adaptive share is 50% less 1% per 125 nodes, at least 5%; the window
// holds at least minNodesToFind nodes.
func numNodesToFind(all, percentage int) int {
	if all <= minNodesToFind || percentage >= 100 {
		return all
	}
	if percentage <= 0 {
		percentage = max(50-all/125, 5)
	}
	return min(all, max(all*percentage/100, minNodesToFind))
}

// nodeWindow returns the window of nodes the Filter plugins try first for
// pod (frameworkruntime.FilterScope.First), nil for all of nodes: in a
// large cluster, scoring every node costs the loop more than a better
// choice among them is worth (5,000 nodes are ten times the work of 500
// per pod). The window (numNodesToFind nodes) starts where the previous
// pod's ended, so successive pods look at different nodes and spread over
// all of them. When no node of the window fits, the filter path tries
// every node, so a pod that fits somewhere is placed, and one that fits
// nowhere gets the diagnosis of every node. For a pod with a nominated
// node among nodes (preemption made room for it there) the window is that
// node alone, as kube-scheduler tries a nominated node first: the pod
// goes there without the other nodes being filtered or scored, and looks
// at every node only while the room is not there (yet).
func (s *Scheduler) nodeWindow(c *cycle, pod *v1.Pod, nodes []*framework.NodeInfo) []*framework.NodeInfo {
	if name := s.nominatedNode(pod); name != "" {
		if n := nodeNamed(nodes, name); n != nil && len(nodes) > 1 {
			s.window = append(s.window[:0], n)
			return s.window
		}
		return nil
	}
	k := numNodesToFind(len(nodes), s.percentageOfNodesToScore(c.profile))
	if k >= len(nodes) {
		return nil
	}
	start := s.nextStartNode % len(nodes)
	s.nextStartNode = (start + k) % len(nodes)
	window := append(s.window[:0], nodes[start:min(start+k, len(nodes))]...)
	window = append(window, nodes[:k-len(window)]...)
	s.window = window
	return window
}

// percentageOfNodesToScore is the share of the nodes the pods of profile
// look at: the profile's own, or the scheduler's.
func (s *Scheduler) percentageOfNodesToScore(profile string) int {
	if pct, ok := s.opts.ProfilePercentageOfNodesToScore[profile]; ok {
		return pct
	}
	return s.opts.PercentageOfNodesToScore
}
