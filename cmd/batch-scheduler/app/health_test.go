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

package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	toolscache "k8s.io/client-go/tools/cache"
	fcache "k8s.io/client-go/tools/cache/testing"
	"k8s.io/client-go/tools/leaderelection"

	"github.com/batch-scheduler/batch-scheduler/pkg/cache"
	"github.com/batch-scheduler/batch-scheduler/pkg/custominformer"
	"github.com/batch-scheduler/batch-scheduler/pkg/eventhandlers"
	defaulthandler "github.com/batch-scheduler/batch-scheduler/pkg/eventhandlers/default"
	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
)

func TestHealthEndpoints(t *testing.T) {
	synced := func() (bool, []string) { return true, nil }
	pending := func() (bool, []string) { return false, []string{"Pod", "custom/vms"} }
	notStarted := func() (bool, []string) { return false, nil }
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()

	type want struct {
		code     int
		contains []string
		absent   []string
	}
	tests := []struct {
		name     string
		ctx      context.Context
		synced   func() (bool, []string)
		watchdog bool
		path     string
		want     want
	}{
		{name: "ready", ctx: t.Context(), synced: synced, path: "/readyz", want: want{code: 200, contains: []string{"ok"}, absent: []string{"[+]"}}},
		{name: "ready, verbose", ctx: t.Context(), synced: synced, path: "/readyz?verbose", want: want{code: 200,
			contains: []string{"[+]shutdown ok\n", "[+]handler-sync ok\n", "readyz check passed\n"}}},
		{name: "syncing", ctx: t.Context(), synced: pending, path: "/readyz", want: want{code: 503,
			contains: []string{"[+]shutdown ok\n", "[-]handler-sync failed: waiting for Pod, custom/vms\n", "readyz check failed\n"}}},
		{name: "cache not started", ctx: t.Context(), synced: notStarted, path: "/readyz", want: want{code: 503,
			contains: []string{"[-]handler-sync failed: the scheduler cache has not started"}}},
		{name: "shutting down", ctx: cancelled, synced: synced, path: "/readyz", want: want{code: 503,
			contains: []string{"[-]shutdown failed: process is shutting down\n", "[+]handler-sync ok\n"}}},
		{name: "live while syncing", ctx: t.Context(), synced: pending, path: "/livez", want: want{code: 200, contains: []string{"ok"}}},
		{name: "healthy while shutting down", ctx: cancelled, synced: pending, path: "/healthz?verbose", want: want{code: 200,
			contains: []string{"[+]ping ok\n", "healthz check passed\n"}}},
		{name: "leader watchdog on /livez", ctx: t.Context(), synced: synced, watchdog: true, path: "/livez?verbose", want: want{code: 200,
			contains: []string{"[+]leaderElection ok\n"}, absent: []string{"ping"}}},
		{name: "leader watchdog on /healthz", ctx: t.Context(), synced: synced, watchdog: true, path: "/healthz?verbose", want: want{code: 200,
			contains: []string{"[+]leaderElection ok\n"}}},
		{name: "leader watchdog on /readyz", ctx: t.Context(), synced: synced, watchdog: true, path: "/readyz?verbose", want: want{code: 200,
			contains: []string{"[+]leaderElection ok\n", "[+]handler-sync ok\n"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var wd *leaderelection.HealthzAdaptor
			if tt.watchdog {
				wd = leaderelection.NewLeaderHealthzAdaptor(time.Second)
			}
			mux, err := endpointsMux(newHealthChecks(tt.ctx, tt.synced, wd), http.NotFoundHandler(), nil)
			if err != nil {
				t.Fatal(err)
			}
			rec := httptest.NewRecorder()
			mux.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, tt.path, nil))
			body, _ := io.ReadAll(rec.Body)
			if rec.Code != tt.want.code {
				t.Errorf("%s = %d %q, want %d", tt.path, rec.Code, body, tt.want.code)
			}
			for _, w := range tt.want.contains {
				if !strings.Contains(string(body), w) {
					t.Errorf("%s = %q, want it to contain %q", tt.path, body, w)
				}
			}
			for _, w := range tt.want.absent {
				if strings.Contains(string(body), w) {
					t.Errorf("%s = %q, want no %q", tt.path, body, w)
				}
			}
		})
	}
}

func TestDebugEndpointsMustBeUnderDebug(t *testing.T) {
	_, err := endpointsMux(newHealthChecks(t.Context(), func() (bool, []string) { return true, nil }, nil), http.NotFoundHandler(),
		map[string]http.Handler{"/cache": http.NotFoundHandler()})
	if err == nil || !strings.Contains(err.Error(), `"/cache"`) {
		t.Fatalf("err = %v, want one naming /cache", err)
	}
}

// slowPods is an event handler that takes delay over every pod event.
type slowPods struct {
	eventhandlers.Interface
	delay time.Duration
}

func (h slowPods) AddPod(any) { time.Sleep(h.delay) }

// TestReadyzEventBacklog runs a cache whose handler takes 100ms per pod
// event: /readyz fails while the oldest pending event is older than the
// maximum delay, naming the informer and the delay, and passes again once
// the handler has caught up.
func TestReadyzEventBacklog(t *testing.T) {
	c, err := cache.New(cache.Options{Client: fake.NewClientset(), Resources: []framework.EventResource{}})
	if err != nil {
		t.Fatal(err)
	}
	source := fcache.NewFakeControllerSource()
	inf := custominformer.New(noWatchList{source}, &v1.Pod{}, custominformer.Options{Name: "slow"})
	if err := c.AddCustomInformer(cache.CustomInformer{Name: "slow", Resource: framework.Pod, Informer: inf}); err != nil {
		t.Fatal(err)
	}
	base, err := defaulthandler.New(t.Context(), c, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Run(t.Context(), slowPods{Interface: base, delay: 100 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitForHandlersSync(t.Context()); err != nil {
		t.Fatal(err)
	}
	checks := newHealthChecks(t.Context(), c.HandlersSynced, nil)
	checks.ready = append(checks.ready, eventBacklogCheck(c.EventBacklog, 300*time.Millisecond))
	mux, err := endpointsMux(checks, http.NotFoundHandler(), nil)
	if err != nil {
		t.Fatal(err)
	}
	readyz := func() (int, string) {
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/readyz?verbose", nil))
		return rec.Code, rec.Body.String()
	}
	if code, body := readyz(); code != http.StatusOK || !strings.Contains(body, "[+]event-backlog ok") {
		t.Fatalf("/readyz before the events = %d %q, want 200 with event-backlog ok", code, body)
	}
	for i := range 20 {
		source.Add(&v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: fmt.Sprintf("p-%d", i), UID: types.UID(fmt.Sprint(i))},
			Spec: v1.PodSpec{NodeName: "n"}})
	}
	poll := func(what string, cond func(code int, body string) bool) {
		t.Helper()
		var code int
		var body string
		err := wait.PollUntilContextTimeout(t.Context(), 10*time.Millisecond, wait.ForeverTestTimeout, true, func(context.Context) (bool, error) {
			code, body = readyz()
			return cond(code, body), nil
		})
		if err != nil {
			t.Fatalf("waiting for %s: last /readyz %d %q", what, code, body)
		}
	}
	poll("/readyz to fail on the backlog", func(code int, body string) bool {
		return code == http.StatusServiceUnavailable &&
			strings.Contains(body, "[-]event-backlog failed: informer custom/slow: oldest pending event waited ") &&
			strings.Contains(body, "(--max-event-delay 300ms)")
	})
	poll("/readyz to pass once the handler caught up", func(code int, body string) bool {
		return code == http.StatusOK && strings.Contains(body, "[+]event-backlog ok")
	})
	if b := c.EventBacklog(); len(b) == 0 {
		t.Error("no backlog reported")
	} else {
		for _, ib := range b {
			if ib.Pending != 0 {
				t.Errorf("backlog after draining: %+v", ib)
			}
		}
	}
}

func TestEventBacklogCheck(t *testing.T) {
	backlog := func() []cache.InformerBacklog {
		return []cache.InformerBacklog{
			{Informer: "Node", Pending: 0},
			{Informer: "Pod", Pending: 7, OldestPending: 42 * time.Second},
			{Informer: "custom/vms", Pending: 1, OldestPending: 5 * time.Second},
		}
	}
	tests := []struct {
		name     string
		maxDelay time.Duration
		wantErr  string
	}{
		{name: "disabled", maxDelay: 0},
		{name: "within", maxDelay: time.Minute},
		{name: "one late", maxDelay: 30 * time.Second, wantErr: "informer Pod: oldest pending event waited 42s (--max-event-delay 30s), 7 pending"},
		{name: "two late", maxDelay: time.Second, wantErr: "informer Pod: oldest pending event waited 42s (--max-event-delay 1s), 7 pending; informer custom/vms: oldest pending event waited 5s (--max-event-delay 1s), 1 pending"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := eventBacklogCheck(backlog, tt.maxDelay).Check(nil)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Errorf("check = %v, want it to pass", err)
			case tt.wantErr != "" && (err == nil || err.Error() != tt.wantErr):
				t.Errorf("check = %v, want %q", err, tt.wantErr)
			}
		})
	}
}

// noWatchList makes a FakeControllerSource usable by a reflector that
// would otherwise try the watch-list protocol it does not speak.
type noWatchList struct {
	*fcache.FakeControllerSource
}

func (noWatchList) IsWatchListSemanticsUnSupported() bool { return true }

// The informer-sync check names an informer of the factory that cannot
// list (here: namespaces, refused as a missing RBAC rule would), and
// passes once every started informer has synced.
func TestInformerSyncCheck(t *testing.T) {
	client := fake.NewClientset()
	refuse := atomic.Bool{}
	refuse.Store(true)
	client.PrependReactor("list", "namespaces", func(k8stesting.Action) (bool, runtime.Object, error) {
		if refuse.Load() {
			return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "namespaces"}, "", errors.New("no RBAC rule"))
		}
		return false, nil, nil
	})
	factory := informers.NewSharedInformerFactory(client, 0)
	factory.Core().V1().Nodes().Informer()
	factory.Core().V1().Namespaces().Informer()
	factory.Start(t.Context().Done())
	t.Cleanup(factory.Shutdown)
	check := informerSyncCheck(factory)

	// Nodes sync at once; namespaces never while refused.
	if !toolscache.WaitForCacheSync(t.Context().Done(), factory.Core().V1().Nodes().Informer().HasSynced) {
		t.Fatal("the node informer did not sync")
	}
	err := check.Check(nil)
	if err == nil || !strings.Contains(err.Error(), "*v1.Namespace") || strings.Contains(err.Error(), "*v1.Node,") {
		t.Fatalf("check with namespaces refused = %v, want an error naming *v1.Namespace only", err)
	}
	refuse.Store(false)
	if werr := wait.PollUntilContextTimeout(t.Context(), 50*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		err = check.Check(nil)
		return err == nil, nil
	}); werr != nil {
		t.Errorf("check once namespaces list = %v", err)
	}
	if err := informerSyncCheck(nil).Check(nil); err != nil {
		t.Errorf("check without a factory = %v", err)
	}
}
