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

package volumebinding

import (
	"fmt"
	"reflect"

	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/klog/v2"

	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
	"github.com/batch-scheduler/batch-scheduler/pkg/plugins/internal/volumeutil"
)

// EventsToRegister implements framework.EnqueueExtensions. Claims and
// volumes being created or bound, classes and storage capacity appearing
// or changing, nodes appearing or being relabelled, and CSI drivers
// ceasing to track capacity (or going away) may let a rejected pod fit.
func (*VolumeBinding) EventsToRegister() []framework.ClusterEventWithHint {
	return []framework.ClusterEventWithHint{
		{Event: framework.ClusterEvent{Resource: framework.PersistentVolumeClaim, ActionType: framework.Add | framework.UpdateGeneric}, QueueingHintFn: volumeutil.ClaimHint},
		{Event: framework.ClusterEvent{Resource: framework.PersistentVolume, ActionType: framework.Add | framework.UpdateGeneric}},
		{Event: framework.ClusterEvent{Resource: framework.StorageClass, ActionType: framework.Add | framework.UpdateGeneric}, QueueingHintFn: classHint},
		{Event: framework.EventNodeAdd},
		{Event: framework.EventNodeLabelChange},
		{Event: framework.ClusterEvent{Resource: framework.CSIDriver, ActionType: framework.UpdateGeneric}, QueueingHintFn: driverHint},
		// Without its CSIDriver object, a provisioner's storage capacity
		// is not checked at all.
		{Event: framework.ClusterEvent{Resource: framework.CSIDriver, ActionType: framework.Delete}, QueueingHintFn: driverDeletedHint},
		{Event: framework.ClusterEvent{Resource: framework.CSIStorageCapacity, ActionType: framework.Add | framework.UpdateGeneric}},
	}
}

// classHint: Queue for a new class, or when a class's allowed topologies
// changed (the only mutable field that matters here).
func classHint(_ klog.Logger, _ *framework.QueuedJob, oldObj, newObj any) (framework.QueueingHint, error) {
	cur, ok := newObj.(*storagev1.StorageClass)
	if !ok || cur == nil {
		return framework.Queue, fmt.Errorf("queueing hint: want a *storagev1.StorageClass, got %T", newObj)
	}
	old, ok := oldObj.(*storagev1.StorageClass)
	if !ok || old == nil {
		return framework.Queue, nil
	}
	if !reflect.DeepEqual(old.AllowedTopologies, cur.AllowedTopologies) {
		return framework.Queue, nil
	}
	return framework.QueueSkip, nil
}

// driverHint: Queue when a CSI driver stopped tracking storage capacity,
// which lifts the capacity check.
func driverHint(_ klog.Logger, _ *framework.QueuedJob, oldObj, newObj any) (framework.QueueingHint, error) {
	cur, ok := newObj.(*storagev1.CSIDriver)
	old, ok2 := oldObj.(*storagev1.CSIDriver)
	if !ok || !ok2 || cur == nil || old == nil {
		return framework.Queue, fmt.Errorf("queueing hint: want two *storagev1.CSIDriver, got %T and %T", oldObj, newObj)
	}
	if tracksCapacity(old) && !tracksCapacity(cur) {
		return framework.Queue, nil
	}
	return framework.QueueSkip, nil
}

// driverDeletedHint: Queue when the deleted CSI driver tracked storage
// capacity: with it gone, Filter no longer asks for a CSIStorageCapacity.
// A driver that did not track capacity imposed no check to lift.
func driverDeletedHint(_ klog.Logger, _ *framework.QueuedJob, oldObj, _ any) (framework.QueueingHint, error) {
	old, ok := oldObj.(*storagev1.CSIDriver)
	if !ok || old == nil {
		return framework.Queue, fmt.Errorf("queueing hint: want the deleted *storagev1.CSIDriver, got %T", oldObj)
	}
	if tracksCapacity(old) {
		return framework.Queue, nil
	}
	return framework.QueueSkip, nil
}

// tracksCapacity reports whether d asks the scheduler to check storage
// capacity, as Filter reads it.
func tracksCapacity(d *storagev1.CSIDriver) bool {
	return d.Spec.StorageCapacity != nil && *d.Spec.StorageCapacity
}
