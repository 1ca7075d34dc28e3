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

	st "github.com/batch-scheduler/batch-scheduler/pkg/testing"
)

// extendedGPU is the extended resource the DeviceClass of
// TestDRAExtendedResource maps.
const extendedGPU v1.ResourceName = "example.com/gpu"

// mustMappedDeviceClass creates a DeviceClass named after the namespace
// that selects the simulated driver's devices and maps the extended
// resource name to them; it is deleted after the test.
func mustMappedDeviceClass(t *testing.T, ns string, name v1.ResourceName) string {
	t.Helper()
	mapped := string(name)
	c := &resourceapi.DeviceClass{
		ObjectMeta: metav1.ObjectMeta{Name: ns},
		Spec: resourceapi.DeviceClassSpec{
			Selectors: []resourceapi.DeviceSelector{{
				CEL: &resourceapi.CELDeviceSelector{Expression: fmt.Sprintf("device.driver == %q", draDriver)},
			}},
			ExtendedResourceName: &mapped,
		},
	}
	if _, err := cp.Client.ResourceV1().DeviceClasses().Create(t.Context(), c, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating DeviceClass %s: %v", c.Name, err)
	}
	t.Cleanup(func() {
		_ = cp.Client.ResourceV1().DeviceClasses().Delete(context.Background(), c.Name, metav1.DeleteOptions{})
	})
	return c.Name
}

// extendedPod is a pod whose container asks for n of the extended
// resource (requests and limits, as the API wants for extended resources).
func extendedPod(ns, name string, n int) *v1.Pod {
	p := st.MakePod().Namespace(ns).Name(name).Req(res{"cpu": "1", extendedGPU: fmt.Sprint(n)}).Obj()
	p.Spec.Containers[0].Resources.Limits = v1.ResourceList{extendedGPU: p.Spec.Containers[0].Resources.Requests[extendedGPU]}
	return p
}

// A pod asking for example.com/gpu, on a node that does not list it in
// its allocatable but whose DRA driver publishes devices of a class that
// maps the name, is bound with the devices allocated through DRA: the
// scheduler created a claim for it (annotated, owned by the pod,
// allocated on its node, reserved for it) and named it in the pod's
// status. A second pod, for which no device is left, stays pending with a
// message naming the resource.
func TestDRAExtendedResource(t *testing.T) {
	ns := createNamespace(t)
	class := mustMappedDeviceClass(t, ns, extendedGPU)
	node := ns + "-n1"
	mustNode(t, poolNode(t, node, res{"cpu": "16", "memory": "64Gi", "pods": "110"}).Obj())
	publishGPUs(t, node, 2)
	startPoolScheduler(t)

	mustPod(t, extendedPod(ns, "first", 2))
	placed := waitForPods(t, ns, "the first pod bound", func(n map[string]string) bool { return n["first"] != "" })
	if placed["first"] != node {
		t.Fatalf("first pod on %q, want %s", placed["first"], node)
	}
	pod, err := cp.Client.CoreV1().Pods(ns).Get(t.Context(), "first", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	status := pod.Status.ExtendedResourceClaimStatus
	if status == nil || status.ResourceClaimName == "" {
		t.Fatalf("pod's status.extendedResourceClaimStatus = %+v, want the claim named", status)
	}
	want := []v1.ContainerExtendedResourceRequest{{ContainerName: pod.Spec.Containers[0].Name, ResourceName: string(extendedGPU), RequestName: "container-0-request-1"}}
	if !slices.Equal(status.RequestMappings, want) {
		t.Errorf("request mappings = %+v, want %+v", status.RequestMappings, want)
	}
	c := getClaim(t, ns, status.ResourceClaimName)
	if c.Annotations[resourceapi.ExtendedResourceClaimAnnotation] != "true" {
		t.Errorf("claim %s lacks the %s annotation: %v", c.Name, resourceapi.ExtendedResourceClaimAnnotation, c.Annotations)
	}
	if !metav1.IsControlledBy(c, pod) {
		t.Errorf("claim %s is not controlled by the pod: %+v", c.Name, c.OwnerReferences)
	}
	if reqs := c.Spec.Devices.Requests; len(reqs) != 1 || reqs[0].Exactly == nil || reqs[0].Exactly.DeviceClassName != class || reqs[0].Exactly.Count != 2 {
		t.Errorf("claim %s requests %+v, want 2 devices of class %s", c.Name, reqs, class)
	}
	checkAllocatedOn(t, ns, c.Name, node, 2, "first")

	mustPod(t, extendedPod(ns, "second", 1))
	waitUnschedulable(t, ns, "second", "cannot allocate devices for extended resources "+string(extendedGPU))
	assertNoneBoundFor(t, ns, 2*time.Second, "second")
}
