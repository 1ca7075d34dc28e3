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

package dialects

import (
	"context"
	"fmt"
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// A native PodGroup's claim (spec.resourceClaims, DRAWorkloadResourceClaims),
// which every pod of the gang lists in its own spec.resourceClaims, is a
// claim shared by the gang: allocated once, on the one node with devices,
// where both pods land, reserved for both.
func TestNativePodGroupResourceClaim(t *testing.T) {
	ns, nodes := setup(t, 2, "4")
	ctx := t.Context()
	driver := "gpu.dialects.batch-scheduler.io"
	class := &resourceapi.DeviceClass{
		ObjectMeta: metav1.ObjectMeta{Name: ns},
		Spec: resourceapi.DeviceClassSpec{Selectors: []resourceapi.DeviceSelector{{
			CEL: &resourceapi.CELDeviceSelector{Expression: fmt.Sprintf("device.driver == %q", driver)},
		}}},
	}
	if _, err := cp.Client.ResourceV1().DeviceClasses().Create(ctx, class, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cp.Client.ResourceV1().DeviceClasses().Delete(context.Background(), ns, metav1.DeleteOptions{})
	})
	gpuNode := nodes[1]
	slice := &resourceapi.ResourceSlice{
		ObjectMeta: metav1.ObjectMeta{Name: ns + "-gpus"},
		Spec: resourceapi.ResourceSliceSpec{Driver: driver, NodeName: &gpuNode,
			Pool:    resourceapi.ResourcePool{Name: gpuNode, Generation: 1, ResourceSliceCount: 1},
			Devices: []resourceapi.Device{{Name: "gpu-0"}, {Name: "gpu-1"}}},
	}
	if _, err := cp.Client.ResourceV1().ResourceSlices().Create(ctx, slice, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cp.Client.ResourceV1().ResourceSlices().Delete(context.Background(), slice.Name, metav1.DeleteOptions{})
	})
	claim := &resourceapi.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "shared"},
		Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{{
			Name: "gpus", Exactly: &resourceapi.ExactDeviceRequest{
				DeviceClassName: ns, AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: 2},
		}}}},
	}
	if _, err := cp.Client.ResourceV1().ResourceClaims(ns).Create(ctx, claim, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	createObject(t, nativeGVR, ns, podGroup("scheduling.k8s.io/v1beta1", ns, "np", map[string]any{
		"schedulingPolicy": map[string]any{"gang": map[string]any{"minCount": int64(2)}},
		"resourceClaims":   []any{map[string]any{"name": "gpus", "resourceClaimName": "shared"}},
	}))
	// The API server keeps the field only with the feature gate: check
	// that this test is about what it says.
	u, err := dyn.Resource(nativeGVR).Namespace(ns).Get(ctx, "np", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if rc, _, _ := unstructured.NestedSlice(u.Object, "spec", "resourceClaims"); len(rc) != 1 {
		t.Fatalf("the PodGroup as stored has no resourceClaims (feature gate off?): %v", u.Object["spec"])
	}
	startScheduler(t)
	for i := range 2 {
		p := gangPod(ns, fmt.Sprintf("np-%d", i)).Obj()
		group, name := "np", "shared"
		p.Spec.SchedulingGroup = &v1.PodSchedulingGroup{PodGroupName: &group}
		p.Spec.ResourceClaims = []v1.PodResourceClaim{{Name: "gpus", ResourceClaimName: &name}}
		p.Spec.Containers[0].Resources.Claims = []v1.ResourceClaim{{Name: "gpus"}}
		createPod(t, p)
	}
	waitBound(t, ns, 2, "the gang sharing the PodGroup's claim")
	for pod, node := range bound(t, ns) {
		if node != gpuNode {
			t.Errorf("pod %s on %s, want %s where the claim's devices are", pod, node, gpuNode)
		}
	}
	got, err := cp.Client.ResourceV1().ResourceClaims(ns).Get(ctx, "shared", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Status.Allocation == nil || len(got.Status.Allocation.Devices.Results) != 2 {
		t.Errorf("claim allocation = %+v, want 2 devices", got.Status.Allocation)
	}
	var reserved []string
	for _, r := range got.Status.ReservedFor {
		reserved = append(reserved, r.Name)
	}
	slices.Sort(reserved)
	if !slices.Equal(reserved, []string{"np-0", "np-1"}) {
		t.Errorf("claim reserved for %v, want np-0 and np-1", reserved)
	}
}
