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
	"fmt"
	"math/rand/v2"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"

	"k8s.io/client-go/tools/cache"

	"github.com/batch-scheduler/batch-scheduler/pkg/apis/batchscheduler/v1alpha1"
	"github.com/batch-scheduler/batch-scheduler/pkg/metrics/metricstest"
	"github.com/batch-scheduler/batch-scheduler/pkg/resourcemanager"
)

// eventLog checks, per object, that events arrive in resourceVersion order
// with none repeated, and keeps the handler's view of the objects.
type eventLog struct {
	t *testing.T
	// mu guards the fields below; handlers run on the informer's
	// goroutine, the test reads from its own.
	mu      sync.Mutex
	last    map[string]int64 // name -> last resourceVersion seen
	objects map[string]string
	// redelivered counts updates whose resourceVersion did not change,
	// which an informer sends for every object after a relist.
	redelivered, events int
}

func rvOf(t *testing.T, w *v1alpha1.ExternalWorkload) int64 {
	rv, err := strconv.ParseInt(w.ResourceVersion, 10, 64)
	if err != nil {
		t.Errorf("object %s has resourceVersion %q: %v", w.Name, w.ResourceVersion, err)
	}
	return rv
}

func (l *eventLog) see(kind string, obj any) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	w := obj.(*v1alpha1.ExternalWorkload)
	rv := rvOf(l.t, w)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.events++
	last, known := l.last[w.Name]
	switch {
	case kind == "add" && known:
		l.t.Errorf("add of %s at %d, but it exists (last at %d)", w.Name, rv, last)
	case kind != "add" && !known:
		l.t.Errorf("%s of %s at %d, which was never added", kind, w.Name, rv)
	case kind == "update" && rv == last:
		l.redelivered++
	case known && rv < last:
		l.t.Errorf("%s of %s at %d after %d: out of order", kind, w.Name, rv, last)
	case known && kind != "delete" && rv == last:
		l.t.Errorf("%s of %s at %d delivered twice", kind, w.Name, rv)
	}
	if kind == "delete" {
		delete(l.last, w.Name)
		delete(l.objects, w.Name)
		return
	}
	l.last[w.Name] = rv
	l.objects[w.Name] = w.Spec.Owner
}

func (l *eventLog) snapshot() map[string]string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make(map[string]string, len(l.objects))
	for k, v := range l.objects {
		out[k] = v
	}
	return out
}

// TestHTTPSourceChurnWithBrokenConnections makes random changes at a
// manager while its connections are cut now and then. Changes reach the
// handler in order and none twice, and the end state is the manager's.
//
// When the manager keeps enough history for the informer to resume every
// cut watch, every change arrives. That case cuts a watch only once it has
// delivered every change so far, then makes the next changes while the
// informer reconnects, so the resumed watch replays them: a cut of a watch
// that has delivered nothing within a second would make the reflector list
// instead, by design. With a small history and watcher buffer, cuts come
// in the middle of the flow, the informer lists again and may see only the
// latest version of an object, as with an apiserver.
func TestHTTPSourceChurnWithBrokenConnections(t *testing.T) {
	for _, tt := range []struct {
		name            string
		history, buffer int
		wantEveryChange bool
		wantRelists     bool
	}{
		{name: "history covers every cut", history: 5000, buffer: 5000, wantEveryChange: true},
		{name: "small history", history: 20, buffer: 10, wantRelists: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			testChurn(t, tt.history, tt.buffer, tt.wantEveryChange, tt.wantRelists)
		})
	}
}

func testChurn(t *testing.T, history, buffer int, wantEveryChange, wantRelists bool) {
	store, err := resourcemanager.New(resourcemanager.Options{
		GroupVersionKind: v1alpha1.SchemeGroupVersion.WithKind("ExternalWorkload"),
		Resource:         v1alpha1.ExternalWorkloadsResource, Example: &v1alpha1.ExternalWorkload{},
		BookmarkInterval: -1, HistorySize: history, WatcherBuffer: buffer,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(store.Close)
	srv := httptest.NewServer(store.Handler())
	t.Cleanup(srv.Close)
	m, err := NewMetrics(nil)
	if err != nil {
		t.Fatal(err)
	}
	b := buildWithMetrics(t, "url: "+srv.URL+"\n", m)
	log := &eventLog{t: t, last: map[string]int64{}, objects: map[string]string{}}
	if _, err := b.Informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { log.see("add", o) },
		UpdateFunc: func(_, o any) { log.see("update", o) },
		DeleteFunc: func(o any) { log.see("delete", o) },
	}); err != nil {
		t.Fatal(err)
	}
	run(t, b)
	waitFor(t, "sync", b.Informer.HasSynced)
	sameAs := func(want map[string]string) func() bool {
		return func() bool {
			got := log.snapshot()
			if len(got) != len(want) {
				return false
			}
			for k, v := range want {
				if got[k] != v {
					return false
				}
			}
			return true
		}
	}

	rng := rand.New(rand.NewPCG(7, 11))
	want := map[string]string{}
	const changes = 2000
	for i := 0; i < changes; i++ {
		name := fmt.Sprintf("w%d", rng.IntN(50))
		owner := fmt.Sprintf("o%d", i)
		var err error
		switch _, exists := want[name]; {
		case !exists:
			err = store.Create(workload("", name, owner))
			want[name] = owner
		case rng.IntN(3) == 0:
			err = store.Delete("", name)
			delete(want, name)
		default:
			err = store.Update(workload("", name, owner))
			want[name] = owner
		}
		if err != nil {
			t.Fatal(err)
		}
		if i%250 == 125 {
			if wantEveryChange {
				waitFor(t, "every change so far", sameAs(want))
			}
			srv.CloseClientConnections()
		}
	}
	waitFor(t, "the handler to see the manager's state", sameAs(want))
	log.mu.Lock()
	defer log.mu.Unlock()
	relists := metricstest.CounterValue(t, m.Relists.WithLabelValues("workloads"))
	t.Logf("%d changes, %d events, %d re-deliveries, %v relists, %d slow watchers closed",
		changes, log.events, log.redelivered, relists, store.SlowWatchersClosed())
	if log.events-log.redelivered > changes {
		t.Errorf("%d events for %d changes: some were delivered twice", log.events-log.redelivered, changes)
	}
	if wantEveryChange && (log.events != changes || relists != 0) {
		t.Errorf("%d events and %v relists for %d changes, want every change and no relist", log.events, relists, changes)
	}
	if wantRelists && relists == 0 {
		t.Error("no relist: the case does not test what it says")
	}
}
