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

package cache

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
)

// AddPod implements eventhandlers.PodCache. A pod the cache has as pending
// is moved to its node; a pod it has as bound is updated; a pod it has as
// assumed is confirmed (see AssumePod).
func (c *SchedulerCache) AddPod(pod *v1.Pod) error {
	if pod.Spec.NodeName == "" {
		return fmt.Errorf("adding pod %s as assigned: %w: spec.nodeName is empty", klog.KObj(pod), ErrWrongState)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.setTaskLocked(c.ownTask(pod))
	return nil
}

// SetPodRecord implements eventhandlers.PodRecordCache: AddPod or
// UpdatePod of pod, made from rec, keeping rec in the pod's task.
func (c *SchedulerCache) SetPodRecord(rec *framework.PodRecord, pod *v1.Pod) error {
	if pod.Spec.NodeName == "" || pod.UID != rec.GetUID() {
		return fmt.Errorf("recording assigned pod %s: %w: spec.nodeName %q, the record's UID %s", klog.KObj(pod), ErrWrongState, pod.Spec.NodeName, rec.GetUID())
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.setTaskLocked(c.ownTaskOf(pod, rec))
	return nil
}

// UpdatePod implements eventhandlers.PodCache. It follows changes of
// requests (in-place resize), phase and node; an unknown pod is added, and
// an assumed or pending one becomes bound.
func (c *SchedulerCache) UpdatePod(oldPod, newPod *v1.Pod) error {
	if newPod.Spec.NodeName == "" {
		return fmt.Errorf("updating assigned pod %s: %w: spec.nodeName is empty", klog.KObj(newPod), ErrWrongState)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.tasks[newPod.UID]; !ok {
		klog.V(4).InfoS("Update of a pod the cache did not have; adding it", "pod", klog.KObj(newPod), "node", newPod.Spec.NodeName)
	}
	c.setTaskLocked(c.ownTask(newPod))
	return nil
}

// AddPendingPod implements eventhandlers.PodCache.
func (c *SchedulerCache) AddPendingPod(pod *v1.Pod) error {
	return c.setPendingPod(pod, "adding")
}

// UpdatePendingPod implements eventhandlers.PodCache. An unknown pod is
// added. A change of anything but the pod's status moves its job out of
// the unschedulable queue. An assumed pod stays assumed, with the new
// object.
func (c *SchedulerCache) UpdatePendingPod(oldPod, newPod *v1.Pod) error {
	return c.setPendingPod(newPod, "updating")
}

func (c *SchedulerCache) setPendingPod(pod *v1.Pod, verb string) error {
	if pod.Spec.NodeName != "" {
		return fmt.Errorf("%s pending pod %s: %w: it is assigned to node %q", verb, klog.KObj(pod), ErrWrongState, pod.Spec.NodeName)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if old, ok := c.tasks[pod.UID]; ok {
		switch old.Status {
		case framework.TaskBound:
			return fmt.Errorf("%s pending pod %s: %w: it is bound to node %q", verb, klog.KObj(pod), ErrWrongState, old.NodeName)
		case framework.TaskAssumed:
			c.updateAssumedLocked(old, pod)
			return nil
		}
	}
	c.setTaskLocked(c.ownTask(pod))
	return nil
}

// RemovePendingPod implements eventhandlers.PodCache: the pod leaves the
// scheduling queue but is not deleted. A pending task leaves the cache; an
// assumed one stays assumed, and accounted on its node, until its bind
// fails (ForgetPod), the informer reports it bound, or the assumption
// expires, and is then not made pending again.
func (c *SchedulerCache) RemovePendingPod(pod *v1.Pod) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	t, ok := c.tasks[pod.UID]
	switch {
	case !ok:
		return fmt.Errorf("removing pending pod %s: %w", klog.KObj(pod), ErrNotFound)
	case t.Status == framework.TaskBound:
		return fmt.Errorf("removing pending pod %s: %w: it is bound to node %q", klog.KObj(pod), ErrWrongState, t.NodeName)
	case t.Status == framework.TaskAssumed:
		if a := c.assumed[pod.UID]; a.pending != nil {
			klog.V(4).InfoS("Assumed pod is no longer pending; keeping the assumption until its bind is settled",
				"pod", klog.KObj(pod), "node", t.NodeName)
			a.pending = nil
			c.queue.PodRemoved(t.Job, pod.UID)
		}
		return nil
	}
	c.deleteTaskLocked(pod.UID)
	return nil
}

// DeletePod implements eventhandlers.PodCache. It is the one way a pod
// leaves the cache because it was deleted: pending, assumed (its bind may
// be in flight) or bound, found by UID, since a deleted pod's last known
// state may lag behind the cache's.
func (c *SchedulerCache) DeletePod(pod *v1.Pod) (freed bool, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	t, ok := c.tasks[pod.UID]
	if !ok {
		return false, fmt.Errorf("deleting pod %s: %w", klog.KObj(pod), ErrNotFound)
	}
	if t.Status == framework.TaskAssumed {
		klog.V(2).InfoS("Assumed pod was deleted before it was reported bound; dropping it", "pod", klog.KObj(pod), "node", t.NodeName)
	}
	c.deleteTaskLocked(pod.UID)
	return t.OnNode() && t.Counted, nil
}

// setTaskLocked records t, a pending or bound task built from an informer
// object, replacing the task of the same pod wherever it was: in another
// job, on another node, pending, assumed or bound. A bound t confirms an
// assumed task.
func (c *SchedulerCache) setTaskLocked(t *framework.TaskInfo) {
	uid := t.GetUID()
	old, existed := c.tasks[uid]
	if existed {
		wasQueued := c.queuedLocked(old)
		if old.Job != t.Job || KeepsJobRecord(old) != KeepsJobRecord(t) {
			c.removeFromJobLocked(old)
		}
		if old.OnNode() && !sameNode(old, t) {
			c.removeFromNodeLocked(old)
		}
		switch old.Status {
		case framework.TaskPending:
			c.numPending--
		case framework.TaskAssumed:
			delete(c.assumed, uid)
			if t.NodeName != old.NodeName {
				klog.InfoS("Assumed pod was reported bound to another node; accounting it there",
					"pod", klog.KObj(t), "assumedNode", old.NodeName, "node", t.NodeName)
			} else {
				klog.V(4).InfoS("Assumed pod was reported bound", "pod", klog.KObj(t), "node", t.NodeName)
			}
		}
		if wasQueued && (t.Status != framework.TaskPending || old.Job != t.Job) {
			c.queue.PodRemoved(old.Job, uid)
		}
	}
	c.tasks[uid] = t
	c.indexOwnerLocked(uid, t)
	if len(t.ResourceClaims()) > 0 || len(c.claimObjs.reads[uid]) > 0 {
		// A pod that has no claims and had none is not indexed: no
		// pod to make of a bound pod's record.
		c.indexClaimsLocked(uid, t.PodObject())
	}
	if t.Status == framework.TaskPending {
		c.numPending++
	}
	c.fileTaskLocked(t)

	switch {
	case existed && sameNode(old, t):
		info, item := c.accountedNodeLocked(t.NodeName)
		if info == nil || !info.RemoveTask(uid) {
			klog.ErrorS(nil, "Pod missing from the node the cache accounted it to", "pod", klog.KObj(t), "node", t.NodeName)
			info, item = c.accountingNodeLocked(t.NodeName, usageOwner{pod: t})
		}
		info.AddTask(t)
		c.releaseNodeLocked(info, item)
	case t.Status == framework.TaskBound:
		c.addToNodeLocked(t)
	default:
		relevant := !existed || old.Status != framework.TaskPending || old.Job != t.Job || schedulingRelevantChange(old.PodObject(), t.PodObject())
		c.queue.PodChanged(t.Job, t.PodObject(), relevant)
	}
	c.updateSizeGaugesLocked()
}

// deleteTaskLocked forgets the task of the pod with uid and reports whether
// there was one. An assumed task's node accounting is reverted.
func (c *SchedulerCache) deleteTaskLocked(uid types.UID) bool {
	t, ok := c.tasks[uid]
	if !ok {
		return false
	}
	wasQueued := c.queuedLocked(t)
	delete(c.tasks, uid)
	c.indexOwnerLocked(uid, nil)
	c.indexClaimsLocked(uid, nil)
	c.removeFromJobLocked(t)
	if t.OnNode() {
		c.removeFromNodeLocked(t)
	}
	switch t.Status {
	case framework.TaskPending:
		c.numPending--
	case framework.TaskAssumed:
		delete(c.assumed, uid)
	}
	if wasQueued {
		c.queue.PodRemoved(t.Job, uid)
	}
	c.updateSizeGaugesLocked()
	return true
}

// queuedLocked reports whether the scheduling queue holds t's pod: t is
// pending, or assumed and still reported pending by the informer.
func (c *SchedulerCache) queuedLocked(t *framework.TaskInfo) bool {
	switch t.Status {
	case framework.TaskPending:
		return true
	case framework.TaskAssumed:
		return c.assumed[t.GetUID()].pending != nil
	}
	return false
}

// jobForTaskLocked returns the job of t, creating it, with the group
// policies recorded for it, if needed.
func (c *SchedulerCache) jobForTaskLocked(t *framework.TaskInfo) *framework.JobInfo {
	job, ok := c.jobs[t.Job]
	if !ok {
		job = framework.NewJobInfo(t.Job)
		c.applyGroupPoliciesLocked(job, t)
		c.jobs[t.Job] = job
		c.indexOwnerJobLocked(t, true)
	}
	return job
}

// setJobTaskLocked adds t to job, or replaces its task of the same pod,
// keeping the queues' usage in step.
func (c *SchedulerCache) setJobTaskLocked(job *framework.JobInfo, t *framework.TaskInfo) {
	c.changeJobLocked(job, t.GetUID(), func() { job.SetTask(t) })
}

// KeepsJobRecord reports whether the cache keeps t in a record of its job
// (framework.JobInfo): every task but the bound pods of other schedulers
// that are no gang's members. Such a pod is never scheduled, counts
// against no queue (framework.TaskInfo.UsesShare) and is its job's only
// task, and most of a large cluster's pods are like it: the cache keeps
// only its task, accounted on its node, and builds its job when asked
// (Job). The consistency checker holds the cache to this rule.
func KeepsJobRecord(t *framework.TaskInfo) bool {
	return t.Own || t.Job.Gang || t.Status != framework.TaskBound
}

// fileTaskLocked puts t, the cache's current task of its pod, in its job's
// record, creating the record if needed, or, for a task without one (see
// KeepsJobRecord), in the index of such tasks.
func (c *SchedulerCache) fileTaskLocked(t *framework.TaskInfo) {
	if KeepsJobRecord(t) {
		c.setJobTaskLocked(c.jobForTaskLocked(t), t)
		return
	}
	c.jobless.set(t)
}

// removeFromJobLocked takes t out of its job's record, deleting a record
// left without tasks, or out of the index of tasks without one. The index
// entry is left when it belongs to another pod of the same name (a pod
// deleted and created again, whose events crossed).
func (c *SchedulerCache) removeFromJobLocked(t *framework.TaskInfo) {
	if !KeepsJobRecord(t) {
		c.jobless.remove(t)
		return
	}
	job, ok := c.jobs[t.Job]
	if !ok {
		return
	}
	c.changeJobLocked(job, t.GetUID(), func() { job.DeleteTask(t.GetUID()) })
	if len(job.Tasks) == 0 {
		delete(c.jobs, t.Job)
		c.indexOwnerJobLocked(t, false)
	}
}

func (c *SchedulerCache) addToNodeLocked(t *framework.TaskInfo) {
	info, item := c.accountingNodeLocked(t.NodeName, usageOwner{pod: t})
	info.AddTask(t)
	if item != nil {
		c.touchLocked(item)
	}
}

func (c *SchedulerCache) removeFromNodeLocked(t *framework.TaskInfo) {
	info, item := c.accountedNodeLocked(t.NodeName)
	if info == nil || !info.RemoveTask(t.GetUID()) {
		// The cache's own bookkeeping is broken if this happens.
		klog.ErrorS(nil, "Pod missing from the node the cache accounted it to", "pod", klog.KObj(t), "node", t.NodeName)
		return
	}
	c.releaseNodeLocked(info, item)
}

// sameNode reports whether a and b are both on (bound or assumed to) the
// same node.
func sameNode(a, b *framework.TaskInfo) bool {
	return a.OnNode() && b.OnNode() && a.NodeName == b.NodeName
}

// schedulingRelevantChange reports whether newPod differs from oldPod in
// anything the scheduler looks at: its spec, labels or annotations, and
// the names of the ResourceClaims made from its templates
// (status.resourceClaimStatuses, which the resource claim controller
// writes after creating them: a pod waiting for them can go on). Other
// status updates (conditions the scheduler itself writes, for instance)
// are not.
func schedulingRelevantChange(oldPod, newPod *v1.Pod) bool {
	return !apiequality.Semantic.DeepEqual(oldPod.Spec, newPod.Spec) ||
		!apiequality.Semantic.DeepEqual(oldPod.Labels, newPod.Labels) ||
		!apiequality.Semantic.DeepEqual(oldPod.Annotations, newPod.Annotations) ||
		!apiequality.Semantic.DeepEqual(oldPod.Status.ResourceClaimStatuses, newPod.Status.ResourceClaimStatuses)
}
