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

package debugger

import (
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/batch-scheduler/batch-scheduler/pkg/cache"
	"github.com/batch-scheduler/batch-scheduler/pkg/resources"
	st "github.com/batch-scheduler/batch-scheduler/pkg/testing"
)

// benchCluster is a cache holding nodes and pods, 1 in 30 pods pending
// in gangs of 10 and the rest bound, and a fake API server that lists the
// same objects from prebuilt lists (so that the fake's deep copies do not
// drown what is measured: the checker's copy and comparison).
func benchCluster(b *testing.B, nodes, pods int) *cache.SchedulerCache {
	b.Helper()
	client := fake.NewClientset()
	c, err := cache.New(cache.Options{Client: client})
	if err != nil {
		b.Fatal(err)
	}
	nodeList := &v1.NodeList{Items: make([]v1.Node, nodes)}
	for i := range nodes {
		n := st.MakeNode().Name(fmt.Sprintf("node-%05d", i)).Capacity(res{v1.ResourceCPU: "64", v1.ResourceMemory: "256Gi", v1.ResourcePods: "110"}).Obj()
		nodeList.Items[i] = *n
		if err := c.AddOrUpdateNode(&nodeList.Items[i]); err != nil {
			b.Fatal(err)
		}
	}
	podList := &v1.PodList{Items: make([]v1.Pod, pods)}
	for i := range pods {
		w := st.MakePod().Name(fmt.Sprintf("pod-%06d", i)).Req(res{v1.ResourceCPU: "100m", v1.ResourceMemory: "128Mi"})
		if i%30 == 0 {
			w = w.Group(fmt.Sprintf("gang-%05d", i/300)).MinAvailable("10")
		} else {
			w = w.Node(fmt.Sprintf("node-%05d", i%nodes)).Phase(v1.PodRunning)
		}
		podList.Items[i] = *w.Obj()
		p := &podList.Items[i]
		if p.Spec.NodeName != "" {
			err = c.AddPod(p)
		} else {
			err = c.AddPendingPod(p)
		}
		if err != nil {
			b.Fatal(err)
		}
	}
	client.PrependReactor("list", "nodes", func(k8stesting.Action) (bool, runtime.Object, error) { return true, nodeList, nil })
	client.PrependReactor("list", "pods", func(k8stesting.Action) (bool, runtime.Object, error) { return true, podList, nil })
	return c
}

// writerWait runs a writer of the cache (external usage set again and
// again, which takes the cache's lock for writing) until stop is closed,
// and returns the longest any one call waited.
func writerWait(c *cache.SchedulerCache, stop <-chan struct{}) func() time.Duration {
	var longest atomic.Int64
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		usage := resources.Resource{MilliCPU: 1}
		for {
			select {
			case <-stop:
				return
			default:
			}
			start := time.Now()
			_ = c.SetExternalUsage("bench/writer", "node-00000", usage)
			if d := int64(time.Since(start)); d > longest.Load() {
				longest.Store(d)
			}
			time.Sleep(100 * time.Microsecond)
		}
	}()
	return func() time.Duration { wg.Wait(); return time.Duration(longest.Load()) }
}

// BenchmarkVerify measures one run of the checker on a consistent cache
// and, as the baseline, one /debug/cache dump (DumpCache and its JSON) of
// the same cache: both read the whole cache through View. Both report the longest time a concurrent writer of the
// cache (what the event handlers and the scheduling loop are) waited for
// the lock; Verify also reports its own longest lock hold. With -short
// (hack/test-benchmarks.sh's smoke run) only the smaller cache.
//
//	go test -run '^$' -bench 'BenchmarkVerify/5000nodes' -benchtime 5x ./pkg/cache/debugger
func BenchmarkVerify(b *testing.B) {
	sizes := []struct{ nodes, pods int }{{500, 15000}, {5000, 150000}}
	if testing.Short() {
		sizes = sizes[:1]
	}
	for _, size := range sizes {
		b.Run(fmt.Sprintf("%dnodes-%dpods", size.nodes, size.pods), func(b *testing.B) {
			c := benchCluster(b, size.nodes, size.pods)
			b.Run("verify", func(b *testing.B) {
				stop := make(chan struct{})
				wait := writerWait(c, stop)
				var hold time.Duration
				for b.Loop() {
					res, err := Verify(b.Context(), c, VerifyOptions{Rechecks: -1})
					if err != nil {
						b.Fatal(err)
					}
					// The writer's own key is no ExternalWorkload, so the
					// cache stays consistent.
					if !res.Consistent || res.Counts.Pods != size.pods {
						b.Fatalf("checker found %d differences (first %+v), counted %d pods", len(res.Differences), res.Differences, res.Counts.Pods)
					}
					hold = max(hold, time.Duration(res.LongestLockHoldSeconds*float64(time.Second)))
				}
				close(stop)
				b.ReportMetric(float64(hold.Microseconds())/1000, "max-lock-hold-ms")
				b.ReportMetric(float64(wait().Microseconds())/1000, "max-writer-wait-ms")
			})
			b.Run("dump-baseline", func(b *testing.B) {
				stop := make(chan struct{})
				wait := writerWait(c, stop)
				for b.Loop() {
					if _, err := json.Marshal(c.Dump()); err != nil {
						b.Fatal(err)
					}
				}
				close(stop)
				b.ReportMetric(float64(wait().Microseconds())/1000, "max-writer-wait-ms")
			})
		})
	}
}
