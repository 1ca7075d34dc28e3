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

package e2e

import (
	"testing"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	st "github.com/batch-scheduler/batch-scheduler/pkg/testing"
	"github.com/batch-scheduler/batch-scheduler/test/harness"
)

// Consumable capacity on a real API server: node's driver publishes one
// device that allows several allocations, with 10Gi of memory. Two pods
// whose claims ask for 4Gi of it each are bound to the node, each claim
// allocated a share of the device (a share ID, 4Gi consumed); a third
// claim of 4Gi does not fit beside them and its pod stays pending.
func TestDRAConsumableCapacity(t *testing.T) {
	ns := createNamespace(t)
	class := mustDeviceClass(t, ns)
	node := ns + "-n1"
	mustNode(t, poolNode(t, node, res{"cpu": "16", "memory": "64Gi", "pods": "110"}).Obj())
	harness.PublishDevices(t, cp.Client, node+"-shared", draDriver, node, []resourceapi.Device{{
		Name:                     "gpu-0",
		AllowMultipleAllocations: ptr.To(true),
		Capacity:                 map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{"memory": {Value: resource.MustParse("10Gi")}},
	}})
	startPoolScheduler(t)

	for _, name := range []string{"a", "b", "c"} {
		c := &resourceapi.ResourceClaim{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name + "-mem"},
			Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{{
				Name: "gpus",
				Exactly: &resourceapi.ExactDeviceRequest{
					DeviceClassName: class, AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: 1,
					Capacity: &resourceapi.CapacityRequirements{Requests: map[resourceapi.QualifiedName]resource.Quantity{"memory": resource.MustParse("4Gi")}},
				},
			}}}},
		}
		if _, err := cp.Client.ResourceV1().ResourceClaims(ns).Create(t.Context(), c, metav1.CreateOptions{}); err != nil {
			t.Fatalf("creating ResourceClaim %s: %v", c.Name, err)
		}
		if name == "c" {
			// Only once a and b are bound, so that it is the third.
			waitForPods(t, ns, "a and b bound", func(n map[string]string) bool { return n["a"] == node && n["b"] == node })
		}
		mustPod(t, withResourceClaim(st.MakePod().Namespace(ns).Name(name).Req(res{"cpu": "1"}), c.Name))
	}
	for _, name := range []string{"a", "b"} {
		c := getClaim(t, ns, name+"-mem")
		if c.Status.Allocation == nil || len(c.Status.Allocation.Devices.Results) != 1 {
			t.Fatalf("claim %s: allocation %+v, want one device", c.Name, c.Status.Allocation)
		}
		r := c.Status.Allocation.Devices.Results[0]
		if got := r.ConsumedCapacity["memory"]; r.ShareID == nil || r.Device != "gpu-0" || got.String() != "4Gi" {
			t.Errorf("claim %s: result %+v, want a share of gpu-0 consuming 4Gi of memory", c.Name, r)
		}
	}
	waitUnschedulable(t, ns, "c", "cannot allocate all claims")
	if n := podNodes(t, ns)["c"]; n != "" {
		t.Fatalf("pod c bound to %s beside two shares of 4Gi on a device of 10Gi", n)
	}
}
