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
	"testing"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
)

// sharedSlice publishes on node one device that allows several
// allocations, with 10Gi of memory to divide among them.
func sharedSlice(node string) *resourceapi.ResourceSlice {
	s := slice(node, 1)
	s.Spec.Devices[0].AllowMultipleAllocations = ptr.To(true)
	s.Spec.Devices[0].Capacity = map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{
		"memory": {Value: resource.MustParse("10Gi")},
	}
	return s
}

// memoryClaim asks for a share of one device with mem of its memory.
func memoryClaim(name, mem string) *resourceapi.ResourceClaim {
	c := claim(name, "gpu", 1)
	c.Spec.Devices.Requests[0].Exactly.Capacity = &resourceapi.CapacityRequirements{
		Requests: map[resourceapi.QualifiedName]resource.Quantity{"memory": resource.MustParse(mem)},
	}
	return c
}

// TestConsumableCapacity: a device of 10Gi that allows several
// allocations serves two claims of 4Gi, one per pod, in one cycle or in
// two; a third does not fit while both are in flight, nor once the
// informer shows them allocated; a claim of 2Gi still does.
func TestConsumableCapacity(t *testing.T) {
	e := newEnv(t, []*v1.Node{gpuNode("n1")}, gpuClass(), sharedSlice("n1"), memoryClaim("a", "4Gi"), memoryClaim("b", "4Gi"), memoryClaim("c", "4Gi"))

	state := framework.NewCycleState()
	for _, name := range []string{"a", "b"} {
		if node, st := e.place(state, podWith("p"+name, name)); node != "n1" {
			t.Fatalf("pod p%s = %q, %v; want n1: two shares of 4Gi fit in 10Gi", name, node, st)
		}
	}
	for _, p := range e.pl.inFlight.list() {
		r := p.allocation.Devices.Results
		if len(r) != 1 || r[0].ShareID == nil {
			t.Fatalf("allocation in flight %+v; want one share of the device", r)
		}
		if got := r[0].ConsumedCapacity["memory"]; got.String() != "4Gi" {
			t.Fatalf("allocation in flight %+v; want one share of the device consuming 4Gi", r)
		}
	}
	if node, st := e.place(framework.NewCycleState(), podWith("pc", "c")); node != "" || st.Code() != framework.Unschedulable {
		t.Fatalf("pod pc while 8Gi of 10Gi are in flight = %q, %v; want Unschedulable", node, st)
	}

	// The informer shows a and b allocated, as Bind writes them.
	shares := []*resourceapi.ResourceClaim{}
	for _, name := range []string{"a", "b"} {
		c := allocated(memoryClaim(name, "4Gi"), "n1", []string{"gpu-0"}, podWith("p"+name, name))
		c.Status.Allocation.Devices.Results[0].ShareID = ptr.To(types.UID("share-" + name))
		c.Status.Allocation.Devices.Results[0].ConsumedCapacity = map[resourceapi.QualifiedName]resource.Quantity{"memory": resource.MustParse("4Gi")}
		shares = append(shares, c)
	}
	e = newEnv(t, []*v1.Node{gpuNode("n1")}, gpuClass(), sharedSlice("n1"), shares[0], shares[1], memoryClaim("c", "4Gi"), memoryClaim("small", "2Gi"))
	if node, st := e.place(framework.NewCycleState(), podWith("pc", "c")); node != "" || st.Code() != framework.Unschedulable {
		t.Fatalf("pod pc with 8Gi of 10Gi allocated = %q, %v; want Unschedulable", node, st)
	}
	if node, st := e.place(framework.NewCycleState(), podWith("ps", "small")); node != "n1" {
		t.Fatalf("pod ps (2Gi) with 8Gi of 10Gi allocated = %q, %v; want n1", node, st)
	}
}
