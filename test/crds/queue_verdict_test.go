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

package crds

import (
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	bsv1 "github.com/batch-scheduler/batch-scheduler/pkg/apis/batchscheduler/v1alpha1"
)

func sampleQueue(name string) *bsv1.Queue {
	no := false
	return &bsv1.Queue{
		TypeMeta:   metav1.TypeMeta{APIVersion: bsv1.SchemeGroupVersion.String(), Kind: "Queue"},
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: bsv1.QueueSpec{
			Parent:     "research",
			Weight:     3,
			Guaranteed: v1.ResourceList{v1.ResourceCPU: resource.MustParse("8"), v1.ResourceMemory: resource.MustParse("16Gi")},
			Limit:      v1.ResourceList{v1.ResourceCPU: resource.MustParse("32")},
			Lend:       &no,
		},
		Status: bsv1.QueueStatus{
			Allocated:   v1.ResourceList{v1.ResourceCPU: resource.MustParse("6")},
			FairShare:   v1.ResourceList{v1.ResourceCPU: resource.MustParse("12")},
			PendingJobs: 2,
			RunningJobs: 3,
		},
	}
}

func queueKind() kind[*bsv1.Queue] {
	return kind[*bsv1.Queue]{
		resource: bsv1.QueuesResource,
		client:   client.BatchSchedulerV1alpha1().Queues(),
		sample:   sampleQueue,
		validate: bsv1.ValidateQueue,
		withStatus: func(created, from *bsv1.Queue) (*bsv1.Queue, bool) {
			out := created.DeepCopy()
			out.Status = from.Status
			return out, !equality.Semantic.DeepEqual(from.Status, bsv1.QueueStatus{})
		},
	}
}

// overLimit is why the CRD does not compare a guarantee with the limit:
// CEL's quantity() over unbounded strings, for every pair of resources,
// costs 16 times a rule's budget.
const overLimit = "comparing quantities in CEL exceeds the CRD's cost budget"

func queueGuaranteed(q *bsv1.Queue) v1.ResourceList { return q.Spec.Guaranteed }

// The API server enforces ValidateQueue's rules through the CRD's schema
// and CEL rules, with the same verdict on the same object, except one: a
// guarantee above the limit is accepted and then reported invalid by the
// scheduler (the Volcano-dialect queues, read from another API, are
// checked by ValidateQueue alone).
func TestQueueVerdicts(t *testing.T) {
	guaranteedCPU := func(q string) func(*bsv1.Queue) {
		return func(o *bsv1.Queue) { o.Spec.Guaranteed[v1.ResourceCPU] = resource.MustParse(q) }
	}
	runVerdicts(t, queueKind(), []verdictCase[*bsv1.Queue]{
		{name: "valid", valid: true},
		{name: "empty spec and status", valid: true, mutate: func(q *bsv1.Queue) {
			q.Spec = bsv1.QueueSpec{}
			q.Status = bsv1.QueueStatus{}
		}},
		{name: "guarantee equal to the limit", valid: true, mutate: guaranteedCPU("32")},
		{name: "guarantee in other units below the limit", valid: true, mutate: guaranteedCPU("31500m")},
		{name: "guarantee of a resource the limit does not name", valid: true, mutate: func(q *bsv1.Queue) {
			q.Spec.Guaranteed["nvidia.com/gpu"] = resource.MustParse("4")
		}},
		{name: "guarantee as a bare integer below the limit", valid: true, wire: func(m map[string]any) {
			spec(m)["guaranteed"].(map[string]any)["cpu"] = 4
		}},
		{name: "weight at the maximum", valid: true, mutate: func(q *bsv1.Queue) { q.Spec.Weight = bsv1.MaxQueueWeight }},
		{name: "parent of 253 characters", valid: true, mutate: func(q *bsv1.Queue) { q.Spec.Parent = strings.Repeat("a", 253) }},
		{name: "MaxResources guaranteed", valid: true, mutate: func(q *bsv1.Queue) {
			manyResources[*bsv1.Queue](bsv1.MaxResources, queueGuaranteed)(q)
			q.Spec.Limit = nil
		}},

		{name: "own parent", fields: f("spec.parent"), mutate: func(q *bsv1.Queue) { q.Spec.Parent = q.Name }},
		{name: "parent not a DNS subdomain", fields: f("spec.parent"), mutate: func(q *bsv1.Queue) { q.Spec.Parent = "Team_A" }},
		{name: "parent of 254 characters", fields: f("spec.parent"), mutate: func(q *bsv1.Queue) { q.Spec.Parent = strings.Repeat("a", 254) }},
		{name: "weight negative", fields: f("spec.weight"), mutate: func(q *bsv1.Queue) { q.Spec.Weight = -1 }},
		{name: "weight above the maximum", fields: f("spec.weight"), mutate: func(q *bsv1.Queue) { q.Spec.Weight = bsv1.MaxQueueWeight + 1 }},
		{name: "guarantee above the limit", fields: f("spec.guaranteed[cpu]"), mutate: guaranteedCPU("33"), goStricter: overLimit},
		{name: "guarantee above the limit in other units", fields: f("spec.guaranteed[cpu]"), mutate: guaranteedCPU("32001m"), goStricter: overLimit},
		{name: "negative guarantee", fields: f("spec.guaranteed"), mutate: guaranteedCPU("-1")},
		{name: "negative limit", fields: f("spec.limit"), mutate: func(q *bsv1.Queue) {
			q.Spec.Limit[v1.ResourceMemory] = resource.MustParse("-1Gi")
		}},
		{name: "empty resource name in the limit", fields: f("spec.limit"), mutate: func(q *bsv1.Queue) {
			q.Spec.Limit[""] = resource.MustParse("1")
		}},
		{name: "more than MaxResources guaranteed", fields: f("spec.guaranteed"), mutate: func(q *bsv1.Queue) {
			manyResources[*bsv1.Queue](bsv1.MaxResources+1, queueGuaranteed)(q)
			q.Spec.Limit = nil
		}},
	})
}
