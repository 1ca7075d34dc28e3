package scheduler

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
	"github.com/batch-scheduler/batch-scheduler/pkg/queue"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/klog/v2"
)

// reportUnschedulable sets PodScheduled=False/Unschedulable with msg on
// pod and records a FailedScheduling event. The status write happens in
// the background and is skipped when the pod already says the same.
//
// Both messages are bounded (framework.MaxEventNote,
// framework.MaxConditionMessage): they quote what users wrote.
func (s *Scheduler) reportUnschedulable(ctx context.Context, pod *v1.Pod, msg string) {
	s.opts.Recorder.Eventf(pod, nil, v1.EventTypeWarning, "FailedScheduling", "Scheduling", "%s", framework.TruncateMessage(msg, framework.MaxEventNote))
	cond := v1.PodCondition{
		Type:    v1.PodScheduled,
		Status:  v1.ConditionFalse,
		Reason:  v1.PodReasonUnschedulable,
		Message: framework.TruncateMessage(msg, framework.MaxConditionMessage),
	}
	if hasCondition(pod, cond) {
		return
	}
	s.bindWG.Add(1)
	go func() {
		defer s.bindWG.Done()
		ticket := s.binds.acquire()
		err := s.patchCondition(ctx, pod, cond)
		s.binds.release(ticket, err)
		if err != nil {
			klog.FromContext(ctx).Error(err, "Updating the scheduling condition of a pod", "pod", klog.KObj(pod))
		}
	}()
}

func hasCondition(pod *v1.Pod, want v1.PodCondition) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == want.Type {
			return c.Status == want.Status && c.Reason == want.Reason && c.Message == want.Message
		}
	}
	return false
}

// patchCondition writes cond into the pod's status with a strategic merge
// patch (conditions merge by type), so concurrent writers of other fields
// are not overwritten.
func (s *Scheduler) patchCondition(ctx context.Context, pod *v1.Pod, cond v1.PodCondition) error {
	cond.LastTransitionTime = metav1.Now()
	oldData, err := json.Marshal(v1.Pod{Status: v1.PodStatus{Conditions: pod.Status.Conditions}})
	if err != nil {
		return fmt.Errorf("encoding the status of pod %s: %w", podKey(pod), err)
	}
	newStatus := v1.PodStatus{Conditions: append([]v1.PodCondition(nil), pod.Status.Conditions...)}
	replaced := false
	for i := range newStatus.Conditions {
		if old := newStatus.Conditions[i]; old.Type == cond.Type {
			if old.Status == cond.Status && !old.LastTransitionTime.IsZero() {
				// Only the reason or message changed: the condition did
				// not transition.
				cond.LastTransitionTime = old.LastTransitionTime
			}
			newStatus.Conditions[i], replaced = cond, true
		}
	}
	if !replaced {
		newStatus.Conditions = append(newStatus.Conditions, cond)
	}
	newData, err := json.Marshal(v1.Pod{Status: newStatus})
	if err != nil {
		return fmt.Errorf("encoding the status of pod %s: %w", podKey(pod), err)
	}
	patch, err := strategicpatch.CreateTwoWayMergePatch(oldData, newData, v1.Pod{})
	if err != nil {
		return fmt.Errorf("building the status patch of pod %s: %w", podKey(pod), err)
	}
	_, err = s.opts.Client.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status")
	if err != nil {
		return fmt.Errorf("patching the status of pod %s: %w", podKey(pod), err)
	}
	return nil
}

// cacheAttemptForBindError is the queue attempt for a job whose bind
// failed: an error, retried after backoff.
func cacheAttemptForBindError(err error) queue.Attempt {
	return queue.Attempt{Reason: "binding failed: " + err.Error(), Err: err}
}
