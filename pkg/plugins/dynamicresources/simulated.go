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

package dynamicresources

import (
	"sync"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/dynamic-resource-allocation/structured"

	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
)

// simulated holds, inside an eviction simulation, the allocations Filter
// found for each pod per node: the simulation places the preempting job's
// pods one after the other without Reserve, and a later pod must not
// count on the devices an earlier one was placed with.
type simulated struct {
	mu    sync.Mutex // guards byPod; Filter runs on many nodes at once
	byPod map[types.UID]map[string][]resourceapi.AllocationResult
}

// Clone implements framework.StateData; one store serves the cycle.
func (s *simulated) Clone() framework.StateData { return s }

// simulatedOf returns the cycle's store, creating it. The scheduler runs
// a simulation's PreFilterPod calls one at a time, so two never race to
// create it.
func simulatedOf(state *framework.CycleState) *simulated {
	if d, ok := state.Read(simulatedKey); ok {
		if s, ok := d.(*simulated); ok {
			return s
		}
	}
	s := &simulated{byPod: map[types.UID]map[string][]resourceapi.AllocationResult{}}
	state.Write(simulatedKey, s)
	return s
}

// record notes the allocation Filter found for pod on node, the last one
// it found there: that of the victims the simulation settled on.
func (s *simulated) record(pod types.UID, node string, results []resourceapi.AllocationResult) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.byPod[pod] == nil {
		s.byPod[pod] = map[string][]resourceapi.AllocationResult{}
	}
	s.byPod[pod][node] = results
}

// addPlaced adds to taken (and to shared, for shares of devices) the
// devices of the other pods the simulation placed on nodes (they are on
// a node there, and Filter found an allocation for them on it).
func (s *simulated) addPlaced(taken sets.Set[structured.DeviceID], shared *sharedUse, pod *v1.Pod, nodes []*framework.NodeInfo) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.byPod) == 0 {
		return
	}
	for _, n := range nodes {
		for _, t := range n.Pods {
			if t.GetUID() == pod.UID {
				continue
			}
			for i := range s.byPod[t.GetUID()][n.Name()] {
				a := &s.byPod[t.GetUID()][n.Name()][i]
				taken.Insert(allocationDevices(a)...)
				shared.add(a)
			}
		}
	}
}
