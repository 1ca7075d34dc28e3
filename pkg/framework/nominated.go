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

// nominatedKey holds, in a cycle's CycleState, the nominated pods of
// other jobs the scheduler put on the cycle's snapshot.
const nominatedKey StateKey = "framework/nominated"

// nominatedTasks is the data under nominatedKey; never changed once
// written.
type nominatedTasks []*TaskInfo

// Clone implements StateData.
func (n nominatedTasks) Clone() StateData { return n }

// WriteNominated records, for the plugins of the cycle state belongs to,
// the pods of other jobs that preemption or a reservation nominated and
// the scheduler put on the cycle's snapshot (assumed on their nodes) to
// hold their room. The NodeInfos show their requests; a plugin that keeps
// state of its own about what a node has left (the devices that
// ResourceClaims take) reads Nominated to hold what they will need.
func WriteNominated(state *CycleState, tasks []*TaskInfo) {
	if len(tasks) == 0 {
		state.Delete(nominatedKey)
		return
	}
	state.Write(nominatedKey, nominatedTasks(tasks))
}

// Nominated returns what WriteNominated recorded in state; nil when
// nothing was. The slice is shared: callers must not change it.
func Nominated(state *CycleState) []*TaskInfo {
	if state == nil {
		return nil
	}
	d, ok := state.Read(nominatedKey)
	if !ok {
		return nil
	}
	n, _ := d.(nominatedTasks)
	return n
}
