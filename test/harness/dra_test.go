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
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

func TestPublishDevices(t *testing.T) {
	client := fake.NewClientset()
	t.Run("publish", func(t *testing.T) {
		PublishDevices(t, client, "n1-gpus", "gpu.example.com", "n1", GPUs(3))
		s, err := client.ResourceV1().ResourceSlices().Get(t.Context(), "n1-gpus", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if s.Spec.Driver != "gpu.example.com" || s.Spec.NodeName == nil || *s.Spec.NodeName != "n1" || s.Spec.Pool.Name != "n1" ||
			len(s.Spec.Devices) != 3 || s.Spec.Devices[2].Name != "gpu-2" {
			t.Errorf("slice %+v; want 3 devices gpu-0..2 of gpu.example.com in pool n1 on node n1", s.Spec)
		}
	})
	// The subtest's cleanup deleted it.
	if l, err := client.ResourceV1().ResourceSlices().List(t.Context(), metav1.ListOptions{}); err != nil || len(l.Items) != 0 {
		t.Errorf("slices left after the test: %v (%v)", l, err)
	}
}
