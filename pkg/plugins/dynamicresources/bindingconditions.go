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
	"errors"
	"fmt"
	"time"

	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"

	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
)

// Device binding conditions (DRADeviceBindingConditions, beta in 1.37): a
// device whose slice lists bindingConditions must be prepared by its
// driver (attached to the node, say) before a pod using it is bound. The
// allocator copies the device's conditions into the allocation's result;
// Bind writes the allocation (stamped with its allocationTimestamp), then
// answers framework.BindNotReadyError until the driver reports, in the
// claim's status.devices, every binding condition true: the scheduler
// calls it again after bindingPoll, holding no bind slot meanwhile. A
// binding failure condition reported true, or no answer within the
// binding timeout (counted from the allocation's timestamp), fails the
// bind: Unreserve takes the allocation back, and the pod is retried, as
// in kube-scheduler.

const (
	// defaultBindingTimeout is how long a device may take to be ready:
	// kube-scheduler's default bindingTimeout.
	defaultBindingTimeout = 10 * time.Minute
	// bindingPoll is how long the scheduler waits before calling Bind
	// again for a pod whose devices are not ready.
	bindingPoll = time.Second
)

// errBindingFailed is a binding failure condition reported true.
var errBindingFailed = errors.New("a device binding failure condition is true")

// hasBindingConditions reports whether a allocates a device that its
// driver must prepare before the pod is bound.
func hasBindingConditions(a *resourceapi.AllocationResult) bool {
	if a == nil {
		return false
	}
	for i := range a.Devices.Results {
		if len(a.Devices.Results[i].BindingConditions) > 0 {
			return true
		}
	}
	return false
}

// bindingState says whether the devices of the claim ns/name that have
// binding conditions are ready, reading the claim from the informer's
// store: nil when every binding condition is true; a
// *framework.BindNotReadyError while some is not yet (or the store does
// not show the allocation yet); another error, naming the claim, when a
// failure condition is true, the claim is gone, or the binding timeout
// has passed since the allocation.
func (pl *DynamicResources) bindingState(ns, name string) error {
	timeout := pl.bindingTimeout
	if timeout <= 0 {
		timeout = defaultBindingTimeout
	}
	wrap := func(err error) error {
		return fmt.Errorf("binding conditions of resourceclaim %s/%s: %w", ns, name, err)
	}
	c, err := pl.claims.ResourceClaims(ns).Get(name)
	switch {
	case apierrors.IsNotFound(err):
		return wrap(errors.New("the claim was deleted"))
	case err != nil:
		return wrap(err)
	case c.Status.Allocation == nil:
		// The informer does not show Bind's write yet.
		return wrap(&framework.BindNotReadyError{Reason: "the allocation is not seen yet", RetryAfter: bindingPoll})
	}
	ready, why, err := bindingReady(c)
	switch {
	case err != nil:
		return wrap(err)
	case ready:
		return nil
	}
	if start := c.Status.Allocation.AllocationTimestamp; start != nil && pl.now().Sub(start.Time) > timeout {
		return wrap(fmt.Errorf("the devices were not ready within %s of the allocation: %s", timeout, why))
	}
	return wrap(&framework.BindNotReadyError{Reason: why, RetryAfter: bindingPoll})
}

// bindingReady reports whether every device of c's allocation with
// binding conditions has them all true in c's status.devices; if not,
// why: the first condition still awaited. A failure condition that is
// true is an error.
func bindingReady(c *resourceapi.ResourceClaim) (bool, string, error) {
	for _, r := range c.Status.Allocation.Devices.Results {
		if len(r.BindingConditions) == 0 && len(r.BindingFailureConditions) == 0 {
			continue
		}
		var status *resourceapi.AllocatedDeviceStatus
		for i := range c.Status.Devices {
			d := &c.Status.Devices[i]
			if d.Driver == r.Driver && d.Pool == r.Pool && d.Device == r.Device && sameShare(d.ShareID, r.ShareID) {
				status = d
				break
			}
		}
		device := r.Driver + "/" + r.Pool + "/" + r.Device
		if status != nil {
			for _, f := range r.BindingFailureConditions {
				if meta.IsStatusConditionTrue(status.Conditions, f) {
					return false, "", fmt.Errorf("device %s: %w: %s", device, errBindingFailed, f)
				}
			}
		}
		for _, want := range r.BindingConditions {
			if status == nil || !meta.IsStatusConditionTrue(status.Conditions, want) {
				return false, fmt.Sprintf("device %s: condition %s not true", device, want), nil
			}
		}
	}
	return true, "", nil
}

// sameShare reports whether a device status's share ID (a string) names
// the result's share (nil for a device taken whole).
func sameShare(status *string, result *types.UID) bool {
	if status == nil || result == nil {
		return status == nil && result == nil
	}
	return *status == string(*result)
}
