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

package differential

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

const (
	dynamicResources = "DynamicResources"
	diffDriver       = "gpu.differential.batch-scheduler.io"
)

// draObjects are one run's DRA objects, named after its namespace ns so
// that a run's claims (deleted only once the resource claim controller
// released them) never hold the next run's devices: a DeviceClass ns,
// a ResourceSlice of perNode devices in a pool of its own on each node,
// and the claims (name: device count).
func draObjects(ns string, nodes []string, perNode int, claims map[string]int64) []client.Object {
	objs := []client.Object{&resourceapi.DeviceClass{
		ObjectMeta: metav1.ObjectMeta{Name: ns},
		Spec: resourceapi.DeviceClassSpec{Selectors: []resourceapi.DeviceSelector{{
			CEL: &resourceapi.CELDeviceSelector{Expression: fmt.Sprintf("device.driver == %q", diffDriver)},
		}}},
	}}
	for _, n := range nodes {
		s := &resourceapi.ResourceSlice{
			ObjectMeta: metav1.ObjectMeta{Name: ns + "-" + n},
			Spec: resourceapi.ResourceSliceSpec{
				Driver: diffDriver, NodeName: &n,
				Pool: resourceapi.ResourcePool{Name: ns + "-" + n, Generation: 1, ResourceSliceCount: 1},
			},
		}
		for i := range perNode {
			s.Spec.Devices = append(s.Spec.Devices, resourceapi.Device{Name: fmt.Sprintf("gpu-%d", i)})
		}
		objs = append(objs, s)
	}
	for name, count := range claims {
		objs = append(objs, &resourceapi.ResourceClaim{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{{
				Name: "gpus",
				Exactly: &resourceapi.ExactDeviceRequest{
					DeviceClassName: ns, AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: count,
				},
			}}}},
		})
	}
	return objs
}

// withResourceClaim returns p with a pod claim "gpus" on ResourceClaim
// name, used by its first container.
func withResourceClaim(p *v1.Pod, name string) *v1.Pod {
	p.Spec.ResourceClaims = append(p.Spec.ResourceClaims, v1.PodResourceClaim{Name: "gpus", ResourceClaimName: &name})
	p.Spec.Containers[0].Resources.Claims = append(p.Spec.Containers[0].Resources.Claims, v1.ResourceClaim{Name: "gpus"})
	return p
}

// draScenarios compare the DynamicResources plugins on the same
// ResourceSlices and claims: devices taken by earlier pods' claims, a
// claim too big for any node, a claim shared by two pods (the second goes
// where the first one's devices are), and cpu and devices on different
// nodes.
func draScenarios() []scenario {
	nodes := []string{"dra-1", "dra-2"}
	return []scenario{{
		name:    "DynamicResources",
		plugins: []string{dynamicResources},
		nodes:   []*v1.Node{node("dra-1", "4", "8Gi").Obj(), node("dra-2", "4", "8Gi").Obj()},
		phaseObjects: func(ns string) []client.Object {
			return draObjects(ns, nodes, 2, map[string]int64{"two-a": 2, "two-b": 2, "one": 1, "three": 3, "shared": 1})
		},
		pods: []*v1.Pod{
			// Each node's two devices go to one claim.
			withResourceClaim(pod("two-a", "100m", "").Obj(), "two-a"),
			withResourceClaim(pod("two-b", "100m", "").Obj(), "two-b"),
			// No device is left anywhere.
			withResourceClaim(pod("one", "100m", "").Obj(), "one"),
			// No node has three devices.
			withResourceClaim(pod("three", "100m", "").Obj(), "three"),
			// A second pod of an allocated claim goes with it.
			withResourceClaim(pod("two-a-again", "100m", "").Obj(), "two-a"),
			// Its node lacks the cpu (3.8 free), the other one (3.9
			// free) is not where its devices are.
			withResourceClaim(pod("two-a-no-cpu", "3850m", "").Obj(), "two-a"),
		},
	}}
}
