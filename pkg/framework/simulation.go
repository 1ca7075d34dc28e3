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

// simulationKey marks a CycleState while the preemption library simulates
// evictions for it (RoomMaker.MakeRoom).
const simulationKey StateKey = "framework/eviction-simulation"

// simulationMark is the data under simulationKey.
type simulationMark struct{}

// Clone implements StateData.
func (simulationMark) Clone() StateData { return simulationMark{} }

// MarkEvictionSimulation says that the plugins now run inside an eviction
// simulation: the nodes they are given (PreFilterPod's nodes, Filter's
// node) lack the pods the simulation took off as victims. A plugin that
// keeps state of its own about running pods (e.g. the devices their
// ResourceClaims hold) reads IsEvictionSimulation to treat a running pod
// missing from the nodes as gone. The preemption library (package
// framework/preemption) calls it when a simulation starts and
// UnmarkEvictionSimulation when it ends.
func MarkEvictionSimulation(state *CycleState) { state.Write(simulationKey, simulationMark{}) }

// UnmarkEvictionSimulation ends what MarkEvictionSimulation started.
func UnmarkEvictionSimulation(state *CycleState) { state.Delete(simulationKey) }

// IsEvictionSimulation reports whether state is inside an eviction
// simulation (see MarkEvictionSimulation).
func IsEvictionSimulation(state *CycleState) bool {
	if state == nil {
		return false
	}
	_, ok := state.Read(simulationKey)
	return ok
}
