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
	"context"
	"errors"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
	"github.com/batch-scheduler/batch-scheduler/pkg/resources"
)

// assumedCleanupPeriod is how often Run's cleanup expires assumed pods.
const assumedCleanupPeriod = 1 * time.Second

// assumedPod is what the cache knows about an assumed task beyond its
// TaskInfo.
type assumedPod struct {
	// pending is the pod as the informer last reported it, still pending;
	// nil once the informer stopped reporting it pending (it was bound, or
	// no longer ours, while its bind was in flight). Only while it is set
	// is the pod in the scheduling queue, and can the task become pending
	// again.
	pending *v1.Pod
	// bindingFinished is set by FinishBinding; from then on the assumption
	// expires at deadline unless the informer confirms it.
	bindingFinished bool
	deadline        time.Time
}

// AssumePod records that the scheduler placed pod on nodeName and is about
// to bind it. The pod is accounted on the node at once (its NodeInfo's
// Requested grows and its generation moves, so the next UpdateSnapshot
// sees it) and its task becomes framework.TaskAssumed. The pod stays in the
// scheduling queue, with its job, until the informer reports it bound.
//
// Only the pod's UID is read: the cache uses its own, latest, copy of the
// pod. It fails, changing nothing, when the cache does not have the pod as
// pending (it is unknown, already assumed or bound), when nodeName is not
// a node the cache knows (or only a placeholder), or when pod's own
// spec.nodeName names another node.
//
// After a successful bind call the scheduler calls FinishBinding; after a
// failed one, ForgetPod.
func (c *SchedulerCache) AssumePod(pod *v1.Pod, nodeName string) error {
	if pod == nil {
		return errors.New("assuming pod: nil pod")
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.canAssumeLocked(pod, nodeName); err != nil {
		return err
	}
	c.assumeLocked(c.tasks[pod.UID], nodeName)
	return nil
}

// canAssumeLocked returns why pod cannot be assumed on nodeName, or nil
// (see AssumePod).
func (c *SchedulerCache) canAssumeLocked(pod *v1.Pod, nodeName string) error {
	if nodeName == "" {
		return fmt.Errorf("assuming pod %s: empty node name", klog.KObj(pod))
	}
	if pod.Spec.NodeName != "" && pod.Spec.NodeName != nodeName {
		return fmt.Errorf("assuming pod %s on node %q: %w: its spec.nodeName is %q", klog.KObj(pod), nodeName, ErrWrongState, pod.Spec.NodeName)
	}
	t, ok := c.tasks[pod.UID]
	if !ok {
		return fmt.Errorf("assuming pod %s on node %q: %w", klog.KObj(pod), nodeName, ErrNotFound)
	}
	switch t.Status {
	case framework.TaskAssumed:
		return fmt.Errorf("assuming pod %s on node %q: %w: it is already assumed on node %q", klog.KObj(pod), nodeName, ErrWrongState, t.NodeName)
	case framework.TaskBound:
		return fmt.Errorf("assuming pod %s on node %q: %w: it is bound to node %q", klog.KObj(pod), nodeName, ErrWrongState, t.NodeName)
	}
	item, ok := c.nodes[nodeName]
	if !ok {
		return fmt.Errorf("assuming pod %s on node %q: node %w", klog.KObj(pod), nodeName, ErrNotFound)
	}
	if item.info.Placeholder {
		return fmt.Errorf("assuming pod %s on node %q: node %w: it is only a placeholder for pods bound to it", klog.KObj(pod), nodeName, ErrNotFound)
	}
	return nil
}

// assumeLocked assumes the pending task t on nodeName, which
// canAssumeLocked accepted.
func (c *SchedulerCache) assumeLocked(t *framework.TaskInfo, nodeName string) {
	pod := t.PodObject()
	item := c.nodes[nodeName]
	at := framework.NewAssumedTaskInfoInGroup(t.PodObject(), nodeName, t.Requests, c.membershipLocked(t.PodObject()))
	at.RuntimeBounds = c.runtimeBounds
	at.ClaimDevices = t.ClaimDevices
	c.assumed[pod.UID] = &assumedPod{pending: t.PodObject()}
	c.tasks[pod.UID] = at
	c.numPending--
	c.setJobTaskLocked(c.jobs[t.Job], at)
	item.info.AddTask(at)
	c.touchLocked(item)
	c.updateSizeGaugesLocked()
	klog.V(4).InfoS("Assumed pod", "pod", klog.KObj(pod), "node", nodeName)
}

// AssumePods assumes the pods of one placement together, each on the node
// placements maps its UID to, as AssumePod does one pod, and only if the
// decision still stands on the cache's latest state: seen(node) is the
// node as the deciding cycle saw it (its snapshot's NodeInfo, with the
// cycle's own placements on it), and a node whose capacity for this
// scheduler has shrunk since by more than the room the decision left
// there fails the whole placement with ErrCapacityShrank. Shrunk means:
// allocatable smaller or external usage larger, by more than the free room
// the cycle saw after its placements; or the cap smaller by more than what
// the cap left (a capped node seen uncapped always counts), in a resource
// the placement asks for there.
//
// This is the commit of a cycle against the cache's latest state, checked
// and applied under one lock hold. A cycle decides on a snapshot taken at
// its start; an allocator may shrink this framework's grant while the
// cycle runs, and once the scheduler has told the allocator that it
// applied the shrink (the demand report's observedGrants), no placement
// decided under the old grant may take more than the new one allows. The
// check compares amounts of capacity, not the fit rule (which is the
// plugins'): a decision that still has its room is one the plugins would
// make again.
//
// On any failure nothing is assumed. An error wraps ErrCapacityShrank, or
// what AssumePod would fail with, and names the pod and node.
func (c *SchedulerCache) AssumePods(pods []*v1.Pod, placements map[string]string, seen func(node string) *framework.NodeInfo) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	asked := map[string]resources.Resource{}
	uids := make(map[types.UID]bool, len(pods))
	for _, pod := range pods {
		if pod == nil {
			return errors.New("assuming pods: nil pod")
		}
		if uids[pod.UID] {
			return fmt.Errorf("assuming pod %s: listed twice", klog.KObj(pod))
		}
		uids[pod.UID] = true
		nodeName := placements[string(pod.UID)]
		if err := c.canAssumeLocked(pod, nodeName); err != nil {
			return err
		}
		a := asked[nodeName]
		a.Add(c.tasks[pod.UID].Requests)
		asked[nodeName] = a
	}
	if seen != nil {
		for _, pod := range pods {
			nodeName := placements[string(pod.UID)]
			a, ok := asked[nodeName]
			if !ok {
				continue // checked already
			}
			delete(asked, nodeName)
			if was := seen(nodeName); was != nil {
				if what := shrunk(was, c.nodes[nodeName].info, a); what != "" {
					return fmt.Errorf("assuming pod %s on node %q: %w: %s", klog.KObj(pod), nodeName, ErrCapacityShrank, what)
				}
			}
		}
	}
	for _, pod := range pods {
		c.assumeLocked(c.tasks[pod.UID], placements[string(pod.UID)])
	}
	return nil
}

// shrunk says how now has lost, since was (the deciding cycle's view, its
// placements on it), more capacity for this scheduler than was left free,
// in a resource asked (what the placement asks on the node); "" when the
// decision still stands.
func shrunk(was, now *framework.NodeInfo, asked resources.Resource) string {
	// The node: what it lost (allocatable gone, external usage come)
	// against the room the cycle left on it.
	lost := was.Schedulable.Clone()
	lost.Sub(now.Schedulable)
	lost.Add(now.External)
	lost.Sub(was.External)
	room := was.Schedulable.Clone()
	room.Sub(was.Requested)
	room.Sub(was.External)
	if name, ok := beyond(lost, room, asked, true); ok {
		return fmt.Sprintf("%s: the node lost %s (allocatable %s, was %s; external usage %s, was %s), the placement left %s",
			name, amountOf(lost, name), now.Schedulable, was.Schedulable, now.External, was.External, amountOf(room, name))
	}
	// The cap: what it lost against what it left.
	switch {
	case now.Cap == nil:
		return ""
	case was.Cap == nil:
		return fmt.Sprintf("capped at %s, was uncapped", *now.Cap)
	}
	capLost := was.Cap.Clone()
	capLost.Sub(*now.Cap)
	capRoom, _ := was.CapIdle()
	if name, ok := beyond(capLost, capRoom, asked, false); ok {
		return fmt.Sprintf("%s: the cap lost %s (cap %s, was %s), the placement left %s of it",
			name, amountOf(capLost, name), *now.Cap, *was.Cap, amountOf(capRoom, name))
	}
	return ""
}

// beyond returns a resource asked for (the pod count only if withPods)
// of which more was lost than room had, if there is one.
func beyond(lost, room, asked resources.Resource, withPods bool) (v1.ResourceName, bool) {
	check := func(a, l, r int64) bool { return a > 0 && l > 0 && l > r }
	switch {
	case withPods && check(asked.Pods, lost.Pods, room.Pods):
		return v1.ResourcePods, true
	case check(asked.MilliCPU, lost.MilliCPU, room.MilliCPU):
		return v1.ResourceCPU, true
	case check(asked.Memory, lost.Memory, room.Memory):
		return v1.ResourceMemory, true
	case check(asked.EphemeralStorage, lost.EphemeralStorage, room.EphemeralStorage):
		return v1.ResourceEphemeralStorage, true
	}
	for name, a := range asked.Scalar {
		if check(a, lost.Scalar[name], room.Scalar[name]) {
			return name, true
		}
	}
	return "", false
}

// amountOf is r's amount of name, for messages.
func amountOf(r resources.Resource, name v1.ResourceName) string {
	switch name {
	case v1.ResourceCPU:
		return fmt.Sprintf("%dm cpu", r.MilliCPU)
	case v1.ResourceMemory:
		return fmt.Sprintf("%d bytes of memory", r.Memory)
	case v1.ResourceEphemeralStorage:
		return fmt.Sprintf("%d bytes of ephemeral storage", r.EphemeralStorage)
	case v1.ResourcePods:
		return fmt.Sprintf("%d pods", r.Pods)
	}
	return fmt.Sprintf("%d %s", r.Scalar[name], name)
}

// FinishBinding records that the bind call for an assumed pod succeeded.
// From now on the assumption expires after Options.AssumedPodTTL unless
// the informer reports the pod bound first (see Run).
//
// A pod the informer has already reported bound, or that has been deleted
// since, needs nothing and is not an error. A pod the cache has as pending
// (never assumed, or forgotten) is.
func (c *SchedulerCache) FinishBinding(pod *v1.Pod) error {
	if pod == nil {
		return errors.New("finishing binding: nil pod")
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	t, ok := c.tasks[pod.UID]
	switch {
	case !ok:
		klog.V(4).InfoS("Pod left the cache before its binding finished", "pod", klog.KObj(pod))
		return nil
	case t.Status == framework.TaskBound:
		return nil
	case t.Status == framework.TaskPending:
		return fmt.Errorf("finishing binding of pod %s: %w: it is pending, not assumed", klog.KObj(pod), ErrWrongState)
	}
	a := c.assumed[pod.UID]
	a.bindingFinished = true
	a.deadline = c.opts.Clock.Now().Add(c.opts.AssumedPodTTL)
	return nil
}

// ForgetPod undoes AssumePod after a failed bind: the pod is taken off its
// node and is pending again, or, if the informer has meanwhile stopped
// reporting it pending (it was deleted), leaves the cache. The job is not
// requeued: the caller ends the attempt with AddUnschedulable, which
// accepts a job awaiting binding.
//
// It fails, changing nothing, when the pod is not assumed: unknown (it
// was deleted), pending, or already reported bound by the informer (to
// the assumed node or, if another binder won, to another one).
func (c *SchedulerCache) ForgetPod(pod *v1.Pod) error {
	if pod == nil {
		return errors.New("forgetting pod: nil pod")
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	t, ok := c.tasks[pod.UID]
	switch {
	case !ok:
		return fmt.Errorf("forgetting pod %s: %w", klog.KObj(pod), ErrNotFound)
	case t.Status == framework.TaskPending:
		return fmt.Errorf("forgetting pod %s: %w: it is pending, not assumed", klog.KObj(pod), ErrWrongState)
	case t.Status == framework.TaskBound:
		return fmt.Errorf("forgetting pod %s: %w: the informer reported it bound to node %q", klog.KObj(pod), ErrWrongState, t.NodeName)
	}
	pending := c.revertAssumedLocked(t)
	klog.V(4).InfoS("Forgot assumed pod", "pod", klog.KObj(pod), "node", t.NodeName, "pending", pending)
	return nil
}

// revertAssumedLocked takes the assumed task t off its node. It becomes
// pending again if the informer still reports the pod pending, and leaves
// the cache otherwise; the result says which. The scheduling queue is not
// told: it still holds the pod in the first case, and never did in the
// second.
func (c *SchedulerCache) revertAssumedLocked(t *framework.TaskInfo) (pending bool) {
	uid := t.GetUID()
	a := c.assumed[uid]
	delete(c.assumed, uid)
	c.removeFromNodeLocked(t)
	if a.pending == nil {
		delete(c.tasks, uid)
		c.indexOwnerLocked(uid, nil)
		c.removeFromJobLocked(t)
	} else {
		pt := c.ownTask(a.pending)
		c.tasks[uid] = pt
		c.indexOwnerLocked(uid, pt)
		c.numPending++
		if pt.Job != t.Job {
			// Only if the rule that puts pods in jobs gave the pod
			// another job meanwhile: the queue follows.
			c.removeFromJobLocked(t)
			c.queue.PodRemoved(t.Job, uid)
			c.queue.PodChanged(pt.Job, pt.PodObject(), true)
		}
		c.setJobTaskLocked(c.jobForTaskLocked(pt), pt)
	}
	c.updateSizeGaugesLocked()
	return a.pending != nil
}

// updateAssumedLocked replaces the pending pod behind the assumed task old
// with pod, a newer version the informer reports, keeping the assumption.
func (c *SchedulerCache) updateAssumedLocked(old *framework.TaskInfo, pod *v1.Pod) {
	uid := pod.UID
	a := c.assumed[uid]
	prev := a.pending
	t := framework.NewAssumedTaskInfoInGroup(pod, old.NodeName, resources.PodRequests(pod), c.membershipLocked(pod))
	t.RuntimeBounds = c.runtimeBounds
	t.ClaimDevices = c.claimDevicesFor(old, pod)
	if old.Job != t.Job {
		c.removeFromJobLocked(old)
		if prev != nil {
			c.queue.PodRemoved(old.Job, uid)
		}
	}
	c.tasks[uid] = t
	c.indexOwnerLocked(uid, t)
	c.indexClaimsLocked(uid, pod)
	c.setJobTaskLocked(c.jobForTaskLocked(t), t)
	info, item := c.accountedNodeLocked(t.NodeName)
	if info == nil || !info.RemoveTask(uid) {
		klog.ErrorS(nil, "Assumed pod missing from the node the cache accounted it to", "pod", klog.KObj(pod), "node", t.NodeName)
		info, item = c.accountingNodeLocked(t.NodeName, usageOwner{pod: t})
	}
	info.AddTask(t)
	c.releaseNodeLocked(info, item)
	a.pending = pod
	relevant := prev == nil || old.Job != t.Job || schedulingRelevantChange(prev, pod)
	c.queue.PodChanged(t.Job, pod, relevant)
	c.updateSizeGaugesLocked()
}

// cleanupAssumedPods drops the assumptions whose bind finished more than
// Options.AssumedPodTTL ago without the informer reporting the pod bound.
// Such a pod is pending again, and its job is requeued after backoff; or,
// if the informer no longer reports it pending, it leaves the cache.
func (c *SchedulerCache) cleanupAssumedPods() {
	now := c.opts.Clock.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	for uid, a := range c.assumed {
		if !a.bindingFinished || now.Before(a.deadline) {
			continue
		}
		t := c.tasks[uid]
		pending := c.revertAssumedLocked(t)
		c.expiredCounter.Inc()
		klog.ErrorS(nil, "Assumed pod was not reported bound in time; dropping the assumption",
			"pod", klog.KObj(t), "node", t.NodeName, "ttl", c.opts.AssumedPodTTL, "pending", pending)
		if pending {
			c.queue.AssumptionExpired(t.Job,
				fmt.Sprintf("pod %s was not reported bound to node %s within %v of its bind", t.Key(), t.NodeName, c.opts.AssumedPodTTL))
		}
	}
}

// runAssumedCleanup calls cleanupAssumedPods every second until ctx ends.
func (c *SchedulerCache) runAssumedCleanup(ctx context.Context) {
	ticker := c.opts.Clock.NewTicker(assumedCleanupPeriod)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C():
			c.cleanupAssumedPods()
		}
	}
}
