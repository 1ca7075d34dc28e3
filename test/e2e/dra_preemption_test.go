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
	"fmt"
	"slices"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
)

// mustHeldClaim creates claim ns/name holding every device of node's
// pool (n of them), reserved for the pods given, as another scheduler
// would have left it.
func mustHeldClaim(t *testing.T, ns, name, class, node string, n int, pods ...*v1.Pod) {
	t.Helper()
	mustGPUClaim(t, ns, name, class, int64(n))
	c := getClaim(t, ns, name)
	c.Finalizers = append(c.Finalizers, resourceapi.Finalizer)
	c, err := cp.Client.ResourceV1().ResourceClaims(ns).Update(t.Context(), c, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	a := &resourceapi.AllocationResult{NodeSelector: &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{{
		MatchFields: []v1.NodeSelectorRequirement{{Key: "metadata.name", Operator: v1.NodeSelectorOpIn, Values: []string{node}}},
	}}}}
	for i := range n {
		a.Devices.Results = append(a.Devices.Results, resourceapi.DeviceRequestAllocationResult{
			Request: "gpus", Driver: draDriver, Pool: node, Device: fmt.Sprintf("gpu-%d", i)})
	}
	c.Status.Allocation = a
	for _, p := range pods {
		c.Status.ReservedFor = append(c.Status.ReservedFor, resourceapi.ResourceClaimConsumerReference{Resource: "pods", Name: p.Name, UID: p.UID})
	}
	if _, err := cp.Client.ResourceV1().ResourceClaims(ns).UpdateStatus(t.Context(), c, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("allocating claim %s/%s: %v", ns, name, err)
	}
}

// A high-priority pod claiming 8 GPUs, on a node whose 8 GPUs a
// low-priority pod's claim holds, preempts that pod: in the simulation its
// devices count as free. Once it is gone, the resource claim controller
// deallocates its claim and the preemptor's claim gets the devices.
func TestDRAPreemptionFreesAVictimsDevices(t *testing.T) {
	ns := createNamespace(t)
	pc := priorityClasses(t)
	class := mustDeviceClass(t, ns)
	node := ns + "-n1"
	mustNode(t, poolNode(t, node, res{"cpu": "16", "memory": "64Gi", "pods": "110"}).Obj())
	publishGPUs(t, node, 8)
	low := mustPod(t, withResourceClaim(victim(ns, "low", node, pc["low"], "1"), "held"))
	mustHeldClaim(t, ns, "held", class, node, 8, low)
	startPoolScheduler(t)
	mustGPUClaim(t, ns, "want", class, 8)
	mustPod(t, withResourceClaim(preemptor(ns, "high", pc["high"], "1"), "want"))
	waitForPods(t, ns, "the preemptor bound", func(n map[string]string) bool { return n["high"] == node })
	if p := present(t, ns); !slices.Equal(p, []string{"high"}) {
		t.Errorf("pods left %v, want [high]", p)
	}
	checkAllocatedOn(t, ns, "want", node, 8, "high")
}

// When the victim's claim is shared with a pod that may not be preempted,
// evicting the victim frees no device: nothing is evicted and the
// preemptor waits.
func TestDRAPreemptionSparesASharedClaim(t *testing.T) {
	ns := createNamespace(t)
	pc := priorityClasses(t)
	class := mustDeviceClass(t, ns)
	node := ns + "-n1"
	mustNode(t, poolNode(t, node, res{"cpu": "16", "memory": "64Gi", "pods": "110"}).Obj())
	publishGPUs(t, node, 8)
	low := mustPod(t, withResourceClaim(victim(ns, "low", node, pc["low"], "1"), "held"))
	keeper := mustPod(t, withResourceClaim(victim(ns, "keeper", node, pc["top"], "1"), "held"))
	mustHeldClaim(t, ns, "held", class, node, 8, low, keeper)
	startPoolScheduler(t)
	mustGPUClaim(t, ns, "want", class, 8)
	mustPod(t, withResourceClaim(preemptor(ns, "high", pc["high"], "1"), "want"))
	waitUnschedulable(t, ns, "high", "cannot allocate all claims")
	// Give a wrong preemption time to happen.
	err := wait.PollUntilContextTimeout(t.Context(), 200*time.Millisecond, 5*time.Second, true, func(context.Context) (bool, error) {
		return !slices.Equal(present(t, ns), []string{"high", "keeper", "low"}), nil
	})
	if err == nil {
		t.Fatalf("pods left %v: a pod was evicted although its claim stays in use", present(t, ns))
	}
}

// A gang of two pods claiming 8 GPUs each preempts the low-priority pods
// holding the GPUs of two nodes: both go, not one (the simulation does not
// let the second pod count on the devices the first was placed with), and
// the gang lands on the two nodes.
func TestDRAPreemptionForAGang(t *testing.T) {
	ns := createNamespace(t)
	pc := priorityClasses(t)
	class := mustDeviceClass(t, ns)
	for i := range 2 {
		node := fmt.Sprintf("%s-n%d", ns, i)
		mustNode(t, poolNode(t, node, res{"cpu": "16", "memory": "64Gi", "pods": "110"}).Obj())
		publishGPUs(t, node, 8)
		low := mustPod(t, withResourceClaim(victim(ns, fmt.Sprintf("low-%d", i), node, pc["low"], "1"), fmt.Sprintf("held-%d", i)))
		mustHeldClaim(t, ns, fmt.Sprintf("held-%d", i), class, node, 8, low)
	}
	startPoolScheduler(t)
	for i := range 2 {
		claim := fmt.Sprintf("want-%d", i)
		mustGPUClaim(t, ns, claim, class, 8)
		mustPod(t, withResourceClaim(preemptor(ns, fmt.Sprintf("high-%d", i), pc["high"], "1").Group("high").MinAvailable("2"), claim))
	}
	placed := waitForPods(t, ns, "the gang bound", func(n map[string]string) bool { return n["high-0"] != "" && n["high-1"] != "" })
	if placed["high-0"] == placed["high-1"] {
		t.Errorf("both pods of the gang on %s", placed["high-0"])
	}
	if p := present(t, ns); !slices.Equal(p, []string{"high-0", "high-1"}) {
		t.Errorf("pods left %v, want the gang only", p)
	}
	for i := range 2 {
		pod := fmt.Sprintf("high-%d", i)
		checkAllocatedOn(t, ns, fmt.Sprintf("want-%d", i), placed[pod], 8, pod)
	}
}
