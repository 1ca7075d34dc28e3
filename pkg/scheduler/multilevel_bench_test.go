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

package scheduler

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
	"github.com/batch-scheduler/batch-scheduler/pkg/metrics/metricstest"
	"github.com/batch-scheduler/batch-scheduler/pkg/plugins/topologyaware"
	st "github.com/batch-scheduler/batch-scheduler/pkg/testing"
)

// BenchmarkMultiLevelGang measures the cycle of a gang of 64 pods of 1
// CPU on 128 nodes of 8 CPUs (4 blocks of 8 racks of 4 nodes), placed and
// bound, then deleted so that every cycle sees the same empty cluster:
//
//   - OneLevel, the baseline: one gang within one block;
//   - MultiLevel: the same pods as 16 sub-groups of 4 (quorum 4 each, all
//     16 asked for), each within one rack, the whole within one block;
//   - OneLevelNoTopology and MultiLevelNoTopology: both without any
//     topology, the cost of the sub-group bookkeeping alone.
//
// It reports cpu-ns/op beside the wall time (see BenchmarkCycleAtScale).
//
//	go test -run '^$' -bench BenchmarkMultiLevelGang -benchtime 200x -count 5 ./pkg/scheduler/
func BenchmarkMultiLevelGang(b *testing.B) {
	for _, v := range []struct {
		name          string
		subGroups     bool
		subGroupRack  bool
		wholeTopology bool
	}{
		{"OneLevel", false, false, true},
		{"MultiLevel", true, true, true},
		{"OneLevelNoTopology", false, false, false},
		{"MultiLevelNoTopology", true, false, false},
	} {
		b.Run(v.name, func(b *testing.B) {
			ann := map[string]string{}
			if v.wholeTopology {
				ann[framework.TopologyRequiredAnnotation] = topologyaware.BlockLabel
			}
			if v.subGroups {
				ann[framework.SubGroupMinAvailableAnnotation] = "4"
				ann[framework.MinSubGroupsAnnotation] = "16"
			}
			if v.subGroupRack {
				ann[framework.SubGroupTopologyRequiredAnnotation] = topologyaware.RackLabel
			}
			benchMultiLevel(b, v.subGroups, ann)
		})
	}
}

func benchMultiLevel(b *testing.B, subGroups bool, ann map[string]string) {
	const gangSize = 64
	s, c, client, m := newBenchScheduler(b)
	for blk := range 4 {
		for r := range 8 {
			for n := range 4 {
				name := fmt.Sprintf("b%d-r%d-n%d", blk, r, n)
				node := st.MakeNode().Name(name).Label(topologyaware.HostnameLabel, name).
					Label(topologyaware.BlockLabel, fmt.Sprintf("b%d", blk)).Label(topologyaware.RackLabel, fmt.Sprintf("b%d-r%d", blk, r)).
					Capacity(res{v1.ResourceCPU: "8", v1.ResourceMemory: "64Gi", v1.ResourcePods: "110"}).Obj()
				if err := c.AddOrUpdateNode(node); err != nil {
					b.Fatal(err)
				}
			}
		}
	}
	gang := func(iter int) []*v1.Pod {
		out := make([]*v1.Pod, gangSize)
		name := fmt.Sprintf("g%06d", iter)
		for i := range out {
			w := st.MakePod().Name(fmt.Sprintf("%s-%02d", name, i)).UID(fmt.Sprintf("%s-%02d", name, i)).Group(name).MinAvailable(fmt.Sprint(gangSize)).
				Req(res{v1.ResourceCPU: "1", v1.ResourceMemory: "1Gi"})
			for k, v := range ann {
				w = w.Annotation(k, v)
			}
			if subGroups {
				w = w.Annotation(framework.SubGroupAnnotation, fmt.Sprint(i/4))
			}
			out[i] = w.Obj()
		}
		return out
	}
	b.ReportAllocs()
	runtime.GC()
	var cpu time.Duration
	b.ResetTimer()
	for i := range b.N {
		b.StopTimer()
		pods := gang(i)
		for _, p := range pods {
			if err := client.Tracker().Add(p); err != nil {
				b.Fatal(err)
			}
		}
		cpu0 := processCPU(b)
		b.StartTimer()
		for _, p := range pods {
			if err := c.AddPendingPod(p); err != nil {
				b.Fatal(err)
			}
		}
		s.scheduleOne(b.Context())
		s.bindWG.Wait()
		b.StopTimer()
		cpu += processCPU(b) - cpu0
		if got := metricstest.CounterValue(b, m.PodsBound); int(got) != (i+1)*gangSize {
			b.Fatalf("%v pods bound after %d gangs of %d", got, i+1, gangSize)
		}
		for _, p := range pods {
			if _, err := c.DeletePod(p); err != nil {
				b.Fatal(err)
			}
			if err := client.Tracker().Delete(podsGVR, p.Namespace, p.Name); err != nil {
				b.Fatal(err)
			}
		}
		b.StartTimer()
	}
	b.StopTimer()
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/op")
}

// podsGVR is the resource of pods in the fake clientset's tracker.
var podsGVR = v1.SchemeGroupVersion.WithResource("pods")
