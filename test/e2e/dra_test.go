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

	st "github.com/batch-scheduler/batch-scheduler/pkg/testing"
	"github.com/batch-scheduler/batch-scheduler/test/harness"
)

// draDriver is the simulated DRA driver whose devices the tests publish
// themselves (no kubelet plugin runs here).
const draDriver = "gpu.e2e.batch-scheduler.io"

// mustDeviceClass creates a DeviceClass named after the namespace that
// selects the simulated driver's devices, and deletes it after the test.
func mustDeviceClass(t *testing.T, ns string) string {
	t.Helper()
	c := &resourceapi.DeviceClass{
		ObjectMeta: metav1.ObjectMeta{Name: ns},
		Spec: resourceapi.DeviceClassSpec{Selectors: []resourceapi.DeviceSelector{{
			CEL: &resourceapi.CELDeviceSelector{Expression: fmt.Sprintf("device.driver == %q", draDriver)},
		}}},
	}
	if _, err := cp.Client.ResourceV1().DeviceClasses().Create(t.Context(), c, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating DeviceClass %s: %v", c.Name, err)
	}
	t.Cleanup(func() {
		_ = cp.Client.ResourceV1().DeviceClasses().Delete(context.Background(), c.Name, metav1.DeleteOptions{})
	})
	return c.Name
}

// publishGPUs publishes, as the driver's kubelet plugin would, a
// ResourceSlice of n devices on node (one pool per node), deleted after
// the test.
func publishGPUs(t *testing.T, node string, n int) {
	t.Helper()
	harness.PublishDevices(t, cp.Client, node+"-gpus", draDriver, node, harness.GPUs(n))
}

// mustGPUClaim creates a claim of count devices of class.
func mustGPUClaim(t *testing.T, ns, name, class string, count int64) {
	t.Helper()
	c := &resourceapi.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{{
			Name: "gpus",
			Exactly: &resourceapi.ExactDeviceRequest{
				DeviceClassName: class, AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: count,
			},
		}}}},
	}
	if _, err := cp.Client.ResourceV1().ResourceClaims(ns).Create(t.Context(), c, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating ResourceClaim %s/%s: %v", ns, name, err)
	}
}

// withResourceClaim returns the pod with a claim "gpus" on ResourceClaim
// claim, used by its container.
func withResourceClaim(w *st.PodWrapper, claim string) *v1.Pod {
	p := w.Obj()
	p.Spec.ResourceClaims = append(p.Spec.ResourceClaims, v1.PodResourceClaim{Name: "gpus", ResourceClaimName: &claim})
	for i := range p.Spec.Containers {
		p.Spec.Containers[i].Resources.Claims = append(p.Spec.Containers[i].Resources.Claims, v1.ResourceClaim{Name: "gpus"})
	}
	return p
}

// getClaim returns claim ns/name from the API server.
func getClaim(t *testing.T, ns, name string) *resourceapi.ResourceClaim {
	t.Helper()
	c, err := cp.Client.ResourceV1().ResourceClaims(ns).Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// checkAllocatedOn checks that claim ns/name holds count devices of node's
// pool, reserved for exactly the pods named.
func checkAllocatedOn(t *testing.T, ns, name, node string, count int, pods ...string) {
	t.Helper()
	c := getClaim(t, ns, name)
	if c.Status.Allocation == nil {
		t.Errorf("claim %s is not allocated", name)
		return
	}
	results := c.Status.Allocation.Devices.Results
	if len(results) != count {
		t.Errorf("claim %s holds %d devices, want %d", name, len(results), count)
	}
	for _, r := range results {
		if r.Driver != draDriver || r.Pool != node {
			t.Errorf("claim %s holds device %s/%s/%s, want one of node %s", name, r.Driver, r.Pool, r.Device, node)
		}
	}
	var reserved []string
	for _, r := range c.Status.ReservedFor {
		reserved = append(reserved, r.Name)
	}
	slices.Sort(reserved)
	slices.Sort(pods)
	if !slices.Equal(reserved, pods) {
		t.Errorf("claim %s is reserved for %v, want %v", name, reserved, pods)
	}
	if !slices.Contains(c.Finalizers, resourceapi.Finalizer) {
		t.Errorf("claim %s lacks the %s finalizer: %v", name, resourceapi.Finalizer, c.Finalizers)
	}
}

// gpuMember is a pod of gang g of size n.
func gpuMember(ns, g string, i, n int) *st.PodWrapper {
	return st.MakePod().Namespace(ns).Name(fmt.Sprintf("%s-%d", g, i)).Group(g).MinAvailable(fmt.Sprint(n)).Req(res{"cpu": "1"})
}

// A gang of four pods each claiming 8 GPUs, on four nodes of 8 GPUs, lands
// on the four nodes with every claim allocated on its pod's node.
func TestDRAGangOfFourEightGPUs(t *testing.T) {
	ns := createNamespace(t)
	class := mustDeviceClass(t, ns)
	big := res{"cpu": "16", "memory": "64Gi", "pods": "110"}
	for i := range 4 {
		node := fmt.Sprintf("%s-n%d", ns, i)
		mustNode(t, poolNode(t, node, big).Obj())
		publishGPUs(t, node, 8)
	}
	startPoolScheduler(t)
	for i := range 4 {
		claim := fmt.Sprintf("g-%d-gpus", i)
		mustGPUClaim(t, ns, claim, class, 8)
		mustPod(t, withResourceClaim(gpuMember(ns, "g", i, 4), claim))
	}
	placed := waitForPods(t, ns, "the gang bound", func(n map[string]string) bool {
		for i := range 4 {
			if n[fmt.Sprintf("g-%d", i)] == "" {
				return false
			}
		}
		return true
	})
	used := map[string]bool{}
	for i := range 4 {
		pod := fmt.Sprintf("g-%d", i)
		if used[placed[pod]] {
			t.Errorf("two pods on node %s: %v", placed[pod], placed)
		}
		used[placed[pod]] = true
		checkAllocatedOn(t, ns, pod+"-gpus", placed[pod], 8, pod)
	}
}

// A gang of four pods claiming 8 GPUs each, with three nodes of 8 GPUs,
// waits whole: no pod is bound and no claim allocated, although three of
// them would fit. When a fourth node's driver publishes its devices, the
// gang lands (the ResourceSlice event retries it).
func TestDRAGangThatDoesNotFitWaitsWhole(t *testing.T) {
	ns := createNamespace(t)
	class := mustDeviceClass(t, ns)
	big := res{"cpu": "16", "memory": "64Gi", "pods": "110"}
	for i := range 4 {
		node := fmt.Sprintf("%s-n%d", ns, i)
		mustNode(t, poolNode(t, node, big).Obj())
		if i < 3 {
			publishGPUs(t, node, 8)
		}
	}
	startPoolScheduler(t)
	for i := range 4 {
		claim := fmt.Sprintf("g-%d-gpus", i)
		mustGPUClaim(t, ns, claim, class, 8)
		mustPod(t, withResourceClaim(gpuMember(ns, "g", i, 4), claim))
	}
	waitUnschedulable(t, ns, "g-3", "cannot allocate all claims")
	assertNoneBoundFor(t, ns, 3*time.Second, "g-0", "g-1", "g-2", "g-3")
	for i := range 4 {
		if c := getClaim(t, ns, fmt.Sprintf("g-%d-gpus", i)); c.Status.Allocation != nil || len(c.Status.ReservedFor) > 0 {
			t.Errorf("claim %s of a gang that waits was written: %+v", c.Name, c.Status)
		}
	}

	publishGPUs(t, fmt.Sprintf("%s-n%d", ns, 3), 8)
	placed := waitForPods(t, ns, "the gang bound once the fourth node has GPUs", func(n map[string]string) bool {
		return n["g-0"] != "" && n["g-1"] != "" && n["g-2"] != "" && n["g-3"] != ""
	})
	for i := range 4 {
		pod := fmt.Sprintf("g-%d", i)
		checkAllocatedOn(t, ns, pod+"-gpus", placed[pod], 8, pod)
	}
}

// assertNoneBoundFor checks, for d, that none of the pods gets a node.
func assertNoneBoundFor(t *testing.T, ns string, d time.Duration, names ...string) {
	t.Helper()
	err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, d, true, func(context.Context) (bool, error) {
		nodes := podNodes(t, ns)
		for _, n := range names {
			if nodes[n] != "" {
				return true, nil
			}
		}
		return false, nil
	})
	if err == nil {
		t.Fatalf("a pod of %v was bound: %v", names, podNodes(t, ns))
	}
}

// One claim shared by the three pods of a gang is allocated once, on the
// one node whose devices it got, and reserved for all three pods, which
// land there.
func TestDRASharedClaim(t *testing.T) {
	ns := createNamespace(t)
	class := mustDeviceClass(t, ns)
	big := res{"cpu": "16", "memory": "64Gi", "pods": "110"}
	mustNode(t, poolNode(t, ns+"-empty", big).Obj())
	mustNode(t, poolNode(t, ns+"-gpus", big).Obj())
	publishGPUs(t, ns+"-gpus", 2)
	startPoolScheduler(t)
	mustGPUClaim(t, ns, "shared", class, 2)
	for i := range 3 {
		mustPod(t, withResourceClaim(gpuMember(ns, "g", i, 3), "shared"))
	}
	placed := waitForPods(t, ns, "the gang bound", func(n map[string]string) bool {
		return n["g-0"] != "" && n["g-1"] != "" && n["g-2"] != ""
	})
	for pod, node := range placed {
		if node != ns+"-gpus" {
			t.Errorf("pod %s on %s, want %s where the shared claim's devices are", pod, node, ns+"-gpus")
		}
	}
	checkAllocatedOn(t, ns, "shared", ns+"-gpus", 2, "g-0", "g-1", "g-2")
}

// A claim of a device class that does not exist, and a pod whose claim is
// missing, keep their pods pending with a reason that names them.
func TestDRABadInput(t *testing.T) {
	ns := createNamespace(t)
	mustDeviceClass(t, ns)
	mustNode(t, poolNode(t, ns+"-n1", res{"cpu": "16", "memory": "64Gi", "pods": "110"}).Obj())
	publishGPUs(t, ns+"-n1", 8)
	startPoolScheduler(t)
	mustGPUClaim(t, ns, "noclass", "no-such-class-"+ns, 1)
	mustPod(t, withResourceClaim(st.MakePod().Namespace(ns).Name("p").Req(res{"cpu": "1"}), "noclass"))
	mustPod(t, withResourceClaim(st.MakePod().Namespace(ns).Name("q").Req(res{"cpu": "1"}), "missing"))
	waitUnschedulable(t, ns, "p", `resourceclaim "noclass", request "gpus": device class "no-such-class-`+ns+`" does not exist`)
	waitUnschedulable(t, ns, "q", `resourceclaim "missing" of pod claim "gpus" not found`)
}

// A pod whose claim comes from a ResourceClaimTemplate waits until the
// real kube-controller-manager (its resource claim controller) created
// the claim and named it in the pod's status; then the claim is allocated
// and the pod bound.
func TestDRAClaimFromTemplate(t *testing.T) {
	ns := createNamespace(t)
	class := mustDeviceClass(t, ns)
	mustNode(t, poolNode(t, ns+"-n1", res{"cpu": "16", "memory": "64Gi", "pods": "110"}).Obj())
	publishGPUs(t, ns+"-n1", 8)
	startPoolScheduler(t)
	tmpl := &resourceapi.ResourceClaimTemplate{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "gpus"},
		Spec: resourceapi.ResourceClaimTemplateSpec{Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{
			Requests: []resourceapi.DeviceRequest{{Name: "gpus", Exactly: &resourceapi.ExactDeviceRequest{
				DeviceClassName: class, AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: 4,
			}}},
		}}},
	}
	if _, err := cp.Client.ResourceV1().ResourceClaimTemplates(ns).Create(t.Context(), tmpl, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating ResourceClaimTemplate: %v", err)
	}
	p := st.MakePod().Namespace(ns).Name("p").Req(res{"cpu": "1"}).Obj()
	p.Spec.ResourceClaims = []v1.PodResourceClaim{{Name: "gpus", ResourceClaimTemplateName: &tmpl.Name}}
	p.Spec.Containers[0].Resources.Claims = []v1.ResourceClaim{{Name: "gpus"}}
	mustPod(t, p)
	placed := waitForPods(t, ns, "the pod bound", func(n map[string]string) bool { return n["p"] != "" })
	pod, err := cp.Client.CoreV1().Pods(ns).Get(t.Context(), "p", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(pod.Status.ResourceClaimStatuses) != 1 || pod.Status.ResourceClaimStatuses[0].ResourceClaimName == nil {
		t.Fatalf("pod's resourceClaimStatuses = %+v, want the generated claim", pod.Status.ResourceClaimStatuses)
	}
	name := *pod.Status.ResourceClaimStatuses[0].ResourceClaimName
	if c := getClaim(t, ns, name); !metav1.IsControlledBy(c, pod) {
		t.Errorf("claim %s is not controlled by the pod: %+v", name, c.OwnerReferences)
	}
	checkAllocatedOn(t, ns, name, placed["p"], 4, "p")
}
