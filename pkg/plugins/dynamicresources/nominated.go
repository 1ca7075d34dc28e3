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
	"context"
	"fmt"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/dynamic-resource-allocation/structured"
	"k8s.io/klog/v2"

	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
)

// holdNominated returns taken with the devices the nominated pods of
// other jobs on nodes (framework.Nominated: preemption's or a
// reservation's) will need where they are nominated, so that the room
// held for them holds their devices as it holds their CPU and memory. A
// nominated pod's claims that are allocated (or in flight) are in taken
// already; the others, and the claim of its DRA-backed extended resources
// where its node lacks them, are allocated here as Filter would, one pod
// after the other. A pod whose claims cannot be resolved or allocated on its
// node holds nothing (its next attempt finds out why). taken is not
// changed: a copy is returned when something is added; the shares of
// devices the nominated pods take are added to shared.
func (pl *DynamicResources) holdNominated(ctx context.Context, state *framework.CycleState, taken sets.Set[structured.DeviceID], shared *sharedUse,
	slices []*resourceapi.ResourceSlice, nodes []*framework.NodeInfo) (sets.Set[structured.DeviceID], error) {
	noms := framework.Nominated(state)
	var byName map[string]*framework.NodeInfo
	owned := false
	for _, t := range noms {
		ext, err := pl.extendedOf(t.PodObject())
		if err != nil || len(t.PodObject().Spec.ResourceClaims) == 0 && ext == nil {
			continue
		}
		if byName == nil {
			byName = make(map[string]*framework.NodeInfo, len(nodes))
			for _, n := range nodes {
				byName[n.Name()] = n
			}
		}
		ni := byName[t.NodeName]
		if ni == nil || ni.Node == nil || !ni.HasPod(t.GetUID()) {
			// Not a node this pod may take, or released meanwhile.
			continue
		}
		var toAllocate []*resourceapi.ResourceClaim
		if len(t.PodObject().Spec.ResourceClaims) > 0 {
			claims, st := pl.podClaims(t.PodObject())
			if st != nil {
				continue
			}
			for _, c := range claims {
				if c.Status.Allocation == nil && pl.inFlight.allocation(c.UID) == nil {
					toAllocate = append(toAllocate, c)
				}
			}
		}
		if ec := ext.forNode(ni); ec != nil {
			// A claim of its extended resources that exists already
			// holds its own devices, if any.
			if existing, err := pl.extendedClaimOf(t.PodObject()); err == nil && existing == nil {
				toAllocate = append(toAllocate, ec.claim)
			}
		}
		if len(toAllocate) == 0 {
			continue
		}
		a, err := structured.NewAllocator(ctx, features, shared.state(taken),
			classLister{pl.classes}, slices, pl.celCache)
		if err != nil {
			return nil, fmt.Errorf("preparing the device allocator for nominated pod %s: %w", klog.KObj(t), err)
		}
		results, err := a.Allocate(ctx, ni.Node, toAllocate)
		if err != nil || len(results) == 0 {
			klog.FromContext(ctx).V(4).Info("Nominated pod's devices cannot be held", "nominated", klog.KObj(t), "node", t.NodeName, "err", err)
			continue
		}
		if !owned {
			taken, owned = taken.Clone(), true
		}
		for i := range results {
			taken.Insert(allocationDevices(&results[i])...)
			shared.add(&results[i])
		}
	}
	return taken, nil
}
