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

package cache_test

import (
	"fmt"
	"runtime"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/batch-scheduler/batch-scheduler/pkg/cache"
)

// BenchmarkCacheRecordBytes measures the heap the cache's own records
// take per bound pod (B/pod), the pods themselves excluded (they are built
// before the first measurement and kept alive after the last): pods of
// another scheduler outside any gang, which make up most of a large
// cluster, and the same pods as this scheduler's. 5,000 nodes and
// 150,000 pods (see scaleSize). The nodes are added before the first
// measurement too.
func BenchmarkCacheRecordBytes(b *testing.B) {
	nodes, pods := scaleSize(b)
	for _, tc := range []struct{ name, scheduler string }{
		{"others-pods", "default-scheduler"},
		{"own-pods", cache.DefaultSchedulerName},
	} {
		b.Run(tc.name, func(b *testing.B) {
			var bytes uint64
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				ps := recordPods(pods, nodes, tc.scheduler)
				c, err := cache.New(cache.Options{})
				if err != nil {
					b.Fatal(err)
				}
				for n := 0; n < nodes; n++ {
					node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("node-%05d", n)},
						Status: v1.NodeStatus{Allocatable: v1.ResourceList{v1.ResourceCPU: resource.MustParse("64"),
							v1.ResourceMemory: resource.MustParse("256Gi"), v1.ResourcePods: resource.MustParse("110")}}}
					if err := c.AddOrUpdateNode(node); err != nil {
						b.Fatal(err)
					}
				}
				before := heapInUse()
				b.StartTimer()
				for _, p := range ps {
					if err := c.AddPod(p); err != nil {
						b.Fatal(err)
					}
				}
				b.StopTimer()
				bytes += heapInUse() - before
				runtime.KeepAlive(c)
				runtime.KeepAlive(ps)
				b.StartTimer()
			}
			b.ReportMetric(float64(bytes)/float64(b.N)/float64(pods), "B/pod")
		})
	}
}

// recordPods returns pods Deployment replicas bound round-robin to nodes,
// of the scheduler named.
func recordPods(pods, nodes int, scheduler string) []*v1.Pod {
	out := make([]*v1.Pod, pods)
	for i := range out {
		rs := fmt.Sprintf("web-%d-7d4b9c", i/50)
		out[i] = &v1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%05d", rs, i), Namespace: fmt.Sprintf("team-%d", i%20),
				UID: types.UID(fmt.Sprintf("uid-%07d", i)), Labels: map[string]string{"app": "web"},
				OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: rs, UID: "rs", Controller: ptrTo(true)}}},
			Spec: v1.PodSpec{NodeName: fmt.Sprintf("node-%05d", i%nodes), SchedulerName: scheduler,
				Containers: []v1.Container{{Name: "app", Resources: v1.ResourceRequirements{Requests: v1.ResourceList{
					v1.ResourceCPU: resource.MustParse("100m"), v1.ResourceMemory: resource.MustParse("128Mi")}}}}},
			Status: v1.PodStatus{Phase: v1.PodRunning},
		}
	}
	return out
}

func ptrTo[T any](v T) *T { return &v }
