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

package podgroups

import (
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// The condition written to a Volcano PodGroup's status.conditions, as
// Volcano's own scheduler writes it: True, with the scheduler's message,
// while the gang cannot be placed.
const (
	VolcanoConditionUnschedulable = "Unschedulable"
	// VolcanoReasonNotEnoughResources is Volcano's reason for a gang that
	// does not fit; VolcanoReasonScheduled ends the condition.
	VolcanoReasonNotEnoughResources = "NotEnoughResources"
	VolcanoReasonScheduled          = "Scheduled"
)

// volcanoCondition is the Unschedulable condition for s: True with the
// message of an unschedulable pod while the quorum does not hold nodes,
// False once it does. ok is false when there is nothing to say.
func volcanoCondition(s gangState) (status, reason, message string, ok bool) {
	if s.scheduled() {
		return "False", VolcanoReasonScheduled, "", true
	}
	if msg := s.unschedulable; msg != "" {
		if len(msg) > maxMessage {
			msg = msg[:maxMessage]
		}
		return "True", VolcanoReasonNotEnoughResources, msg, true
	}
	return "", "", "", false
}

// setVolcanoCondition sets the Unschedulable condition on u's
// status.conditions (Volcano's shape: type, status, reason, message,
// lastTransitionTime) and reports whether that changed anything. A False
// condition is only written over a True one: a gang placed at once gets
// none.
func setVolcanoCondition(u *unstructured.Unstructured, status, reason, message string, now time.Time) bool {
	raw, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	out := make([]any, 0, len(raw)+1)
	found := false
	for _, r := range raw {
		m, ok := r.(map[string]any)
		if !ok || m["type"] != VolcanoConditionUnschedulable || found {
			out = append(out, r)
			continue
		}
		found = true
		if m["status"] == status && m["reason"] == reason && m["message"] == message {
			return false
		}
		transition := m["lastTransitionTime"]
		if m["status"] != status {
			transition = now.UTC().Format(time.RFC3339)
		}
		out = append(out, map[string]any{"type": VolcanoConditionUnschedulable, "status": status, "reason": reason,
			"message": message, "lastTransitionTime": transition})
	}
	if !found {
		if status != "True" {
			return false
		}
		out = append(out, map[string]any{"type": VolcanoConditionUnschedulable, "status": status, "reason": reason,
			"message": message, "lastTransitionTime": now.UTC().Format(time.RFC3339)})
	}
	return unstructured.SetNestedSlice(u.Object, out, "status", "conditions") == nil
}
