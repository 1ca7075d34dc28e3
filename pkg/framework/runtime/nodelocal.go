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

package runtime

import (
	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
)

// NodeLocal reports whether every Filter plugin that PreFilter and
// PreFilterPod left active for the current pod of state, and every Score
// plugin that PreScore left active, is framework.NodeLocal: then a
// placement on one node changes the pod's verdicts and raw scores on that
// node only. Call it after RunPreScorePlugins.
func (f *Framework) NodeLocal(state *framework.CycleState) bool {
	for _, pl := range f.activeFilters(state) {
		if _, ok := pl.(framework.NodeLocal); !ok {
			return false
		}
	}
	plugins, _ := f.activeScorePlugins(state)
	for _, pl := range plugins {
		if _, ok := pl.(framework.NodeLocal); !ok {
			return false
		}
	}
	return true
}
