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

package preemption

import (
	"k8s.io/apimachinery/pkg/types"

	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
)

// goingSet is the going pods (see Simulate), listed and by UID: a
// preemption builds it once for the checks before its simulation and for
// the simulation.
type goingSet struct {
	tasks []*framework.TaskInfo
	uids  map[types.UID]bool
}

func newGoingSet(tasks []*framework.TaskInfo) goingSet {
	uids := make(map[types.UID]bool, len(tasks))
	for _, t := range tasks {
		uids[t.Pod.UID] = true
	}
	return goingSet{tasks: tasks, uids: uids}
}
