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
	"syscall"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/events"
	k8smetrics "k8s.io/component-base/metrics"

	"github.com/batch-scheduler/batch-scheduler/pkg/cache"
	"github.com/batch-scheduler/batch-scheduler/pkg/cache/informerhost"
	frameworkruntime "github.com/batch-scheduler/batch-scheduler/pkg/framework/runtime"
	"github.com/batch-scheduler/batch-scheduler/pkg/metrics/metricstest"
	"github.com/batch-scheduler/batch-scheduler/pkg/plugins"
	"github.com/batch-scheduler/batch-scheduler/pkg/schedulingqueue"
	st "github.com/batch-scheduler/batch-scheduler/pkg/testing"
)

// BenchmarkCycleAtScale measures one scheduling cycle of a plain pod, with
// the default profile, in the cluster of the end-to-end scale benchmark
// (test/benchmark BenchmarkSchedulingAtScale): 5,000 nodes of 32 cpu,
// 128Gi and 250 pods, 150,000 pods already bound there (30 per node), and
// pending pods of 100m and 128Mi, placed one at a time. The 150,000 bound
// pods stay live on the heap, so the garbage collector's share is the one
// the scheduler pays at that size. smallCluster is the same at 500 nodes
// and 15,000 bound pods, the size of hack/bench-scheduling.sh.
//
// Besides the wall time, it reports cpu-ns/op: the CPU time of the whole
// process per pod (the loop, the parallel Filter and Score, the binds and
// the garbage collector), which the end-to-end throughput follows on a
// machine the scheduler shares with the API server, and which varies less
// than the wall time on a busy machine.
//
//	go test -run '^$' -bench BenchmarkCycleAtScale -benchtime 2000x -count 5 ./pkg/scheduler/
func BenchmarkCycleAtScale(b *testing.B) {
	for _, size := range []struct {
		name         string
		nodes, bound int
	}{
		{"5000Nodes", 5000, 150000},
		{"500Nodes", 500, 15000},
	} {
		b.Run(size.name, func(b *testing.B) { benchCycleAtScale(b, size.nodes, size.bound) })
	}
}

// newBenchScheduler returns a Scheduler with the default profile over a
// real cache fed by hand (no informer runs) and a fake clientset, for the
// benchmarks that drive cycles with scheduleOne.
func newBenchScheduler(b *testing.B) (*Scheduler, *cache.SchedulerCache, *fake.Clientset, *Metrics) {
	return newBenchSchedulerWith(b, plugins.NewInTreeRegistry())
}

// newBenchSchedulerWith is newBenchScheduler with the plugins of
// registry; the profile's framework is s.opts.Profiles[testSchedulerName].
func newBenchSchedulerWith(b *testing.B, registry *frameworkruntime.Registry) (*Scheduler, *cache.SchedulerCache, *fake.Clientset, *Metrics) {
	client := fake.NewClientset()
	factory := informerhost.NewInformerFactory(client, 0)
	c, err := cache.New(cache.Options{Client: client, InformerFactory: factory, Queue: schedulingqueue.Options{InitialBackoff: time.Nanosecond, MaxBackoff: time.Nanosecond}})
	if err != nil {
		b.Fatal(err)
	}
	h := &testHandle{client: client, recorder: events.NewFakeRecorder(1 << 20), informers: factory}
	fwk, err := frameworkruntime.NewFramework(b.Context(), registry, plugins.DefaultProfile(testSchedulerName), h)
	if err != nil {
		b.Fatal(err)
	}
	m, err := NewMetrics(k8smetrics.NewKubeRegistry())
	if err != nil {
		b.Fatal(err)
	}
	s, err := New(Options{Cache: c, Queue: c.Queue(), Client: client, Recorder: events.NewFakeRecorder(1 << 20), Metrics: m,
		Profiles: map[string]*frameworkruntime.Framework{testSchedulerName: fwk}})
	if err != nil {
		b.Fatal(err)
	}
	return s, c, client, m
}

func benchCycleAtScale(b *testing.B, nodes, bound int) {
	s, c, client, m := newBenchScheduler(b)
	names := make([]string, nodes)
	for i := range names {
		names[i] = fmt.Sprintf("node-%05d", i)
		node := st.MakeNode().Name(names[i]).Label(v1.LabelHostname, names[i]).
			Capacity(res{v1.ResourceCPU: "32", v1.ResourceMemory: "128Gi", v1.ResourcePods: "250"}).Obj()
		if err := c.AddOrUpdateNode(node); err != nil {
			b.Fatal(err)
		}
	}
	for i := range bound {
		pod := st.MakePod().Namespace("bound").Name(fmt.Sprintf("bound-%06d", i)).Scheduler("other-scheduler").
			Req(res{v1.ResourceCPU: "100m", v1.ResourceMemory: "128Mi"}).Node(names[i%nodes]).Obj()
		if err := c.AddPod(pod); err != nil {
			b.Fatal(err)
		}
	}
	pods := make([]*v1.Pod, b.N)
	for i := range pods {
		pods[i] = st.MakePod().Name(fmt.Sprintf("p%06d", i)).Req(res{v1.ResourceCPU: "100m", v1.ResourceMemory: "128Mi"}).Obj()
		if err := client.Tracker().Add(pods[i]); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	runtime.GC()
	cpu0 := processCPU(b)
	b.ResetTimer()
	for i := range b.N {
		if err := c.AddPendingPod(pods[i]); err != nil {
			b.Fatal(err)
		}
		s.scheduleOne(b.Context())
	}
	s.bindWG.Wait()
	b.StopTimer()
	b.ReportMetric(float64((processCPU(b)-cpu0).Nanoseconds())/float64(b.N), "cpu-ns/op")
	if got := metricstest.CounterValue(b, m.PodsBound); int(got) != b.N {
		b.Fatalf("%v of %d pods bound", got, b.N)
	}
}

// processCPU returns the CPU time, user and system, the process has used.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatalf("getrusage: %v", err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
