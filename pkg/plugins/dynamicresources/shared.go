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
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/dynamic-resource-allocation/structured"
)

// Consumable capacity: a device whose slice sets allowMultipleAllocations
// serves several claims at once. Each allocation of it carries a share
// ID and the capacity it consumes (memory, say), and the device is free
// for another share while what its shares consume together leaves room.
// Such an allocation does not take the device (allocationDevices leaves
// it out); sharedUse counts its share and capacity instead, and the
// allocator is given both (sharedUse.state).

// sharedUse is what the shared allocations seen so far take of their
// devices. The zero value holds none. It is built afresh for each pod's
// cycle and owned by it: nothing else reads or writes it.
type sharedUse struct {
	ids      sets.Set[structured.SharedDeviceID]
	capacity structured.ConsumedCapacityCollection
}

// hasShared reports whether a allocates a share of a device.
func hasShared(a *resourceapi.AllocationResult) bool {
	for i := range a.Devices.Results {
		if a.Devices.Results[i].ShareID != nil {
			return true
		}
	}
	return false
}

// add counts the shares a allocates, and the capacity they consume. An
// admin-access result takes nothing, as for whole devices.
func (u *sharedUse) add(a *resourceapi.AllocationResult) {
	for _, r := range a.Devices.Results {
		if r.ShareID == nil || r.AdminAccess != nil && *r.AdminAccess {
			continue
		}
		if u.ids == nil {
			u.ids = sets.New[structured.SharedDeviceID]()
			u.capacity = structured.NewConsumedCapacityCollection()
		}
		device := structured.MakeDeviceID(r.Driver, r.Pool, r.Device)
		u.ids.Insert(structured.MakeSharedDeviceID(device, r.ShareID))
		if len(r.ConsumedCapacity) > 0 {
			u.capacity.Insert(structured.NewDeviceConsumedCapacity(device, r.ConsumedCapacity))
		}
	}
}

// state is the allocator's view of what is taken: devices, taken whole,
// and the shares u counted.
func (u sharedUse) state(devices sets.Set[structured.DeviceID]) structured.AllocatedState {
	return structured.AllocatedState{AllocatedDevices: devices, AllocatedSharedDeviceIDs: u.ids, AggregatedCapacity: u.capacity}
}
