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
	"net"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/batch-scheduler/batch-scheduler/pkg/apis/batchscheduler/v1alpha1"
	"github.com/batch-scheduler/batch-scheduler/pkg/metrics/metricstest"
	"github.com/batch-scheduler/batch-scheduler/pkg/resourcemanager"
)

// recoveryBound is how soon after a manager answers again the informer
// must agree with it (issue 12, docs/external-resource-managers.md).
const recoveryBound = 5 * time.Second

// restartingManager is a pkg/resourcemanager Store served on a fixed
// 127.0.0.1 port, which can be killed and restarted with new state.
type restartingManager struct {
	t     *testing.T
	addr  string
	srv   *http.Server
	store *resourcemanager.Store
}

func newStore(t *testing.T, initialRV int64) *resourcemanager.Store {
	t.Helper()
	s, err := resourcemanager.New(resourcemanager.Options{
		GroupVersionKind: v1alpha1.SchemeGroupVersion.WithKind("ExternalWorkload"),
		Resource:         v1alpha1.ExternalWorkloadsResource, Example: &v1alpha1.ExternalWorkload{},
		BookmarkInterval: -1, InitialResourceVersion: initialRV,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

// start serves store on m.addr (a new port the first time).
func (m *restartingManager) start(store *resourcemanager.Store) {
	m.t.Helper()
	addr := m.addr
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	var ln net.Listener
	// The old server's port may linger for a moment after Close.
	err := wait.PollUntilContextTimeout(context.Background(), 10*time.Millisecond, 5*time.Second, true, func(context.Context) (bool, error) {
		var err error
		ln, err = net.Listen("tcp", addr)
		return err == nil, nil
	})
	if err != nil {
		m.t.Fatalf("listening on %s: %v", addr, err)
	}
	m.addr = ln.Addr().String()
	m.store = store
	m.srv = &http.Server{Handler: store.Handler()}
	srv := m.srv
	go func() { _ = srv.Serve(ln) }()
	m.t.Cleanup(func() { _ = srv.Close() })
}

// kill stops the server, breaking every connection.
func (m *restartingManager) kill() { _ = m.srv.Close() }

// agrees reports whether the informer's store holds exactly the
// manager's objects, at their resourceVersions and with their owners.
func agrees(b Built, store *resourcemanager.Store) bool {
	want, _ := store.List("")
	got := b.Informer.GetStore().List()
	if len(got) != len(want) {
		return false
	}
	have := map[string]*v1alpha1.ExternalWorkload{}
	for _, o := range got {
		w := o.(*v1alpha1.ExternalWorkload)
		have[w.Name] = w
	}
	for _, o := range want {
		w := o.(*v1alpha1.ExternalWorkload)
		h := have[w.Name]
		if h == nil || h.ResourceVersion != w.ResourceVersion || h.Spec.Owner != w.Spec.Owner {
			return false
		}
	}
	return true
}

// timeToAgree polls until the informer agrees with store and returns how
// long that took, failing the test after limit.
func timeToAgree(t *testing.T, b Built, store *resourcemanager.Store, limit time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	err := wait.PollUntilContextTimeout(context.Background(), 5*time.Millisecond, limit, true,
		func(context.Context) (bool, error) { return agrees(b, store), nil })
	d := time.Since(start)
	if err != nil {
		t.Fatalf("the informer did not agree with the manager within %v", limit)
	}
	return d
}

// summary formats durations as min/median/max.
func summary(ds []time.Duration) string {
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	r := func(d time.Duration) string { return d.Round(10 * time.Millisecond).String() }
	return fmt.Sprintf("min %s, median %s, max %s over %d", r(s[0]), r(s[len(s)/2]), r(s[len(s)-1]), len(s))
}

// startInformer runs b's informer until the end of the test.
func startInformer(t *testing.T, b Built) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); b.Informer.RunWithContext(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
}

// TestHTTPSourceRecoversFromRestartsWithinBound kills a real manager
// mid-watch and restarts it on the same port with changed state, several
// times in a row (client-go's reflector backoff grew with each repeat),
// with resourceVersions above the old ones and below them. Each time the
// informer must hold exactly the manager's state within recoveryBound of
// the manager answering again. The outages vary from 0.1 s to 3 s.
func TestHTTPSourceRecoversFromRestartsWithinBound(t *testing.T) {
	if testing.Short() {
		t.Skip("restarts a manager 12 times")
	}
	downTimes := []time.Duration{100 * time.Millisecond, time.Second, 3 * time.Second, 100 * time.Millisecond, time.Second, 3 * time.Second}
	for _, tt := range []struct {
		name string
		// initialRV of the manager's store in round i (0 is the first start).
		initialRV func(i int) int64
	}{
		{name: "versions above the old ones", initialRV: func(i int) int64 { return int64(1000 * (i + 1)) }},
		{name: "versions below the old ones", initialRV: func(i int) int64 { return int64(100000 - 1000*i) }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			mgr := &restartingManager{t: t}
			store := newStore(t, tt.initialRV(0))
			for i := range 4 {
				if err := store.Create(workload("", fmt.Sprintf("w%d", i), "r0")); err != nil {
					t.Fatal(err)
				}
			}
			mgr.start(store)
			m, err := NewMetrics(nil)
			if err != nil {
				t.Fatal(err)
			}
			b := buildWithMetrics(t, "url: http://"+mgr.addr+"\n", m)
			startInformer(t, b)
			waitFor(t, "sync", b.Informer.HasSynced)

			var recoveries, live []time.Duration
			for round, down := range downTimes {
				i := round + 1
				// A change while watching: the watch is live.
				waitFor(t, "a watcher", func() bool { return mgr.store.Watchers() > 0 })
				objs, _ := mgr.store.List("")
				name := objs[len(objs)-1].(*v1alpha1.ExternalWorkload).Name
				if err := mgr.store.Update(workload("", name, fmt.Sprintf("live-%d", i))); err != nil {
					t.Fatal(err)
				}
				live = append(live, timeToAgree(t, b, mgr.store, recoveryBound))

				mgr.kill()
				// The outage. (A sleep, not a poll: nothing to wait for.)
				time.Sleep(down)
				// The restarted manager lost w<i> and the live change, has
				// new owners for the rest, and a new w<i+3>.
				next := newStore(t, tt.initialRV(i))
				old, _ := mgr.store.List("")
				for _, o := range old {
					name := o.(*v1alpha1.ExternalWorkload).Name
					if name == fmt.Sprintf("w%d", i-1) {
						continue
					}
					if err := next.Create(workload("", name, fmt.Sprintf("r%d", i))); err != nil {
						t.Fatal(err)
					}
				}
				if err := next.Create(workload("", fmt.Sprintf("w%d", i+3), fmt.Sprintf("r%d", i))); err != nil {
					t.Fatal(err)
				}
				mgr.start(next)
				d := timeToAgree(t, b, next, 2*time.Minute)
				t.Logf("round %d: down %v, agreed %v after the manager answered again", i, down, d.Round(time.Millisecond))
				recoveries = append(recoveries, d)
			}
			t.Logf("recovery after a restart (%s): %s", tt.name, summary(recoveries))
			t.Logf("live change while watching: %s", summary(live))
			for i, d := range recoveries {
				if d > recoveryBound {
					t.Errorf("round %d: the informer agreed with the restarted manager after %v, more than %v", i+1, d, recoveryBound)
				}
			}
			if got := metricstest.CounterValue(t, m.Relists.WithLabelValues("workloads")); got < float64(len(downTimes)) {
				t.Errorf("relists = %v, want at least one per restart (%d)", got, len(downTimes))
			}
		})
	}
}

// TestHTTPSourceShortWatchesCauseNoPauses: a manager (or a proxy in front
// of it) that ends every watch 200 ms after it started, cleanly. Each
// change must still reach the informer promptly: a short clean watch is
// not a failure to back off from for long. Changes come 0.7 s apart, so
// some watches end empty.
func TestHTTPSourceShortWatchesCauseNoPauses(t *testing.T) {
	store := newStore(t, 1)
	if err := store.Create(workload("", "w0", "start")); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("watch") == "true" {
			ctx, cancel := context.WithTimeout(r.Context(), 200*time.Millisecond)
			defer cancel()
			r = r.WithContext(ctx)
		}
		store.Handler().ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	b := buildHTTP(t, "url: "+srv.URL+"\n")
	startInformer(t, b)
	waitFor(t, "sync", b.Informer.HasSynced)
	var lags []time.Duration
	for i := range 12 {
		time.Sleep(700 * time.Millisecond) // let watches end empty meanwhile
		if err := store.Update(workload("", "w0", fmt.Sprintf("c%d", i))); err != nil {
			t.Fatal(err)
		}
		lags = append(lags, timeToAgree(t, b, store, time.Minute))
	}
	t.Logf("change to informer with 200 ms watches: %s", summary(lags))
	for i, d := range lags {
		// At most one paced retry (under 2*RetryMaxDelay) and a watch.
		if limit := 2*RetryMaxDelay + time.Second; d > limit {
			t.Errorf("change %d took %v to arrive, more than %v", i, d, limit)
		}
	}
}

// TestHTTPSourceRetryPacing: a manager that answers every request with 503
// is retried every 1-2 s once the backoff is at its cap, not hammered and
// not left alone for long.
func TestHTTPSourceRetryPacing(t *testing.T) {
	var mu sync.Mutex
	var at []time.Time
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		at = append(at, time.Now())
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","code":503,"reason":"ServiceUnavailable","message":"down for maintenance"}`))
	}))
	t.Cleanup(srv.Close)
	b := buildHTTP(t, "url: "+srv.URL+"\n")
	startInformer(t, b)
	waitFor(t, "seven attempts", func() bool { mu.Lock(); defer mu.Unlock(); return len(at) >= 7 })
	mu.Lock()
	defer mu.Unlock()
	for i := 1; i < len(at); i++ {
		gap := at[i].Sub(at[i-1])
		// The first gaps are RetryInitialDelay doubling up to the cap.
		lo := RetryInitialDelay << min(i-1, 2)
		lo = min(lo, RetryMaxDelay)
		// The slack above allows for a loaded machine; the reflector's
		// own backoff would exceed it from the fourth gap on.
		if gap < lo-50*time.Millisecond || gap > 2*lo+2*time.Second {
			t.Errorf("gap %d between attempts = %v, want [%v, %v) plus scheduling slack", i, gap, lo, 2*lo)
		}
	}
	if b.Informer.HasSynced() {
		t.Error("the informer synced without a list")
	}
}

// TestHTTPSourceRelistsWhenVersionsGoBackwards: a manager that restarted
// with a lower counter and, against the protocol, streams from the old
// version instead of answering 410. The event with the lower version is
// not delivered; the informer lists again.
func TestHTTPSourceRelistsWhenVersionsGoBackwards(t *testing.T) {
	store := newStore(t, 100)
	if err := store.Create(workload("", "w1", "alice")); err != nil {
		t.Fatal(err)
	}
	mgr := newFaultyManager(t, store)
	ghost := `{` + ewAPIVersion + `,"kind":"ExternalWorkload","metadata":{"name":"w1","resourceVersion":"7"},"spec":{"nodeName":"host-1","workloadKind":"vm","owner":"ghost"}}`
	mgr.queueWatch(watchLine("MODIFIED", ghost))
	m, err := NewMetrics(nil)
	if err != nil {
		t.Fatal(err)
	}
	b := buildWithMetrics(t, "url: "+mgr.srv.URL+"\n", m)
	var mu sync.Mutex
	var owners []string
	if _, err := b.Informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		UpdateFunc: func(_, o any) {
			mu.Lock()
			owners = append(owners, o.(*v1alpha1.ExternalWorkload).Spec.Owner)
			mu.Unlock()
		},
	}); err != nil {
		t.Fatal(err)
	}
	startInformer(t, b)
	waitFor(t, "a relist", func() bool { return metricstest.CounterValue(t, m.Relists.WithLabelValues("workloads")) >= 1 })
	if err := store.Update(workload("", "w1", "bob")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the next change", func() bool { return agrees(b, store) })
	mu.Lock()
	defer mu.Unlock()
	for _, o := range owners {
		if o == "ghost" {
			t.Fatalf("the event with the lower version was delivered: updates %v", owners)
		}
	}
}

func TestWentBackwards(t *testing.T) {
	for _, tt := range []struct {
		last, next string
		bookmark   bool
		want       bool
	}{
		{"10", "11", false, false},
		{"10", "10", true, false},
		{"10", "10", false, true},
		{"10", "9", true, true},
		{"10", "9", false, true},
		{"abc", "1", false, false},
		{"10", "x9", false, false},
		{"", "5", false, false},
	} {
		if got := wentBackwards(tt.last, tt.next, tt.bookmark); got != tt.want {
			t.Errorf("wentBackwards(%q, %q, bookmark=%v) = %v, want %v", tt.last, tt.next, tt.bookmark, got, tt.want)
		}
	}
}

// TestFailuresAreLoggedOncePerRun: a source failing the same way on every
// attempt is logged at error level once (again when the error changes),
// and its recovery once.
func TestFailuresAreLoggedOncePerRun(t *testing.T) {
	logs := captureLogs(t)
	r := newResilientListWatch(nil, &v1alpha1.ExternalWorkload{}, "flaky", unregisteredMetrics().forSource("flaky"))
	refused := fmt.Errorf("dial tcp 127.0.0.1:1: connect: connection refused")
	for range 5 {
		r.failed(refused, "watch")
	}
	r.failed(fmt.Errorf("the server has asked for the client to provide credentials"), "watch")
	r.failed(rejected{fmt.Errorf("list from custom informer \"flaky\": metadata.resourceVersion is missing")}, "list")
	r.recovered()
	r.recovered() // nothing to end
	klog.Flush()
	// klog writes an error line once per severity at or below it: count
	// distinct lines.
	count := func(sev, msg string) int {
		lines := map[string]bool{}
		for _, l := range strings.Split(logs.String(), "\n") {
			if strings.HasPrefix(l, sev) && strings.Contains(l, msg) && strings.Contains(l, `informer="flaky"`) {
				lines[l] = true
			}
		}
		return len(lines)
	}
	for _, tt := range []struct {
		sev, msg string
		want     int
	}{
		{"E", "connection refused", 1},
		{"E", "provide credentials", 1},
		{"E", "Rejected a list from a custom informer source; keeping the previous state", 1},
		{"I", `"Custom informer source answers again" informer="flaky" failures=7`, 1},
	} {
		if got := count(tt.sev, tt.msg); got != tt.want {
			t.Errorf("%s lines with %q: %d, want %d\n%s", tt.sev, tt.msg, got, tt.want, logs)
		}
	}
}
