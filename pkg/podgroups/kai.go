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
	"strconv"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// The scheduling condition written to a KAI-Scheduler PodGroup's
// status.schedulingConditions, as KAI's own scheduler writes it: one
// entry per node pool, True with the scheduler's message while the gang
// cannot be placed. batch-scheduler has no node pools: its entry is the
// pool KAINodePool's, and it is removed once the quorum holds nodes.
const (
	KAIConditionUnschedulableOnNodePool = "UnschedulableOnNodePool"
	KAIReasonUnschedulable              = "Unschedulable"
	KAINodePool                         = "default"
)

// KAIStatus is the status rule of a KAI PodGroup (scheduling.run.ai): its
// UnschedulableOnNodePool scheduling condition for the pool KAINodePool.
// KAI's own PodGroup controller, where it runs, writes the phase and pod
// counts; batch-scheduler does not.
func KAIStatus(updated *unstructured.Unstructured, s GangState) (string, bool, error) {
	placed := s.scheduled()
	msg := s.unschedulable
	if !placed && msg == "" {
		return "", false, nil
	}
	if len(msg) > maxMessage {
		msg = msg[:maxMessage]
	}
	if !setKAICondition(updated, placed, msg, time.Now()) {
		return "", false, nil
	}
	if placed {
		return "scheduled", true, nil
	}
	return KAIReasonUnschedulable + "/" + msg, true, nil
}

// setKAICondition removes (placed) or sets the UnschedulableOnNodePool
// entry of KAINodePool in u's status.schedulingConditions, leaving the
// entries of other pools alone, and reports whether that changed
// anything. A new True entry takes the next transitionID after the
// largest of the entries; a changed message keeps the entry's.
func setKAICondition(u *unstructured.Unstructured, placed bool, message string, now time.Time) bool {
	raw, _, _ := unstructured.NestedSlice(u.Object, "status", "schedulingConditions")
	out := make([]any, 0, len(raw)+1)
	var ours map[string]any
	lastID := 0
	for _, r := range raw {
		m, ok := r.(map[string]any)
		if ok {
			if id, err := strconv.Atoi(stringOf(m["transitionID"])); err == nil {
				lastID = max(lastID, id)
			}
		}
		if ok && ours == nil && m["type"] == KAIConditionUnschedulableOnNodePool && m["nodePool"] == KAINodePool {
			ours = m
			continue
		}
		out = append(out, r)
	}
	if placed {
		if ours == nil {
			return false
		}
	} else {
		if ours != nil && ours["status"] == "True" && ours["message"] == message {
			return false
		}
		id, at := any(strconv.Itoa(lastID+1)), any(now.UTC().Format(time.RFC3339))
		if ours != nil && ours["status"] == "True" {
			// Only the message changed: the transition is the same.
			id, at = ours["transitionID"], ours["lastTransitionTime"]
		}
		out = append(out, map[string]any{
			"type":               KAIConditionUnschedulableOnNodePool,
			"nodePool":           KAINodePool,
			"status":             "True",
			"reason":             KAIReasonUnschedulable,
			"message":            message,
			"reasons":            []any{map[string]any{"reason": KAIReasonUnschedulable, "message": message}},
			"transitionID":       id,
			"lastTransitionTime": at,
		})
	}
	return unstructured.SetNestedSlice(u.Object, out, "status", "schedulingConditions") == nil
}

// stringOf returns v when it is a string, "" otherwise.
func stringOf(v any) string {
	s, _ := v.(string)
	return s
}
