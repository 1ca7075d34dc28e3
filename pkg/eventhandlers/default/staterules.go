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

package defaulthandler

import (
	v1 "k8s.io/api/core/v1"

	"github.com/batch-scheduler/batch-scheduler/pkg/apis/batchscheduler/v1alpha1"
	"github.com/batch-scheduler/batch-scheduler/pkg/eventhandlers"
)

// The handler's rules for what the cache records are its Policy: the
// checker reads the truth through them (eventhandlers.StateRules), so a
// vendor's Policy is checked as the handler applies it. A handler
// embedding *Handler inherits them.
var _ eventhandlers.StateRules = (*Handler)(nil)

// TrackedNode implements eventhandlers.StateRules: node as Policy.Node
// returns it.
func (h *Handler) TrackedNode(node *v1.Node) *v1.Node {
	return applyPolicy(h.policy.Node, node)
}

// TrackedPod implements eventhandlers.StateRules: pod as Policy.Pod
// returns it.
func (h *Handler) TrackedPod(pod *v1.Pod) *v1.Pod {
	return applyPolicy(h.policy.Pod, pod)
}

// TrackedExternalWorkload implements eventhandlers.StateRules: w as
// Policy.ExternalWorkload returns it.
func (h *Handler) TrackedExternalWorkload(w *v1alpha1.ExternalWorkload) *v1alpha1.ExternalWorkload {
	return applyPolicy(h.policy.ExternalWorkload, w)
}
