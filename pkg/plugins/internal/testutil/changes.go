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

package testutil

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
)

// ApplyRandomChanges changes nodes ops times at random, as preemption's
// victim search does, and reports each change to ext for incoming's
// state: it takes a pod off a node (RemovePod), puts one it took off back
// (AddPod), or places a new task that place makes on a node (AddPod). It
// fails the test, naming seed, when an update does not succeed.
func ApplyRandomChanges(t testing.TB, rng *rand.Rand, seed uint64, ext framework.PodPreFilterExtensions, state *framework.CycleState,
	incoming *v1.Pod, nodes []*framework.NodeInfo, ops int, place func(*framework.NodeInfo) *framework.TaskInfo) {
	t.Helper()
	var removed []*framework.TaskInfo
	var removedFrom []*framework.NodeInfo
	for op := range ops {
		n := nodes[rng.IntN(len(nodes))]
		var s *framework.Status
		switch k := rng.IntN(4); {
		case k <= 1 && len(n.Pods) > 0:
			task := n.Pods[rng.IntN(len(n.Pods))]
			n.RemoveTask(task.GetUID())
			removed, removedFrom = append(removed, task), append(removedFrom, n)
			s = ext.RemovePod(t.Context(), state, incoming, task, n)
		case k == 2 && len(removed) > 0:
			i := rng.IntN(len(removed))
			task, back := removed[i], removedFrom[i]
			removed, removedFrom = slices.Delete(removed, i, i+1), slices.Delete(removedFrom, i, i+1)
			back.AddTask(task)
			s = ext.AddPod(t.Context(), state, incoming, task, back)
		default:
			task := place(n)
			s = ext.AddPod(t.Context(), state, incoming, task, n)
		}
		if !s.IsSuccess() {
			t.Fatalf("seed %d, change %d: %v", seed, op, s)
		}
	}
}

// Place binds pod to n and returns its task.
func Place(n *framework.NodeInfo, pod *v1.Pod) *framework.TaskInfo {
	pod.Spec.NodeName = n.Name()
	n.AddPod(pod)
	return n.Pods[len(n.Pods)-1]
}

// Outcome is a Filter verdict in full, or "pass", for comparing verdicts.
func Outcome(s *framework.Status) string {
	if s.IsSuccess() {
		return "pass"
	}
	return fmt.Sprintf("%v: %s", s.Code(), s.Message())
}
