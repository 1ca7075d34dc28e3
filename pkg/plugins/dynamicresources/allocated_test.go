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
	"math/rand"
	"slices"
	"strconv"
	"strings"
	"testing"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/dynamic-resource-allocation/structured"
	"k8s.io/utils/ptr"
)

// rebuilt is what allocatedIndex must agree with: the devices of every
// allocated claim, worked out from scratch.
func rebuilt(claims []*resourceapi.ResourceClaim) (sets.Set[structured.DeviceID], sharedUse) {
	out := sets.New[structured.DeviceID]()
	var shared sharedUse
	for _, c := range claims {
		if c.Status.Allocation != nil {
			out.Insert(allocationDevices(c.Status.Allocation)...)
			shared.add(c.Status.Allocation)
		}
	}
	return out, shared
}

// sharedString renders u for comparison: its share IDs, sorted, and each
// device's consumed capacity.
func sharedString(u sharedUse) string {
	var parts []string
	for id := range u.ids {
		parts = append(parts, id.String())
	}
	for d, c := range u.capacity {
		for name, q := range c {
			parts = append(parts, fmt.Sprintf("%s %s=%s", d, name, q.String()))
		}
	}
	slices.Sort(parts)
	return strings.Join(parts, "; ")
}

// claimStore is a store of claims a test changes the way the API server
// would: each write is a new object with a new resourceVersion.
type claimStore struct {
	byUID map[types.UID]*resourceapi.ResourceClaim
	rv    int
}

// write allocates devs to the claim uid (nil: deallocated), with admin
// access, or as shares of the devices (consumable capacity: a share ID
// and 1Gi of memory each).
func (s *claimStore) write(uid types.UID, node string, devs []string, admin, shared bool) {
	s.rv++
	c := claim(string(uid), "gpu", int64(len(devs)))
	c.UID, c.ResourceVersion = uid, strconv.Itoa(s.rv)
	if devs != nil {
		c = allocated(c, node, devs)
		for i := range c.Status.Allocation.Devices.Results {
			r := &c.Status.Allocation.Devices.Results[i]
			if admin {
				r.AdminAccess = ptr.To(true)
			}
			if shared {
				r.ShareID = ptr.To(types.UID(fmt.Sprintf("%s-%d-%d", uid, s.rv, i)))
				r.ConsumedCapacity = map[resourceapi.QualifiedName]resource.Quantity{"memory": resource.MustParse("1Gi")}
			}
		}
	}
	s.byUID[uid] = c
}

func (s *claimStore) list() []*resourceapi.ResourceClaim {
	out := make([]*resourceapi.ResourceClaim, 0, len(s.byUID))
	for _, c := range s.byUID {
		out = append(out, c)
	}
	return out
}

// TestAllocatedIndexAgreesWithRebuild changes claims at random (allocate,
// reallocate elsewhere, deallocate, delete, two claims on one device while
// a store catches up, admin access) and checks after each pass that the
// index gives what a rebuild from all claims gives, and that a set it
// returned earlier was never written.
func TestAllocatedIndexAgreesWithRebuild(t *testing.T) {
	for seed := int64(1); seed <= 20; seed++ {
		t.Run(fmt.Sprintf("seed %d", seed), func(t *testing.T) {
			rng := rand.New(rand.NewSource(seed))
			s := &claimStore{byUID: map[types.UID]*resourceapi.ResourceClaim{}}
			x := newAllocatedIndex()
			type lent struct {
				set  sets.Set[structured.DeviceID]
				want sets.Set[structured.DeviceID]
			}
			var earlier []lent
			for step := 0; step < 300; step++ {
				for range rng.Intn(4) {
					uid := types.UID(fmt.Sprintf("c%d", rng.Intn(30)))
					node := fmt.Sprintf("n%d", rng.Intn(3))
					var devs []string
					for range rng.Intn(3) {
						devs = append(devs, fmt.Sprintf("gpu-%d", rng.Intn(4)))
					}
					switch rng.Intn(6) {
					case 0:
						delete(s.byUID, uid)
					case 1:
						s.write(uid, node, nil, false, false)
					case 2:
						s.write(uid, node, devs, true, false)
					case 3:
						s.write(uid, node, devs, false, true)
					default:
						s.write(uid, node, devs, false, false)
					}
				}
				claims := s.list()
				got, gotShared := x.sync(claims)
				want, wantShared := rebuilt(claims)
				if !got.Equal(want) {
					t.Fatalf("step %d: index has %v, a rebuild %v", step, sets.List(toStrings(got)), sets.List(toStrings(want)))
				}
				if g, w := sharedString(gotShared), sharedString(wantShared); g != w {
					t.Fatalf("step %d: index has shares %q, a rebuild %q", step, g, w)
				}
				earlier = append(earlier, lent{got, want.Clone()})
			}
			for i, e := range earlier {
				if !e.set.Equal(e.want) {
					t.Fatalf("the set returned by pass %d was changed afterwards", i)
				}
			}
		})
	}
}

func toStrings(s sets.Set[structured.DeviceID]) sets.Set[string] {
	out := sets.New[string]()
	for d := range s {
		out.Insert(d.String())
	}
	return out
}

// BenchmarkAllocatedDevices measures the devices taken, worked out for
// one pod, in a cluster of 500 nodes of 10 devices with 2,500 claims
// allocated (kube-scheduler's half_500nodes workload), where one claim
// changed since the last pod. The baseline rebuilds the set from every
// claim, as the plugin did before allocatedIndex.
func BenchmarkAllocatedDevices(b *testing.B) {
	setup := func() (*claimStore, []types.UID) {
		s := &claimStore{byUID: map[types.UID]*resourceapi.ResourceClaim{}}
		var uids []types.UID
		for i := range 2500 {
			uid := types.UID(fmt.Sprintf("c%d", i))
			s.write(uid, fmt.Sprintf("n%d", i/5), []string{fmt.Sprintf("gpu-%d", i%5)}, false, false)
			uids = append(uids, uid)
		}
		return s, uids
	}
	b.Run("baseline: rebuild from all claims", func(b *testing.B) {
		s, uids := setup()
		for i := 0; b.Loop(); i++ {
			u := uids[i%len(uids)]
			s.write(u, "n0", []string{"gpu-9"}, false, false)
			if taken, _ := rebuilt(s.list()); taken.Len() == 0 {
				b.Fatal("no devices")
			}
		}
	})
	b.Run("index", func(b *testing.B) {
		s, uids := setup()
		x := newAllocatedIndex()
		x.sync(s.list())
		for i := 0; b.Loop(); i++ {
			u := uids[i%len(uids)]
			s.write(u, "n0", []string{"gpu-9"}, false, false)
			if taken, _ := x.sync(s.list()); taken.Len() == 0 {
				b.Fatal("no devices")
			}
		}
	})
}
