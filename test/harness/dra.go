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

package harness

import (
	"context"
	"fmt"
	"testing"

	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// GPUs returns n plain devices named gpu-0 to gpu-<n-1>.
func GPUs(n int) []resourceapi.Device {
	out := make([]resourceapi.Device, n)
	for i := range out {
		out[i].Name = fmt.Sprintf("gpu-%d", i)
	}
	return out
}

// PublishDevices publishes devices of driver on node, as the driver's
// kubelet plugin would (no kubelet runs one in the tests): one
// ResourceSlice, name, holding a pool of its own named after node. The
// slice is deleted when t ends.
func PublishDevices(t testing.TB, client kubernetes.Interface, name, driver, node string, devices []resourceapi.Device) {
	t.Helper()
	s := &resourceapi.ResourceSlice{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: resourceapi.ResourceSliceSpec{
			Driver:   driver,
			NodeName: &node,
			Pool:     resourceapi.ResourcePool{Name: node, Generation: 1, ResourceSliceCount: 1},
			Devices:  devices,
		},
	}
	if _, err := client.ResourceV1().ResourceSlices().Create(t.Context(), s, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating ResourceSlice %s: %v", name, err)
	}
	t.Cleanup(func() {
		_ = client.ResourceV1().ResourceSlices().Delete(context.Background(), name, metav1.DeleteOptions{})
	})
}
