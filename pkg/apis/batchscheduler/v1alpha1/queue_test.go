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

package v1alpha1

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func sampleQueue() *Queue {
	no := false
	return &Queue{
		TypeMeta:   metav1.TypeMeta{APIVersion: SchemeGroupVersion.String(), Kind: "Queue"},
		ObjectMeta: metav1.ObjectMeta{Name: "team-a"},
		Spec: QueueSpec{
			Parent: "org",
			Weight: 3,
			Guaranteed: v1.ResourceList{
				v1.ResourceCPU:    resource.MustParse("4"),
				v1.ResourceMemory: resource.MustParse("8Gi"),
			},
			Limit:  v1.ResourceList{v1.ResourceCPU: resource.MustParse("16")},
			Borrow: &no,
		},
	}
}

func TestValidateQueue(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*Queue)
		fields []string // expected error field paths; empty means valid
	}{
		{"valid", func(*Queue) {}, nil},
		{"a child of the root with defaults", func(q *Queue) { q.Spec = QueueSpec{} }, nil},
		{"weight at the maximum", func(q *Queue) { q.Spec.Weight = MaxQueueWeight }, nil},
		{"a guarantee equal to the limit", func(q *Queue) { q.Spec.Guaranteed[v1.ResourceCPU] = resource.MustParse("16") }, nil},
		{"a guarantee of a resource the limit does not name", func(q *Queue) {
			q.Spec.Guaranteed["nvidia.com/gpu"] = resource.MustParse("8")
		}, nil},
		{"bad name", func(q *Queue) { q.Name = "Team_A" }, []string{"metadata.name"}},
		{"bad parent", func(q *Queue) { q.Spec.Parent = "Org!" }, []string{"spec.parent"}},
		{"its own parent", func(q *Queue) { q.Spec.Parent = "team-a" }, []string{"spec.parent"}},
		{"negative weight", func(q *Queue) { q.Spec.Weight = -1 }, []string{"spec.weight"}},
		{"weight above the maximum", func(q *Queue) { q.Spec.Weight = MaxQueueWeight + 1 }, []string{"spec.weight"}},
		{"negative guaranteed", func(q *Queue) { q.Spec.Guaranteed[v1.ResourceMemory] = resource.MustParse("-1Gi") },
			[]string{"spec.guaranteed[memory]"}},
		{"negative limit", func(q *Queue) { q.Spec.Limit["nvidia.com/gpu"] = resource.MustParse("-1") },
			[]string{"spec.limit[nvidia.com/gpu]"}},
		{"guaranteed above the limit", func(q *Queue) { q.Spec.Guaranteed[v1.ResourceCPU] = resource.MustParse("17") },
			[]string{"spec.guaranteed[cpu]"}},
		{"too many limits", func(q *Queue) { q.Spec.Limit = manyResources(MaxResources + 1) }, []string{"spec.limit"}},
		{"several", func(q *Queue) { q.Name = "A"; q.Spec.Weight = -5 }, []string{"metadata.name", "spec.weight"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q := sampleQueue()
			tt.mutate(q)
			errs := ValidateQueue(q)
			checkFields(t, errs.ToAggregate(), fieldsOf(errs), tt.fields)
		})
	}
	if errs := ValidateQueue(nil); len(errs) != 1 {
		t.Errorf("ValidateQueue(nil) = %v, want one error", errs)
	}
}
