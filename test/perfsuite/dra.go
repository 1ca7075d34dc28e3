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

package perfsuite

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"

	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/dynamic-resource-allocation/cel"
	"k8s.io/dynamic-resource-allocation/structured"
)

// classList is a structured.DeviceClassLister over the classes listed once.
type classList map[string]*resourceapi.DeviceClass

func (c classList) List() ([]*resourceapi.DeviceClass, error) {
	out := make([]*resourceapi.DeviceClass, 0, len(c))
	for _, dc := range c {
		out = append(out, dc)
	}
	return out, nil
}

func (c classList) Get(name string) (*resourceapi.DeviceClass, error) {
	if dc, ok := c[name]; ok {
		return dc, nil
	}
	return nil, apierrors.NewNotFound(schema.GroupResource{Group: resourceapi.GroupName, Resource: "deviceclasses"}, name)
}

// allocResourceClaims allocates every ResourceClaim of the op's namespace
// (of all namespaces when it names none) that has no allocation yet, as if
// pods that ran before had claimed their devices: one claim at a time, on
// a node picked at random where the structured allocator finds devices for
// it, written to the claim's status. The workloads use it to start the
// measured pods on a cluster whose devices are partly taken. A claim that
// fits on no node fails the op, naming it.
func (e *executor) allocResourceClaims(ctx context.Context, op *Op) error {
	ns := ""
	if len(op.Namespace) > 0 {
		if err := json.Unmarshal(op.Namespace, &ns); err != nil {
			return fmt.Errorf("allocResourceClaims: namespace: %w", err)
		}
	}
	rc := e.client.ResourceV1()
	claims, err := rc.ResourceClaims(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("listing ResourceClaims: %w", err)
	}
	sliceList, err := rc.ResourceSlices().List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("listing ResourceSlices: %w", err)
	}
	classObjs, err := rc.DeviceClasses().List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("listing DeviceClasses: %w", err)
	}
	nodeList, err := e.client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("listing nodes: %w", err)
	}
	classes := classList{}
	for i := range classObjs.Items {
		classes[classObjs.Items[i].Name] = &classObjs.Items[i]
	}
	slices := make([]*resourceapi.ResourceSlice, len(sliceList.Items))
	for i := range sliceList.Items {
		slices[i] = &sliceList.Items[i]
	}
	state := structured.AllocatedState{
		AllocatedDevices:         sets.New[structured.DeviceID](),
		AllocatedSharedDeviceIDs: sets.New[structured.SharedDeviceID](),
		AggregatedCapacity:       structured.NewConsumedCapacityCollection(),
	}
	take := func(a *resourceapi.AllocationResult) {
		for _, r := range a.Devices.Results {
			id := structured.MakeDeviceID(r.Driver, r.Pool, r.Device)
			if r.ShareID == nil {
				state.AllocatedDevices.Insert(id)
				continue
			}
			state.AllocatedSharedDeviceIDs.Insert(structured.MakeSharedDeviceID(id, r.ShareID))
			if r.ConsumedCapacity != nil {
				state.AggregatedCapacity.Insert(structured.NewDeviceConsumedCapacity(id, r.ConsumedCapacity))
			}
		}
	}
	for i := range claims.Items {
		if a := claims.Items[i].Status.Allocation; a != nil {
			take(a)
		}
	}
	celCache := cel.NewCache(10, cel.Features{})
	// The allocator's features batch-scheduler's DynamicResources enables
	// (see Unsupported for the workloads that need others).
	features := structured.Features{AdminAccess: true, PrioritizedList: true, PartitionableDevices: true, DeviceTaints: true}
	nodes := nodeList.Items
	for i := range claims.Items {
		claim := &claims.Items[i]
		if claim.Status.Allocation != nil {
			continue
		}
		allocator, err := structured.NewAllocator(ctx, features, state, classes, slices, celCache)
		if err != nil {
			return fmt.Errorf("creating the allocator for ResourceClaim %s/%s: %w", claim.Namespace, claim.Name, err)
		}
		rand.Shuffle(len(nodes), func(a, b int) { nodes[a], nodes[b] = nodes[b], nodes[a] })
		allocated := false
		for n := range nodes {
			results, err := allocator.Allocate(ctx, &nodes[n], []*resourceapi.ResourceClaim{claim})
			if err != nil {
				return fmt.Errorf("allocating ResourceClaim %s/%s on node %s: %w", claim.Namespace, claim.Name, nodes[n].Name, err)
			}
			if len(results) == 0 {
				continue
			}
			c := claim.DeepCopy()
			c.Status.Allocation = &results[0]
			if _, err := rc.ResourceClaims(c.Namespace).UpdateStatus(ctx, c, metav1.UpdateOptions{}); err != nil {
				return fmt.Errorf("writing the allocation of ResourceClaim %s/%s: %w", c.Namespace, c.Name, err)
			}
			take(c.Status.Allocation)
			allocated = true
			break
		}
		if !allocated {
			return fmt.Errorf("ResourceClaim %s/%s (%d of %d) fits on none of %d nodes", claim.Namespace, claim.Name, i+1, len(claims.Items), len(nodes))
		}
	}
	return nil
}
