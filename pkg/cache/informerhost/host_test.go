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

package informerhost

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes/fake"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
	st "github.com/batch-scheduler/batch-scheduler/pkg/testing"
)

// podRecorder records the names of the pods and nodes it is given.
type podRecorder struct {
	nopHandler
	mu    sync.Mutex
	pods  []string
	nodes []string
}

func (r *podRecorder) AddPod(obj any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.pods = append(r.pods, obj.(*v1.Pod).Name)
}

func (r *podRecorder) AddNode(obj any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.nodes = append(r.nodes, obj.(*v1.Node).Name)
}

func (r *podRecorder) seen() (pods, nodes []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Sorted(slices.Values(r.pods)), slices.Sorted(slices.Values(r.nodes))
}

// The host needs no cache: it runs the informers, applies the filters it
// is given (none: everything passes), and knows when they have synced.
func TestHostRunsWithTheFiltersItIsGiven(t *testing.T) {
	for _, tt := range []struct {
		name      string
		opts      func(*Options)
		wantPods  []string
		wantNodes []string
	}{
		{name: "no filters", opts: func(*Options) {}, wantPods: []string{"mine", "theirs"}, wantNodes: []string{"a", "b"}},
		{name: "the filters given", opts: func(o *Options) {
			o.PodFilter = func(obj any) bool { return obj.(*v1.Pod).Spec.SchedulerName == "batch-scheduler" }
			o.NodeFilter = func(next toolscache.ResourceEventHandler) toolscache.ResourceEventHandler {
				return toolscache.FilteringResourceEventHandler{Handler: next, FilterFunc: func(obj any) bool { return obj.(*v1.Node).Name == "a" }}
			}
		}, wantPods: []string{"mine"}, wantNodes: []string{"a"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			client := fake.NewClientset(
				st.MakePod().Name("mine").Scheduler("batch-scheduler").Obj(),
				st.MakePod().Name("theirs").Scheduler("default-scheduler").Obj(),
				st.MakeNode().Name("a").Obj(), st.MakeNode().Name("b").Obj())
			opts := Options{Client: client, Resources: []framework.EventResource{}}
			tt.opts(&opts)
			host, err := New(opts)
			if err != nil {
				t.Fatal(err)
			}
			if host.Running() {
				t.Fatal("running before Run")
			}
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			rec := &podRecorder{}
			if err := host.Run(ctx, rec); err != nil {
				t.Fatal(err)
			}
			if !host.Running() {
				t.Error("not running after Run")
			}
			if err := host.Run(ctx, rec); err == nil || !strings.Contains(err.Error(), "already running") {
				t.Errorf("second Run: %v, want already running", err)
			}
			syncCtx, stop := context.WithTimeout(ctx, 10*time.Second)
			defer stop()
			if err := host.WaitForHandlersSync(syncCtx); err != nil {
				t.Fatal(err)
			}
			if synced, unsynced := host.HandlersSynced(); !synced || len(unsynced) != 0 {
				t.Errorf("HandlersSynced = %v %v after the sync", synced, unsynced)
			}
			if got := host.Handlers(); !got.Running || !got.Synced || len(got.Registrations) != 2 {
				t.Errorf("Handlers = %+v, want the Pod and Node registrations, synced", got)
			}
			err = wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
				pods, nodes := rec.seen()
				return slices.Equal(pods, tt.wantPods) && slices.Equal(nodes, tt.wantNodes), nil
			})
			if pods, nodes := rec.seen(); err != nil {
				t.Errorf("handler saw pods %v and nodes %v, want %v and %v", pods, nodes, tt.wantPods, tt.wantNodes)
			}
			var added int64
			for _, e := range host.EventCounts() {
				if e.Event == EventAdd {
					added += e.Handled
				}
			}
			if want := int64(len(tt.wantPods) + len(tt.wantNodes)); added != want {
				t.Errorf("dispatchers counted %d adds, want %d", added, want)
			}
		})
	}
}

func TestHostOptionsAreChecked(t *testing.T) {
	for _, tt := range []struct {
		opts Options
		want string
	}{
		{Options{ResyncPeriod: -time.Second}, "negative resync period"},
		{Options{RediscoveryPeriod: -time.Second}, "negative rediscovery period"},
		{Options{Resources: []framework.EventResource{"nonsense"}}, `resource "nonsense"`},
	} {
		if _, err := New(tt.opts); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("New(%+v) = %v, want an error containing %q", tt.opts, err, tt.want)
		}
	}
	host, err := New(Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := host.Run(t.Context(), &podRecorder{}); err == nil || !strings.Contains(err.Error(), "Options.Client is nil") {
		t.Errorf("Run without a client: %v", err)
	}
	if err := host.WaitForHandlersSync(t.Context()); err == nil {
		t.Error("WaitForHandlersSync before Run succeeded")
	}
}
