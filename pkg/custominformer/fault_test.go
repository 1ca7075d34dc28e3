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
	"flag"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	k8smetrics "k8s.io/component-base/metrics"
	"k8s.io/klog/v2"

	"github.com/batch-scheduler/batch-scheduler/pkg/apis/batchscheduler/v1alpha1"
	configapi "github.com/batch-scheduler/batch-scheduler/pkg/apis/config"
	"github.com/batch-scheduler/batch-scheduler/pkg/metrics/metricstest"
	"github.com/batch-scheduler/batch-scheduler/pkg/resourcemanager"
	st "github.com/batch-scheduler/batch-scheduler/pkg/testing"
)

// faultyManager serves a Store, except that queued responses replace the
// next lists or watches.
type faultyManager struct {
	store *resourcemanager.Store
	srv   *httptest.Server

	mu      sync.Mutex // guards the queues and requests
	lists   []canned
	watches []canned
	// requests records each request and how it was answered, for the
	// message of a failed test.
	requests []string
	// hanging is set while a silent watch is being served.
	hanging atomic.Bool
	// expireUntilList, while set, answers every watch with a 410 ERROR
	// event; the next list clears it.
	expireUntilList atomic.Bool
}

// canned is one queued response.
type canned struct {
	code int
	body string
	// hang, if set, makes a watch answer 200 and then stay silent until
	// it is closed.
	hang chan struct{}
}

func newFaultyManager(t *testing.T, store *resourcemanager.Store) *faultyManager {
	t.Helper()
	m := &faultyManager{store: store}
	m.srv = httptest.NewServer(http.HandlerFunc(m.serve))
	t.Cleanup(m.srv.Close)
	return m
}

func (m *faultyManager) serve(w http.ResponseWriter, r *http.Request) {
	watch := r.URL.Query().Get("watch") == "true"
	if !watch {
		m.expireUntilList.Store(false)
	} else if m.expireUntilList.Load() {
		m.mu.Lock()
		m.requests = append(m.requests, fmt.Sprintf("%s %s?%s: expired", time.Now().Format("15:04:05.000"), r.Method, r.URL.RawQuery))
		m.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(expiredLine))
		return
	}
	q := &m.lists
	if watch {
		q = &m.watches
	}
	m.mu.Lock()
	var c canned
	ok := len(*q) > 0
	if ok {
		c, *q = (*q)[0], (*q)[1:]
	}
	answer := "store"
	if ok {
		answer = fmt.Sprintf("canned %d %.40q", c.code, c.body)
	}
	m.requests = append(m.requests, fmt.Sprintf("%s %s?%s: %s", time.Now().Format("15:04:05.000"), r.Method, r.URL.RawQuery, answer))
	m.mu.Unlock()
	if !ok {
		m.store.Handler().ServeHTTP(w, r)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(c.code)
	_, _ = w.Write([]byte(c.body))
	if c.hang != nil {
		w.(http.Flusher).Flush()
		m.hanging.Store(true)
		defer m.hanging.Store(false)
		select {
		case <-c.hang:
		case <-r.Context().Done():
		}
	}
}

// requestLog returns the requests served so far, one per line.
func (m *faultyManager) requestLog() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return strings.Join(m.requests, "\n")
}

func (m *faultyManager) queueWatchHang(hang chan struct{}) {
	m.mu.Lock()
	m.watches = append(m.watches, canned{code: http.StatusOK, hang: hang})
	m.mu.Unlock()
}

func (m *faultyManager) queueList(body string) {
	m.mu.Lock()
	m.lists = append(m.lists, canned{code: http.StatusOK, body: body})
	m.mu.Unlock()
}

func (m *faultyManager) queueWatch(body string) { m.queueWatchStatus(http.StatusOK, body) }

func (m *faultyManager) queueWatchStatus(code int, body string) {
	m.mu.Lock()
	m.watches = append(m.watches, canned{code: code, body: body})
	m.mu.Unlock()
}

// captureLogs sends klog's output to a buffer for the rest of the test.
func captureLogs(t *testing.T) *st.SyncBuffer {
	t.Helper()
	buf := &st.SyncBuffer{}
	klog.LogToStderr(false)
	klog.SetOutput(buf)
	t.Cleanup(func() {
		klog.Flush()
		klog.SetOutput(nil)
		klog.LogToStderr(true)
	})
	return buf
}

func storeKeys(b Built) string {
	keys := b.Informer.GetStore().ListKeys()
	sort.Strings(keys)
	return strings.Join(keys, ",")
}

const (
	ewAPIVersion = `"apiVersion":"batch-scheduler.io/v1alpha1"`
	goodItem     = `{"metadata":{"name":"w9","resourceVersion":"9"},"spec":{"nodeName":"host-1","workloadKind":"vm"}}`
)

func listOf(rv string, items ...string) string {
	return fmt.Sprintf(`{%s,"kind":"ExternalWorkloadList","metadata":{"resourceVersion":%q},"items":[%s]}`,
		ewAPIVersion, rv, strings.Join(items, ","))
}

// expiredLine is the ERROR event of a 410 Expired.
const expiredLine = `{"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Expired","code":410,"message":"too old resource version"}}` + "\n"

func watchLine(typ, obj string) string { return fmt.Sprintf(`{"type":%q,"object":%s}`+"\n", typ, obj) }

func TestHTTPSourceRejectsBadData(t *testing.T) {
	big := fmt.Sprintf(`{"metadata":{"name":"big","resourceVersion":"9","annotations":{"a":%q}},"spec":{"nodeName":"host-1"}}`,
		strings.Repeat("x", 8000))
	tests := []struct {
		name  string
		list  string // replaces a list after the first sync, when set
		watch string // replaces the first watch, when set
		args  string // extra http source settings
		// reason, if set, is the InvalidObjects reason counted.
		reason string
		// log must appear in the logs (besides the informer's name).
		log string
	}{
		{name: "garbage list", list: `{"kind": "ExternalWorkloadList", "items": [{`, log: "unexpected end of JSON"},
		{name: "list not JSON", list: `<html>oops</html>`, log: "invalid character"},
		{name: "list without resourceVersion", list: `{"kind":"ExternalWorkloadList","metadata":{},"items":[]}`,
			reason: ReasonMissingResourceVersion, log: "metadata.resourceVersion is missing"},
		{name: "list item of the wrong kind", list: listOf("20", goodItem, `{"apiVersion":"v1","kind":"Node","metadata":{"name":"n","resourceVersion":"3"}}`),
			reason: ReasonWrongType, log: `item 1: object has apiVersion \"v1\" and kind \"Node\"`},
		{name: "list of the wrong kind", list: `{"apiVersion":"batch-scheduler.io/v1alpha1","kind":"GrantList","metadata":{"resourceVersion":"30"},"items":[]}`,
			reason: ReasonWrongType, log: `is a *v1alpha1.GrantList (kind \"GrantList\"), want *v1alpha1.ExternalWorkloadList`},
		{name: "list is a single object", list: `{` + ewAPIVersion + `,"kind":"ExternalWorkload","metadata":{"name":"w1","resourceVersion":"30"},"spec":{"nodeName":"host-1","workloadKind":"vm"}}`,
			reason: ReasonNotAList, log: `is a *v1alpha1.ExternalWorkload (kind \"ExternalWorkload\"), not a list`},
		{name: "list is a success Status", list: `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Success","code":200}`,
			reason: ReasonNotAList, log: `is a *v1.Status (kind \"Status\"), not a list`},
		{name: "list is a failure Status with 200", list: `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"manager confused","reason":"InternalError","code":500}`,
			reason: ReasonNotAList, log: `manager confused`},
		{name: "list items are an object", list: `{` + ewAPIVersion + `,"kind":"ExternalWorkloadList","metadata":{"resourceVersion":"30"},"items":{"w1":` + goodItem + `}}`,
			reason: ReasonNotAList, log: "the list response's items are an object, not an array"},
		{name: "list items are a string", list: `{` + ewAPIVersion + `,"kind":"ExternalWorkloadList","metadata":{"resourceVersion":"30"},"items":"w1"}`,
			reason: ReasonNotAList, log: "the list response's items are a string, not an array"},
		{name: "list item without a name", list: listOf("20", `{"metadata":{"resourceVersion":"3"}}`),
			reason: ReasonMissingName, log: "has no metadata.name"},
		{name: "list item without resourceVersion", list: listOf("20", `{"metadata":{"name":"w3"}}`),
			reason: ReasonMissingResourceVersion, log: "w3 has no metadata.resourceVersion"},
		{name: "oversized list item", list: listOf("20", goodItem, big), args: "maxObjectBytes: 4096\n",
			reason: ReasonTooLarge, log: "list item 1 has 8101 bytes, more than 4096"},
		{name: "oversized list", list: listOf("20", goodItem, goodItem, goodItem, goodItem, goodItem, goodItem, goodItem, goodItem),
			args: "maxListBytes: 600\n", log: "list response of more than 600 bytes"},

		{name: "garbage watch event", watch: `{"type":"ADDED","object":{"metadata":nope}}` + "\n", log: "unable to decode an event from the watch stream"},
		{name: "watch event without kind", watch: watchLine("ADDED", `{"metadata":{"name":"w7","resourceVersion":"7"}}`), log: "Object 'Kind' is missing"},
		{name: "watch event of the wrong kind", watch: watchLine("ADDED", `{"apiVersion":"v1","kind":"Node","metadata":{"name":"n","resourceVersion":"5"}}`),
			reason: ReasonWrongType, log: "ADDED event from custom informer"},
		{name: "watch event without resourceVersion", watch: watchLine("MODIFIED", `{`+ewAPIVersion+`,"kind":"ExternalWorkload","metadata":{"name":"w1"}}`),
			reason: ReasonMissingResourceVersion, log: "w1 has no metadata.resourceVersion"},
		{name: "watch event without a name", watch: watchLine("DELETED", `{`+ewAPIVersion+`,"kind":"ExternalWorkload","metadata":{"resourceVersion":"7"}}`),
			reason: ReasonMissingName, log: "has no metadata.name"},
		{name: "watch event of an unknown type", watch: watchLine("EXPLODED", goodItem), log: "invalid watch event type: EXPLODED"},
		{name: "oversized watch event", watch: watchLine("ADDED", big), args: "maxObjectBytes: 4096\n",
			reason: ReasonTooLarge, log: "watch event of more than 4096 bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			logs := captureLogs(t)
			store := newWorkloadStore(t)
			if err := store.Create(workload("", "w1", "alice")); err != nil {
				t.Fatal(err)
			}
			mgr := newFaultyManager(t, store)
			if tt.watch != "" {
				mgr.queueWatch(tt.watch)
			}
			m, err := NewMetrics(k8smetrics.NewKubeRegistry())
			if err != nil {
				t.Fatal(err)
			}
			b := buildWithMetrics(t, "url: "+mgr.srv.URL+"\n"+tt.args, m)
			run(t, b)
			waitFor(t, "sync", b.Informer.HasSynced)

			if tt.list != "" {
				// End the watch and answer the next ones with 410 until
				// the informer lists again and gets the bad list. (A
				// single queued 410 can be lost: closing the connections
				// may cut its response before the informer reads it, and
				// the informer then rightly watches again from where it
				// was.)
				mgr.queueList(tt.list)
				mgr.expireUntilList.Store(true)
				mgr.srv.CloseClientConnections()
				t.Cleanup(func() {
					if t.Failed() {
						t.Logf("requests to the manager:\n%s", mgr.requestLog())
					}
				})
				waitFor(t, "the bad list to be rejected", func() bool { return metricstest.CounterValue(t, m.ListErrors.WithLabelValues("workloads")) >= 1 })
				if got := storeKeys(b); got != "w1" {
					t.Fatalf("after the bad list, the informer holds %q, want the last good state w1", got)
				}
			} else {
				waitFor(t, "the bad watch to be reported", func() bool { return metricstest.CounterValue(t, m.WatchErrors.WithLabelValues("workloads")) >= 1 })
				if got := metricstest.CounterValue(t, m.Events.WithLabelValues("workloads", "error")); got < 1 {
					t.Errorf("error events = %v, want >= 1", got)
				}
			}
			if tt.reason != "" {
				if got := metricstest.CounterValue(t, m.InvalidObjects.WithLabelValues("workloads", tt.reason)); got < 1 {
					t.Errorf("invalid objects with reason %s = %v, want >= 1", tt.reason, got)
				}
			}
			// Nothing invalid got in, and the informer recovers: the
			// next change at the manager arrives.
			if err := store.Create(workload("", "w2", "bob")); err != nil {
				t.Fatal(err)
			}
			waitFor(t, "recovery", func() bool { return storeKeys(b) == "w1,w2" })
			klog.Flush()
			out := logs.String()
			if !strings.Contains(out, tt.log) {
				t.Errorf("logs do not mention %q:\n%s", tt.log, out)
			}
			if !strings.Contains(out, "workloads") {
				t.Errorf("logs do not name the informer:\n%s", out)
			}
		})
	}
}

// buildWithMetrics builds the http source with args, reporting to m.
func buildWithMetrics(t *testing.T, args string, m *Metrics) Built {
	t.Helper()
	ci := configapi.CustomInformer{Name: "workloads", Resource: "ExternalWorkload", SourceType: "http",
		SourceArgs: configapi.NewRawArgs("c.yaml", []byte(args))}
	b, err := Build(context.Background(), NewInTreeSourceRegistry(), "c.yaml", 2, ci, WithMetrics(m))
	if err != nil {
		t.Fatalf("Build: %v", err)
	}
	return b
}

func TestHTTPSourceManagerRestartedWithChangedState(t *testing.T) {
	for _, tt := range []struct {
		name string
		// initialRV of the restarted manager's store.
		initialRV int64
	}{
		{name: "versions continue above the old ones", initialRV: 1000},
		{name: "versions start over", initialRV: 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			addr := ln.Addr().String()
			serve := func(s *resourcemanager.Store, ln net.Listener) *http.Server {
				srv := &http.Server{Handler: s.Handler()}
				go func() { _ = srv.Serve(ln) }()
				return srv
			}
			old := newWorkloadStore(t)
			for _, n := range []string{"w1", "w2", "w3", "w4"} {
				if err := old.Create(workload("", n, "alice")); err != nil {
					t.Fatal(err)
				}
			}
			srv := serve(old, ln)
			m, err := NewMetrics(nil)
			if err != nil {
				t.Fatal(err)
			}
			b := buildWithMetrics(t, "url: http://"+addr+"\n", m)
			run(t, b)
			waitFor(t, "sync", b.Informer.HasSynced)
			waitFor(t, "a watcher", func() bool { return old.Watchers() > 0 })
			if err := old.Update(workload("", "w2", "bob")); err != nil {
				t.Fatal(err)
			}
			waitFor(t, "the update", func() bool {
				o, _, _ := b.Informer.GetStore().GetByKey("w2")
				return o != nil && o.(*v1alpha1.ExternalWorkload).Spec.Owner == "bob"
			})

			// Kill the manager mid-watch and bring it back with other
			// state: w1 gone, w2 changed, w5 new.
			_ = srv.Close()
			restarted, err := resourcemanager.New(resourcemanager.Options{
				GroupVersionKind: v1alpha1.SchemeGroupVersion.WithKind("ExternalWorkload"),
				Resource:         v1alpha1.ExternalWorkloadsResource, Example: &v1alpha1.ExternalWorkload{},
				BookmarkInterval: -1, InitialResourceVersion: tt.initialRV,
			})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(restarted.Close)
			want := map[string]string{"w2": "carol", "w3": "alice", "w4": "alice", "w5": "dave"}
			for _, n := range []string{"w2", "w3", "w4", "w5"} {
				if err := restarted.Create(workload("", n, want[n])); err != nil {
					t.Fatal(err)
				}
			}
			ln, err = net.Listen("tcp", addr)
			if err != nil {
				t.Fatalf("re-listening on %s: %v", addr, err)
			}
			srv = serve(restarted, ln)
			t.Cleanup(func() { _ = srv.Close() })

			waitFor(t, "the informer to match the restarted manager", func() bool {
				objs := b.Informer.GetStore().List()
				if len(objs) != len(want) {
					return false
				}
				for _, o := range objs {
					w := o.(*v1alpha1.ExternalWorkload)
					if want[w.Name] != w.Spec.Owner {
						return false
					}
				}
				return true
			})
			if got := metricstest.CounterValue(t, m.Relists.WithLabelValues("workloads")); got < 1 {
				t.Errorf("relists = %v, want >= 1", got)
			}
		})
	}
}

func TestHTTPSourceRelistsOnExpired(t *testing.T) {
	t.Run("ERROR event", func(t *testing.T) { testRelistOnExpired(t, false) })
	t.Run("410 status", func(t *testing.T) { testRelistOnExpired(t, true) })
}

// testRelistOnExpired lets the manager's history move past the informer's
// version; the manager then says so with an ERROR event (as an apiserver
// does) or, with status410, with an HTTP 410 Gone. Both must be handled
// and logged alike: one line at V(2), nothing at error level, one watch
// error and one relist.
func testRelistOnExpired(t *testing.T, status410 bool) {
	logs := captureLogs(t)
	setVerbosity(t, 2)
	store, err := resourcemanager.New(resourcemanager.Options{
		GroupVersionKind: v1alpha1.SchemeGroupVersion.WithKind("ExternalWorkload"),
		Resource:         v1alpha1.ExternalWorkloadsResource, Example: &v1alpha1.ExternalWorkload{},
		BookmarkInterval: -1, HistorySize: 3,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(store.Close)
	if err := store.Create(workload("", "w0", "alice")); err != nil {
		t.Fatal(err)
	}
	mgr := newFaultyManager(t, store)
	// The informer's first watch hears nothing while more changes than the
	// history holds happen; then its connection breaks, and it resumes from
	// the version of its list, which the manager no longer has.
	hang := make(chan struct{})
	mgr.queueWatchHang(hang)
	if status410 {
		mgr.queueWatchStatus(http.StatusGone, `{"kind":"Status","apiVersion":"v1","status":"Failure","code":410,"reason":"Gone","message":"history moved on"}`)
	}
	m, err := NewMetrics(nil)
	if err != nil {
		t.Fatal(err)
	}
	b := buildWithMetrics(t, "url: "+mgr.srv.URL+"\n", m)
	run(t, b)
	waitFor(t, "sync", b.Informer.HasSynced)
	waitFor(t, "the silent watch", func() bool { return mgr.hanging.Load() })
	for i := 1; i <= 6; i++ {
		if err := store.Create(workload("", fmt.Sprintf("w%d", i), "bob")); err != nil {
			t.Fatal(err)
		}
	}
	if err := store.Delete("", "w0"); err != nil {
		t.Fatal(err)
	}
	// A watch that ends within a second without events makes the
	// reflector list at once; this one must look like a normal break.
	time.Sleep(1100 * time.Millisecond)
	if got := metricstest.CounterValue(t, m.Relists.WithLabelValues("workloads")); got != 0 {
		t.Fatalf("relists before the break = %v, want 0", got)
	}
	close(hang)
	waitFor(t, "the informer to catch up", func() bool { return storeKeys(b) == "w1,w2,w3,w4,w5,w6" })
	if got := metricstest.CounterValue(t, m.Relists.WithLabelValues("workloads")); got < 1 {
		t.Errorf("relists = %v, want >= 1", got)
	}
	// The 410 was what made it list: an ERROR event, or a failed watch.
	if got := metricstest.CounterValue(t, m.WatchErrors.WithLabelValues("workloads")); got != 1 {
		klog.Flush()
		t.Errorf("watch errors = %v, want the 410 counted once; logs:\n%s", got, logs)
	}
	if got := metricstest.CounterValue(t, m.Relists.WithLabelValues("workloads")); got != 1 {
		t.Errorf("relists = %v, want 1", got)
	}
	klog.Flush()
	var expired int
	for _, line := range strings.Split(logs.String(), "\n") {
		if strings.HasPrefix(line, "E") || strings.HasPrefix(line, "W") {
			t.Errorf("a 410 logged %s", line)
		}
		if strings.Contains(line, "Custom informer source no longer serves the informer's resourceVersion; listing again") &&
			strings.Contains(line, `informer="workloads"`) {
			expired++
		}
	}
	if expired != 1 {
		t.Errorf("the 410 was logged %d times at V(2), want once:\n%s", expired, logs)
	}
}

// setVerbosity sets klog's -v for the rest of the test.
func setVerbosity(t *testing.T, v int) {
	t.Helper()
	var fs flag.FlagSet
	klog.InitFlags(&fs)
	if err := fs.Set("v", strconv.Itoa(v)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = fs.Set("v", "0") })
}

// TestStoppingLogsNoErrors: an informer that stops breaks its own watch
// stream; that is not the source's failure and must not be logged or
// counted as one. Whether the break shows as an error depends on timing,
// hence the rounds.
func TestStoppingLogsNoErrors(t *testing.T) {
	logs := captureLogs(t)
	store := newWorkloadStore(t)
	if err := store.Create(workload("", "w1", "alice")); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(store.Handler())
	t.Cleanup(srv.Close)
	m, err := NewMetrics(nil)
	if err != nil {
		t.Fatal(err)
	}
	for range 30 {
		b := buildWithMetrics(t, "url: "+srv.URL+"\n", m)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { defer close(done); b.Informer.RunWithContext(ctx) }()
		waitFor(t, "sync", b.Informer.HasSynced)
		waitFor(t, "a watcher", func() bool { return store.Watchers() > 0 })
		cancel()
		<-done
		waitFor(t, "the watch to end", func() bool { return store.Watchers() == 0 })
	}
	klog.Flush()
	for _, line := range strings.Split(logs.String(), "\n") {
		if strings.HasPrefix(line, "E") || strings.HasPrefix(line, "W") {
			t.Errorf("stopping logged %s", line)
		}
	}
	for _, c := range []*k8smetrics.CounterVec{m.WatchErrors, m.ListErrors} {
		if n := metricstest.CounterValue(t, c.WithLabelValues("workloads")); n != 0 {
			t.Errorf("stopping counted %v errors", n)
		}
	}
}
