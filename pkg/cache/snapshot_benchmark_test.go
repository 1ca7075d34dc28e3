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
	"fmt"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	st "github.com/batch-scheduler/batch-scheduler/pkg/testing"
)

// BenchmarkSnapshotScale measures UpdateSnapshot after 1, 100 and 10,000
// changes (a bound pod's labels updated, each on the next node round
// robin) against the baseline of a full clone of every NodeInfo (a new
// snapshot), at two cluster sizes with 30 pods per node: 1,000 nodes with
// 30,000 pods and 5,000 nodes with 150,000 (with -short, 100 and 500
// nodes). The incremental update must cost what changed, not the size of
// the cluster. Compare update-ns/op, the time in UpdateSnapshot alone;
// ns/op includes making the changes.
func BenchmarkSnapshotScale(b *testing.B) {
	const podsPerNode = 30
	sizes := []int{1000, 5000}
	if testing.Short() {
		sizes = []int{100, 500}
	}
	for _, nodes := range sizes {
		c := fillCache(b, nodes, podsPerNode)
		pod := func(node, j, round int) *v1.Pod {
			return st.MakePod().Name(fmt.Sprintf("pod-%05d-%02d", node, j)).Node(fmt.Sprintf("node-%05d", node)).Phase(v1.PodRunning).
				Req(res{v1.ResourceCPU: "100m", v1.ResourceMemory: "128Mi"}).Label("round", fmt.Sprint(round)).Obj()
		}
		b.Run(fmt.Sprintf("nodes=%d/baseline=full-clone", nodes), func(b *testing.B) {
			var spent time.Duration
			for b.Loop() {
				start := time.Now()
				if err := c.UpdateSnapshot(NewSnapshot()); err != nil {
					b.Fatal(err)
				}
				spent += time.Since(start)
			}
			b.ReportMetric(float64(spent.Nanoseconds())/float64(b.N), "update-ns/op")
		})
		for _, changes := range []int{1, 100, 10000} {
			b.Run(fmt.Sprintf("nodes=%d/changes=%d", nodes, changes), func(b *testing.B) {
				s := NewSnapshot()
				if err := c.UpdateSnapshot(s); err != nil {
					b.Fatal(err)
				}
				round, next := 0, 0
				var spent time.Duration
				for b.Loop() {
					round++
					for range changes {
						n := next % nodes
						j := (next / nodes) % podsPerNode
						next++
						if err := c.UpdatePod(nil, pod(n, j, round)); err != nil {
							b.Fatal(err)
						}
					}
					start := time.Now()
					if err := c.UpdateSnapshot(s); err != nil {
						b.Fatal(err)
					}
					spent += time.Since(start)
				}
				b.ReportMetric(float64(spent.Nanoseconds())/float64(b.N), "update-ns/op")
			})
		}
	}
}
