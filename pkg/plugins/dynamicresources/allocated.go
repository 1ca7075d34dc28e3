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
	"sync"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/dynamic-resource-allocation/structured"
)

// allocatedIndex holds the devices that the claims of the informer's
// store have allocated, kept from one pod to the next so that a pod pays
// for the claims that changed since the last pod, not for all of them.
//
// Each call of sync is given the store's claims as they are now, and
// compares each claim's resourceVersion with the one it last saw: only a
// new, changed or vanished claim has its devices worked out again. The
// set it returns therefore always agrees with the claims it was given
// (the store is the one the rest of the plugin reads, so there is no
// window in which the two disagree), and is what rebuilding it from all
// claims would give.
//
// mu guards every field. It is held for the whole of sync, which only
// walks the given claims and the index's maps: no API call, lister or
// allocator runs under it.
type allocatedIndex struct {
	mu sync.Mutex
	// byClaim holds, per allocated claim, the version seen and its devices.
	byClaim map[types.UID]*claimDevices
	// holders counts, per device, the claims of byClaim that hold it:
	// two claims hold one device only while the store catches up with a
	// deallocation and a new allocation, and the device is free only when
	// neither does.
	holders map[structured.DeviceID]int
	// taken are the devices with holders. Once returned by sync it is
	// shared with the caller (lent is true) and never written again: the
	// next change starts from a copy.
	taken sets.Set[structured.DeviceID]
	lent  bool
	// shared holds the allocations of byClaim that take shares of
	// devices (consumable capacity; see sharedUse), few or none: sync
	// counts them afresh on every call.
	shared map[types.UID]*resourceapi.AllocationResult
	// pass numbers the calls of sync; an entry whose seen is not the
	// current pass was not among the claims given.
	pass uint64
}

// claimDevices is one allocated claim as allocatedIndex last saw it.
type claimDevices struct {
	resourceVersion string
	devices         []structured.DeviceID
	seen            uint64
}

func newAllocatedIndex() *allocatedIndex {
	return &allocatedIndex{
		byClaim: map[types.UID]*claimDevices{},
		holders: map[structured.DeviceID]int{},
		taken:   sets.New[structured.DeviceID](),
		shared:  map[types.UID]*resourceapi.AllocationResult{},
	}
}

// sync brings the index up to date with claims, the store's claims now,
// and returns the devices they have allocated whole, and the shares of
// devices they have allocated. The set is shared: the caller must not
// modify it; the sharedUse is the caller's.
func (x *allocatedIndex) sync(claims []*resourceapi.ResourceClaim) (sets.Set[structured.DeviceID], sharedUse) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.pass++
	present := 0
	for _, c := range claims {
		if c.Status.Allocation == nil {
			continue
		}
		present++
		e := x.byClaim[c.UID]
		if e == nil {
			e = &claimDevices{}
			x.byClaim[c.UID] = e
		} else if e.resourceVersion == c.ResourceVersion {
			e.seen = x.pass
			continue
		}
		x.drop(e.devices)
		e.resourceVersion, e.devices, e.seen = c.ResourceVersion, allocationDevices(c.Status.Allocation), x.pass
		x.hold(e.devices)
		if hasShared(c.Status.Allocation) {
			x.shared[c.UID] = c.Status.Allocation
		} else {
			delete(x.shared, c.UID)
		}
	}
	if present < len(x.byClaim) {
		// Some claims were deallocated or deleted since the last pass.
		for uid, e := range x.byClaim {
			if e.seen != x.pass {
				x.drop(e.devices)
				delete(x.byClaim, uid)
				delete(x.shared, uid)
			}
		}
	}
	x.lent = true
	var use sharedUse
	for _, a := range x.shared {
		use.add(a)
	}
	return x.taken, use
}

// hold counts devices as held by one more claim.
func (x *allocatedIndex) hold(devices []structured.DeviceID) {
	for _, d := range devices {
		x.holders[d]++
		if x.holders[d] == 1 {
			x.writable().Insert(d)
		}
	}
}

// drop counts devices as held by one claim fewer.
func (x *allocatedIndex) drop(devices []structured.DeviceID) {
	for _, d := range devices {
		switch n := x.holders[d]; n {
		case 0:
		case 1:
			delete(x.holders, d)
			x.writable().Delete(d)
		default:
			x.holders[d] = n - 1
		}
	}
}

// writable returns taken, copied first if it was lent.
func (x *allocatedIndex) writable() sets.Set[structured.DeviceID] {
	if x.lent {
		x.taken, x.lent = x.taken.Clone(), false
	}
	return x.taken
}

// allocationDevices returns the devices a takes whole; admin access does
// not take a device, and a share of a device (a result with a share ID)
// leaves it to other shares (sharedUse counts those).
func allocationDevices(a *resourceapi.AllocationResult) []structured.DeviceID {
	out := make([]structured.DeviceID, 0, len(a.Devices.Results))
	for _, r := range a.Devices.Results {
		if r.AdminAccess != nil && *r.AdminAccess || r.ShareID != nil {
			continue
		}
		out = append(out, structured.MakeDeviceID(r.Driver, r.Pool, r.Device))
	}
	return out
}
