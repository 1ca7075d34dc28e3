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

package dynamicresources

import (
	"fmt"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/dynamic-resource-allocation/resourceclaim"
	"k8s.io/klog/v2"

	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
)

// EventsToRegister implements framework.EnqueueExtensions. Registering
// them is also what makes the scheduler start the ResourceClaim,
// ResourceSlice and DeviceClass informers (they are opt-in). Devices
// appear with slices and classes, and are freed when a claim is
// deallocated or deleted; a pod's own claim being created (from its
// template) or changed may let it fit; new or relabelled nodes may match
// an allocation's node selector.
func (*DynamicResources) EventsToRegister() []framework.ClusterEventWithHint {
	return []framework.ClusterEventWithHint{
		{Event: framework.ClusterEvent{Resource: framework.ResourceClaim, ActionType: framework.Add | framework.UpdateGeneric | framework.Delete}, QueueingHintFn: claimHint},
		{Event: framework.ClusterEvent{Resource: framework.ResourceSlice, ActionType: framework.Add | framework.UpdateGeneric}},
		{Event: framework.ClusterEvent{Resource: framework.DeviceClass, ActionType: framework.Add | framework.UpdateGeneric}},
		{Event: framework.EventNodeAdd},
		{Event: framework.EventNodeLabelChange},
	}
}

// claimHint: Queue when a claim's devices were freed (deallocated, or
// deleted while allocated), or when the claim is one of the job's pods'.
func claimHint(logger klog.Logger, job *framework.QueuedJob, oldObj, newObj any) (framework.QueueingHint, error) {
	oldClaim, _ := oldObj.(*resourceapi.ResourceClaim)
	newClaim, _ := newObj.(*resourceapi.ResourceClaim)
	switch {
	case oldClaim == nil && newClaim == nil:
		return framework.Queue, fmt.Errorf("queueing hint: want a *resourceapi.ResourceClaim, got %T and %T", oldObj, newObj)
	case newClaim == nil:
		// Deleted: its devices are free if it held any; a pod whose
		// extended-resource claim, left by an earlier attempt, was
		// deleted may try again.
		if oldClaim.Status.Allocation != nil || ownedByJob(job, oldClaim) {
			return framework.Queue, nil
		}
		return framework.QueueSkip, nil
	case oldClaim != nil && oldClaim.Status.Allocation != nil && newClaim.Status.Allocation == nil:
		return framework.Queue, nil
	}
	if job == nil {
		return framework.Queue, nil
	}
	for _, pod := range job.Pods {
		if pod.Namespace != newClaim.Namespace {
			continue
		}
		for i := range pod.Spec.ResourceClaims {
			name, _, err := resourceclaim.Name(pod, &pod.Spec.ResourceClaims[i])
			if err != nil || (name != nil && *name == newClaim.Name) {
				// A claim not created yet may be this one.
				logger.V(5).Info("A resourceclaim a pending pod uses changed", "pod", klog.KObj(pod), "resourceclaim", klog.KObj(newClaim))
				return framework.Queue, nil
			}
		}
	}
	return framework.QueueSkip, nil
}

// ownedByJob reports whether c is the extended-resource claim of one of
// job's pods (nil: any job's).
func ownedByJob(job *framework.QueuedJob, c *resourceapi.ResourceClaim) bool {
	owner := extendedClaimOwner(c)
	if owner == "" {
		return false
	}
	if job == nil {
		return true
	}
	for _, pod := range job.Pods {
		if pod.UID == owner {
			return true
		}
	}
	return false
}
