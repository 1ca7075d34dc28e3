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
	"context"
	"testing"
	"time"

	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"

	st "github.com/batch-scheduler/batch-scheduler/pkg/testing"
	"github.com/batch-scheduler/batch-scheduler/test/harness"
)

// Device binding conditions on a real API server: node's driver publishes
// a device it must attach before a pod using it runs (binding condition
// "attached"). The scheduler allocates it to the pod's claim and waits:
// the pod stays unbound while the driver has not reported; once the test,
// acting as the driver, sets the condition in the claim's status.devices,
// the pod is bound.
func TestDRABindingConditions(t *testing.T) {
	ns := createNamespace(t)
	class := mustDeviceClass(t, ns)
	node := ns + "-n1"
	mustNode(t, poolNode(t, node, res{"cpu": "16", "memory": "64Gi", "pods": "110"}).Obj())
	harness.PublishDevices(t, cp.Client, node+"-attached", draDriver, node, []resourceapi.Device{{
		Name:                     "gpu-0",
		BindingConditions:        []string{"attached"},
		BindingFailureConditions: []string{"failed"},
	}})
	startPoolScheduler(t)
	mustGPUClaim(t, ns, "p-gpu", class, 1)
	mustPod(t, withResourceClaim(st.MakePod().Namespace(ns).Name("p").Req(res{"cpu": "1"}), "p-gpu"))

	// The allocation is written, with the device's binding condition and
	// a timestamp; the pod is not bound yet, and stays so for a while.
	var claim *resourceapi.ResourceClaim
	err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		c, err := cp.Client.ResourceV1().ResourceClaims(ns).Get(ctx, "p-gpu", metav1.GetOptions{})
		if err != nil || c.Status.Allocation == nil {
			return false, nil
		}
		claim = c
		return true, nil
	})
	if err != nil {
		t.Fatal("the claim was never allocated")
	}
	r := claim.Status.Allocation.Devices.Results[0]
	if claim.Status.Allocation.AllocationTimestamp == nil || len(r.BindingConditions) != 1 || r.BindingConditions[0] != "attached" {
		t.Fatalf("allocation %+v; want the device's binding condition and an allocation timestamp", claim.Status.Allocation)
	}
	time.Sleep(2 * time.Second)
	if n := podNodes(t, ns)["p"]; n != "" {
		t.Fatalf("pod bound to %s before the driver reported its device attached", n)
	}

	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		c, err := cp.Client.ResourceV1().ResourceClaims(ns).Get(t.Context(), "p-gpu", metav1.GetOptions{})
		if err != nil {
			return err
		}
		c.Status.Devices = []resourceapi.AllocatedDeviceStatus{{Driver: r.Driver, Pool: r.Pool, Device: r.Device,
			Conditions: []metav1.Condition{{Type: "attached", Status: metav1.ConditionTrue, Reason: "Attached", LastTransitionTime: metav1.Now()}}}}
		_, err = cp.Client.ResourceV1().ResourceClaims(ns).UpdateStatus(t.Context(), c, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatalf("reporting the device attached: %v", err)
	}
	waitForPods(t, ns, "the pod bound once its device is attached", func(n map[string]string) bool { return n["p"] == node })
}
