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
	"context"
	"fmt"
	"io"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/batch-scheduler/batch-scheduler/pkg/cache"
	"github.com/batch-scheduler/batch-scheduler/pkg/custominformer"
	defaulthandler "github.com/batch-scheduler/batch-scheduler/pkg/eventhandlers/default"
	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
	st "github.com/batch-scheduler/batch-scheduler/pkg/testing"
)

// preloadedSource is a ListerWatcher whose list is empty and whose one watch
// replays a fixed, pre-built slice of events as fast as they are read, so a
// benchmark measures the informer and what hangs off it, not a source.
type preloadedSource struct {
	events chan watch.Event
	// gate holds the watch back until the benchmark's timer runs.
	gate chan struct{}
}

func newPreloadedSource(n, nodes int) *preloadedSource {
	return &preloadedSource{events: podEvents(n, nodes), gate: make(chan struct{})}
}

func (s *preloadedSource) List(metav1.ListOptions) (runtime.Object, error) {
	return &v1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: "1"}}, nil
}

func (s *preloadedSource) Watch(metav1.ListOptions) (watch.Interface, error) {
	<-s.gate
	return watch.NewProxyWatcher(s.events), nil
}

// podsPerNode is the density of the benchmark cluster: 150,000 pods on
// 5,000 nodes, the scale the cache is designed for.
const podsPerNode = 30

func nodesFor(events int) int { return max(1, events/2/podsPerNode) }

// podEvents builds n events: each pod is added, then updated (Running, a new
// resourceVersion), spread over nodes.
func podEvents(n, nodes int) chan watch.Event {
	ch := make(chan watch.Event, n)
	for i := 0; i < n; i++ {
		name := fmt.Sprintf("p-%d", i/2)
		p := st.MakePod().Namespace("bench").Name(name).Node(fmt.Sprintf("n-%d", (i/2)%nodes)).
			Req(map[v1.ResourceName]string{v1.ResourceCPU: "100m", v1.ResourceMemory: "128Mi"})
		if i%2 == 0 {
			ch <- watch.Event{Type: watch.Added, Object: p.RV(fmt.Sprint(2 + i)).Obj()}
		} else {
			ch <- watch.Event{Type: watch.Modified, Object: p.RV(fmt.Sprint(2 + i)).Phase(v1.PodRunning).Obj()}
		}
	}
	return ch
}

// cpuClock measures the CPU time the process uses.
type cpuClock struct{ start time.Duration }

func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func startCPU() cpuClock { return cpuClock{start: processCPU()} }

// report adds the CPU time since start per iteration as cpu-ns/op.
func (c cpuClock) report(b *testing.B) {
	b.ReportMetric(float64(processCPU()-c.start)/float64(b.N), "cpu-ns/op")
}

// countingHandler is the default handler plus a counter of pod events, the
// same counter the baseline's no-op handler keeps.
type countingHandler struct {
	*defaulthandler.Handler
	seen *atomic.Int64
	done chan struct{}
	want int64
}

func (h *countingHandler) count() {
	if h.seen.Add(1) == h.want {
		close(h.done)
	}
}
func (h *countingHandler) AddPod(obj any)         { h.Handler.AddPod(obj); h.count() }
func (h *countingHandler) UpdatePod(old, new any) { h.Handler.UpdatePod(old, new); h.count() }

// BenchmarkDispatch measures ns per pod event from a watch through the
// informer to the handler. The baseline is a bare informer with a no-op
// handler; the other case adds the cache's dispatch (panic recovery,
// metrics, filters, the backlog tracking), the default handler and the
// cache update. Compare the two ns/op figures of one run: the goal is at
// most 1.2x. cpu-ns/op is the process's CPU time (user and system) per
// event, less disturbed than wall time when others share the machine.
func BenchmarkDispatch(b *testing.B) {
	klog.SetOutput(io.Discard)
	klog.LogToStderr(false)
	b.Run("baseline=bare-informer+noop-handler", func(b *testing.B) {
		src := newPreloadedSource(b.N, nodesFor(b.N))
		var seen atomic.Int64
		done := make(chan struct{})
		count := func() {
			if seen.Add(1) == int64(b.N) {
				close(done)
			}
		}
		inf := custominformer.New(src, &v1.Pod{}, custominformer.Options{Name: "bench"})
		if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
			AddFunc:    func(any) { count() },
			UpdateFunc: func(any, any) { count() },
		}); err != nil {
			b.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		go inf.RunWithContext(ctx)
		if !toolscache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
			b.Fatal("informer did not sync")
		}
		b.ResetTimer()
		cpu := startCPU()
		close(src.gate)
		<-done
		cpu.report(b)
	})
	b.Run("informer+dispatch+default-handler+cache", func(b *testing.B) {
		nodes := nodesFor(b.N)
		src := newPreloadedSource(b.N, nodes)
		c, err := cache.New(cache.Options{Client: fake.NewClientset()})
		if err != nil {
			b.Fatal(err)
		}
		for i := 0; i < nodes; i++ {
			n := st.MakeNode().Name(fmt.Sprintf("n-%d", i)).Capacity(map[v1.ResourceName]string{"cpu": "64", "memory": "256Gi", "pods": "100000"}).Obj()
			if err := c.AddOrUpdateNode(n); err != nil {
				b.Fatal(err)
			}
		}
		base, err := defaulthandler.New(context.Background(), c, nil, nil)
		if err != nil {
			b.Fatal(err)
		}
		h := &countingHandler{Handler: base, seen: &atomic.Int64{}, done: make(chan struct{}), want: int64(b.N)}
		inf := custominformer.New(src, &v1.Pod{}, custominformer.Options{Name: "bench"})
		if err := c.AddCustomInformer(cache.CustomInformer{Name: "bench", Resource: framework.Pod, Informer: inf}); err != nil {
			b.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		if err := c.Run(ctx, h); err != nil {
			b.Fatal(err)
		}
		if err := c.WaitForHandlersSync(ctx); err != nil {
			b.Fatal(err)
		}
		b.ResetTimer()
		cpu := startCPU()
		close(src.gate)
		<-h.done
		cpu.report(b)
	})
}
