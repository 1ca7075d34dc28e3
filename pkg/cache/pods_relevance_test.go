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

package cache

import (
	"testing"

	v1 "k8s.io/api/core/v1"

	st "github.com/batch-scheduler/batch-scheduler/pkg/testing"
)

func TestSchedulingRelevantChange(t *testing.T) {
	base := st.MakePod().Name("p").Req(map[v1.ResourceName]string{v1.ResourceCPU: "1"}).Obj()
	claimName := "p-gpu-abc12"
	tests := []struct {
		name   string
		change func(p *v1.Pod)
		want   bool
	}{
		{"nothing", func(*v1.Pod) {}, false},
		{"a condition the scheduler wrote", func(p *v1.Pod) {
			p.Status.Conditions = []v1.PodCondition{{Type: v1.PodScheduled, Status: v1.ConditionFalse}}
		}, false},
		{"a label", func(p *v1.Pod) { p.Labels = map[string]string{"a": "b"} }, true},
		{"the claim made from its template", func(p *v1.Pod) {
			p.Status.ResourceClaimStatuses = []v1.PodResourceClaimStatus{{Name: "gpu", ResourceClaimName: &claimName}}
		}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := base.DeepCopy()
			tt.change(p)
			if got := schedulingRelevantChange(base, p); got != tt.want {
				t.Errorf("schedulingRelevantChange = %v, want %v", got, tt.want)
			}
		})
	}
}
