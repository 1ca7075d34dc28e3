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
	resourcev1 "k8s.io/api/resource/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/batch-scheduler/batch-scheduler/pkg/eventhandlers"
	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
)

// Resources that are not kept in the cache: each event only raises a
// cluster event, with no pre-enqueue check.

// resourceEvents are the events raised for one resource.
type resourceEvents struct {
	add, update, del framework.ClusterEvent
}

// nativeEvents returns the events of a native resource, labelled
// "<Resource>Add", "<Resource>Update" and "<Resource>Delete".
func nativeEvents(r framework.EventResource) resourceEvents {
	event := func(a framework.ActionType) framework.ClusterEvent {
		return framework.ClusterEvent{Resource: r, ActionType: a, Label: string(r) + a.String()}
	}
	return resourceEvents{add: event(framework.Add), update: event(framework.UpdateGeneric), del: event(framework.Delete)}
}

// dynamicEvents returns the events of a dynamic resource. They carry no
// label, so they render as "<plural>.<version>.<group>/<Action>".
func dynamicEvents(gvr schema.GroupVersionResource) resourceEvents {
	r := eventhandlers.DynamicResourceName(gvr)
	return resourceEvents{
		add:    framework.ClusterEvent{Resource: r, ActionType: framework.Add},
		update: framework.ClusterEvent{Resource: r, ActionType: framework.UpdateGeneric},
		del:    framework.ClusterEvent{Resource: r, ActionType: framework.Delete},
	}
}

var (
	persistentVolumeEvents      = nativeEvents(framework.PersistentVolume)
	persistentVolumeClaimEvents = nativeEvents(framework.PersistentVolumeClaim)
	storageClassEvents          = nativeEvents(framework.StorageClass)
	csiNodeEvents               = nativeEvents(framework.CSINode)
	csiDriverEvents             = nativeEvents(framework.CSIDriver)
	csiStorageCapacityEvents    = nativeEvents(framework.CSIStorageCapacity)
	priorityClassEvents         = nativeEvents(framework.PriorityClass)
	resourceClaimEvents         = nativeEvents(framework.ResourceClaim)
	resourceSliceEvents         = nativeEvents(framework.ResourceSlice)
	deviceClassEvents           = nativeEvents(framework.DeviceClass)
)

// objectPtr is a pointer to an API object type T.
type objectPtr[T any] interface {
	*T
	metav1.Object
}

// raiseOnAdd raises events.add if obj is a *T.
func raiseOnAdd[T any, PT objectPtr[T]](h *Handler, events resourceEvents, obj any) {
	o, ok := objectAs[T, PT](obj)
	if !ok {
		return
	}
	h.raise(events.add, nil, o)
}

// raiseOnUpdate raises events.update if both objects are *T and this is not
// a resync.
func raiseOnUpdate[T any, PT objectPtr[T]](h *Handler, events resourceEvents, oldObj, newObj any) {
	o, ok := objectAs[T, PT](oldObj)
	if !ok {
		return
	}
	n, ok := objectAs[T, PT](newObj)
	if !ok {
		return
	}
	if sameVersion(o.GetResourceVersion(), n.GetResourceVersion()) {
		return
	}
	h.raise(events.update, o, n)
}

// raiseOnDelete raises events.del if obj is a *T or a tombstone of one.
func raiseOnDelete[T any, PT objectPtr[T]](h *Handler, events resourceEvents, obj any) {
	o, ok := objectAs[T, PT](obj)
	if !ok {
		return
	}
	h.raise(events.del, o, nil)
}

// AddPersistentVolume raises PersistentVolumeAdd.
func (h *Handler) AddPersistentVolume(obj any) {
	raiseOnAdd[v1.PersistentVolume](h, persistentVolumeEvents, obj)
}

// UpdatePersistentVolume raises PersistentVolumeUpdate.
func (h *Handler) UpdatePersistentVolume(oldObj, newObj any) {
	raiseOnUpdate[v1.PersistentVolume](h, persistentVolumeEvents, oldObj, newObj)
}

// DeletePersistentVolume raises PersistentVolumeDelete.
func (h *Handler) DeletePersistentVolume(obj any) {
	raiseOnDelete[v1.PersistentVolume](h, persistentVolumeEvents, obj)
}

// AddPersistentVolumeClaim raises PersistentVolumeClaimAdd.
func (h *Handler) AddPersistentVolumeClaim(obj any) {
	raiseOnAdd[v1.PersistentVolumeClaim](h, persistentVolumeClaimEvents, obj)
}

// UpdatePersistentVolumeClaim raises PersistentVolumeClaimUpdate.
func (h *Handler) UpdatePersistentVolumeClaim(oldObj, newObj any) {
	raiseOnUpdate[v1.PersistentVolumeClaim](h, persistentVolumeClaimEvents, oldObj, newObj)
}

// DeletePersistentVolumeClaim raises PersistentVolumeClaimDelete.
func (h *Handler) DeletePersistentVolumeClaim(obj any) {
	raiseOnDelete[v1.PersistentVolumeClaim](h, persistentVolumeClaimEvents, obj)
}

// AddStorageClass raises StorageClassAdd.
func (h *Handler) AddStorageClass(obj any) {
	raiseOnAdd[storagev1.StorageClass](h, storageClassEvents, obj)
}

// UpdateStorageClass raises StorageClassUpdate.
func (h *Handler) UpdateStorageClass(oldObj, newObj any) {
	raiseOnUpdate[storagev1.StorageClass](h, storageClassEvents, oldObj, newObj)
}

// DeleteStorageClass raises StorageClassDelete.
func (h *Handler) DeleteStorageClass(obj any) {
	raiseOnDelete[storagev1.StorageClass](h, storageClassEvents, obj)
}

// AddCSINode raises CSINodeAdd.
func (h *Handler) AddCSINode(obj any) {
	raiseOnAdd[storagev1.CSINode](h, csiNodeEvents, obj)
}

// UpdateCSINode raises CSINodeUpdate.
func (h *Handler) UpdateCSINode(oldObj, newObj any) {
	raiseOnUpdate[storagev1.CSINode](h, csiNodeEvents, oldObj, newObj)
}

// DeleteCSINode raises CSINodeDelete.
func (h *Handler) DeleteCSINode(obj any) {
	raiseOnDelete[storagev1.CSINode](h, csiNodeEvents, obj)
}

// AddCSIDriver raises CSIDriverAdd.
func (h *Handler) AddCSIDriver(obj any) {
	raiseOnAdd[storagev1.CSIDriver](h, csiDriverEvents, obj)
}

// UpdateCSIDriver raises CSIDriverUpdate.
func (h *Handler) UpdateCSIDriver(oldObj, newObj any) {
	raiseOnUpdate[storagev1.CSIDriver](h, csiDriverEvents, oldObj, newObj)
}

// DeleteCSIDriver raises CSIDriverDelete.
func (h *Handler) DeleteCSIDriver(obj any) {
	raiseOnDelete[storagev1.CSIDriver](h, csiDriverEvents, obj)
}

// AddCSIStorageCapacity raises CSIStorageCapacityAdd.
func (h *Handler) AddCSIStorageCapacity(obj any) {
	raiseOnAdd[storagev1.CSIStorageCapacity](h, csiStorageCapacityEvents, obj)
}

// UpdateCSIStorageCapacity raises CSIStorageCapacityUpdate.
func (h *Handler) UpdateCSIStorageCapacity(oldObj, newObj any) {
	raiseOnUpdate[storagev1.CSIStorageCapacity](h, csiStorageCapacityEvents, oldObj, newObj)
}

// DeleteCSIStorageCapacity raises CSIStorageCapacityDelete.
func (h *Handler) DeleteCSIStorageCapacity(obj any) {
	raiseOnDelete[storagev1.CSIStorageCapacity](h, csiStorageCapacityEvents, obj)
}

// AddPriorityClass raises PriorityClassAdd.
func (h *Handler) AddPriorityClass(obj any) {
	raiseOnAdd[schedulingv1.PriorityClass](h, priorityClassEvents, obj)
}

// UpdatePriorityClass raises PriorityClassUpdate.
func (h *Handler) UpdatePriorityClass(oldObj, newObj any) {
	raiseOnUpdate[schedulingv1.PriorityClass](h, priorityClassEvents, oldObj, newObj)
}

// DeletePriorityClass raises PriorityClassDelete.
func (h *Handler) DeletePriorityClass(obj any) {
	raiseOnDelete[schedulingv1.PriorityClass](h, priorityClassEvents, obj)
}

// AddResourceClaim raises ResourceClaimAdd.
func (h *Handler) AddResourceClaim(obj any) {
	raiseOnAdd[resourcev1.ResourceClaim](h, resourceClaimEvents, obj)
}

// UpdateResourceClaim raises ResourceClaimUpdate.
func (h *Handler) UpdateResourceClaim(oldObj, newObj any) {
	raiseOnUpdate[resourcev1.ResourceClaim](h, resourceClaimEvents, oldObj, newObj)
}

// DeleteResourceClaim raises ResourceClaimDelete.
func (h *Handler) DeleteResourceClaim(obj any) {
	raiseOnDelete[resourcev1.ResourceClaim](h, resourceClaimEvents, obj)
}

// AddResourceSlice raises ResourceSliceAdd.
func (h *Handler) AddResourceSlice(obj any) {
	raiseOnAdd[resourcev1.ResourceSlice](h, resourceSliceEvents, obj)
}

// UpdateResourceSlice raises ResourceSliceUpdate.
func (h *Handler) UpdateResourceSlice(oldObj, newObj any) {
	raiseOnUpdate[resourcev1.ResourceSlice](h, resourceSliceEvents, oldObj, newObj)
}

// DeleteResourceSlice raises ResourceSliceDelete.
func (h *Handler) DeleteResourceSlice(obj any) {
	raiseOnDelete[resourcev1.ResourceSlice](h, resourceSliceEvents, obj)
}

// AddDeviceClass raises DeviceClassAdd.
func (h *Handler) AddDeviceClass(obj any) {
	raiseOnAdd[resourcev1.DeviceClass](h, deviceClassEvents, obj)
}

// UpdateDeviceClass raises DeviceClassUpdate.
func (h *Handler) UpdateDeviceClass(oldObj, newObj any) {
	raiseOnUpdate[resourcev1.DeviceClass](h, deviceClassEvents, oldObj, newObj)
}

// DeleteDeviceClass raises DeviceClassDelete.
func (h *Handler) DeleteDeviceClass(obj any) {
	raiseOnDelete[resourcev1.DeviceClass](h, deviceClassEvents, obj)
}

// AddDynamic raises an Add event for gvr's resource; an object of a gang
// dialect (see docs/scheduling.md) updates its gang's policy instead.
func (h *Handler) AddDynamic(gvr schema.GroupVersionResource, obj any) {
	if h.setGroup(gvr, obj, false) {
		return
	}
	if h.setTenantQueue(gvr, obj, false) {
		return
	}
	raiseOnAdd[unstructured.Unstructured](h, dynamicEvents(gvr), obj)
}

// UpdateDynamic raises an UpdateGeneric event for gvr's resource.
func (h *Handler) UpdateDynamic(gvr schema.GroupVersionResource, oldObj, newObj any) {
	if h.setGroup(gvr, newObj, false) {
		return
	}
	if h.setTenantQueue(gvr, newObj, false) {
		return
	}
	raiseOnUpdate[unstructured.Unstructured](h, dynamicEvents(gvr), oldObj, newObj)
}

// DeleteDynamic raises a Delete event for gvr's resource.
func (h *Handler) DeleteDynamic(gvr schema.GroupVersionResource, obj any) {
	if h.setGroup(gvr, obj, true) {
		return
	}
	if h.setTenantQueue(gvr, obj, true) {
		return
	}
	raiseOnDelete[unstructured.Unstructured](h, dynamicEvents(gvr), obj)
}
