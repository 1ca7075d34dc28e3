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
