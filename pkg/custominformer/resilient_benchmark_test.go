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

package custominformer

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"

	"github.com/batch-scheduler/batch-scheduler/pkg/apis/batchscheduler/v1alpha1"
)

// gatedSource lists nothing and then streams preloaded events once gate
// is closed.
type gatedSource struct {
	events chan watch.Event
	gate   chan struct{}
}

func newGatedSource(n int) *gatedSource {
	ch := make(chan watch.Event, n)
	for i := range n {
		w := workload("", fmt.Sprintf("w%d", i/2), "alice")
		w.ResourceVersion = fmt.Sprint(2 + i)
		typ := watch.Added
		if i%2 == 1 {
			typ = watch.Modified
		}
		ch <- watch.Event{Type: typ, Object: w}
	}
	return &gatedSource{events: ch, gate: make(chan struct{})}
}

func (s *gatedSource) List(metav1.ListOptions) (runtime.Object, error) {
	return &v1alpha1.ExternalWorkloadList{ListMeta: metav1.ListMeta{ResourceVersion: "1"}}, nil
}

func (s *gatedSource) Watch(metav1.ListOptions) (watch.Interface, error) {
	<-s.gate
	return watch.NewProxyWatcher(s.events), nil
}

// BenchmarkSourceOverhead measures ns per watch event through an informer
// over the checked source alone (client-go's reflector retrying) and
// through New, which adds resilientListWatch: one more goroutine hop and
// the record of what the reflector holds. Compare the two in one run.
func BenchmarkSourceOverhead(b *testing.B) {
	for _, tt := range []struct {
		name string
		make func(lw cache.ListerWatcher) cache.SharedIndexInformer
	}{
		{"checked-only", func(lw cache.ListerWatcher) cache.SharedIndexInformer {
			checked := newCheckedListWatch(lw, &v1alpha1.ExternalWorkload{}, "bench", unregisteredMetrics().forSource("bench"))
			return cache.NewSharedIndexInformer(checked, &v1alpha1.ExternalWorkload{}, 0, cache.Indexers{})
		}},
		{"New", func(lw cache.ListerWatcher) cache.SharedIndexInformer {
			return New(lw, &v1alpha1.ExternalWorkload{}, Options{Name: "bench"})
		}},
	} {
		b.Run(tt.name, func(b *testing.B) {
			src := newGatedSource(b.N)
			inf := tt.make(src)
			var seen atomic.Int64
			done := make(chan struct{})
			count := func() {
				if seen.Add(1) == int64(b.N) {
					close(done)
				}
			}
			if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
				AddFunc:    func(any) { count() },
				UpdateFunc: func(any, any) { count() },
			}); err != nil {
				b.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			go inf.RunWithContext(ctx)
			if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
				b.Fatal("informer did not sync")
			}
			b.ResetTimer()
			close(src.gate)
			<-done
		})
	}
}
