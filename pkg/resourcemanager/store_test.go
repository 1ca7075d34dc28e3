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

package resourcemanager_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/batch-scheduler/batch-scheduler/pkg/custominformer"
	"github.com/batch-scheduler/batch-scheduler/pkg/resourcemanager"
)

func newStore(t *testing.T, mod func(*resourcemanager.Options)) (*resourcemanager.Store, *httptest.Server) {
	t.Helper()
	o := resourcemanager.Options{
		GroupVersionKind: schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"},
		Resource:         "configmaps",
		Example:          &v1.ConfigMap{},
		HistorySize:      10,
	}
	if mod != nil {
		mod(&o)
	}
	s, err := resourcemanager.New(o)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(func() { s.Close(); srv.Close() })
	return s, srv
}

func cm(ns, name, val string) *v1.ConfigMap {
	return &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Data: map[string]string{"v": val}}
}

type rawEvent struct {
	Type   string         `json:"type"`
	Object map[string]any `json:"object"`
}

func (e rawEvent) rv() string {
	m, _ := e.Object["metadata"].(map[string]any)
	s, _ := m["resourceVersion"].(string)
	return s
}

func (e rawEvent) name() string {
	m, _ := e.Object["metadata"].(map[string]any)
	s, _ := m["name"].(string)
	return s
}

// readEvents reads n events from a watch stream.
func readEvents(t *testing.T, body io.Reader, n int) []rawEvent {
	t.Helper()
	dec := json.NewDecoder(bufio.NewReader(body))
	var out []rawEvent
	for len(out) < n {
		var e rawEvent
		if err := dec.Decode(&e); err != nil {
			t.Fatalf("after %d events: %v", len(out), err)
		}
		out = append(out, e)
	}
	return out
}

func get(t *testing.T, url string) *http.Response {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

func TestCRUDErrorsAndResourceVersions(t *testing.T) {
	s, _ := newStore(t, nil)
	a := cm("ns", "a", "1")
	if err := s.Create(a); err != nil {
		t.Fatal(err)
	}
	if a.ResourceVersion != "2" { // the empty store is at 1
		t.Fatalf("rv = %q", a.ResourceVersion)
	}
	if err := s.Create(cm("ns", "a", "x")); err == nil {
		t.Fatal("duplicate create succeeded")
	}
	if err := s.Update(cm("ns", "missing", "x")); err == nil {
		t.Fatal("update of missing object succeeded")
	}
	stale := cm("ns", "a", "2")
	stale.ResourceVersion = "99"
	if err := s.Update(stale); err == nil {
		t.Fatal("update with stale rv succeeded")
	}
	b := cm("ns", "a", "2")
	if err := s.Update(b); err != nil || b.ResourceVersion != "3" {
		t.Fatalf("update: %v rv %q", err, b.ResourceVersion)
	}
	got, ok := s.Get("ns", "a")
	if !ok || got.(*v1.ConfigMap).Data["v"] != "2" || got.(*v1.ConfigMap).ResourceVersion != "3" {
		t.Fatalf("get = %v %v", got, ok)
	}
	if err := s.Delete("ns", "a"); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete("ns", "a"); err == nil {
		t.Fatal("double delete succeeded")
	}
	if _, ok := s.Get("ns", "a"); ok {
		t.Fatal("deleted object still there")
	}
	if s.ResourceVersion() != "4" {
		t.Fatalf("store rv = %s", s.ResourceVersion())
	}
}

func TestListReturnsItemsAndResourceVersion(t *testing.T) {
	s, srv := newStore(t, nil)
	for _, c := range []*v1.ConfigMap{cm("b", "x", "1"), cm("a", "y", "2")} {
		if err := s.Create(c); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		path  string
		names []string
	}{{"/api/v1/configmaps", []string{"y", "x"}}, {"/api/v1/namespaces/b/configmaps", []string{"x"}}} {
		resp := get(t, srv.URL+tc.path)
		var l v1.ConfigMapList
		if err := json.NewDecoder(resp.Body).Decode(&l); err != nil {
			t.Fatal(err)
		}
		if l.Kind != "ConfigMapList" || l.APIVersion != "v1" || l.ResourceVersion != "3" {
			t.Fatalf("%s: list meta %+v %+v", tc.path, l.TypeMeta, l.ListMeta)
		}
		if len(l.Items) != len(tc.names) {
			t.Fatalf("%s: %d items", tc.path, len(l.Items))
		}
		for i, n := range tc.names {
			if l.Items[i].Name != n || l.Items[i].ResourceVersion == "" {
				t.Fatalf("%s: item %d = %s", tc.path, i, l.Items[i].Name)
			}
		}
	}
}

func TestWatchFromRVStreamsInOrder(t *testing.T) {
	s, srv := newStore(t, nil)
	if err := s.Create(cm("ns", "a", "0")); err != nil {
		t.Fatal(err)
	}
	resp := get(t, srv.URL+"/api/v1/configmaps?watch=1&resourceVersion=2")
	if resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	a := cm("ns", "a", "1")
	if err := s.Update(a); err != nil {
		t.Fatal(err)
	}
	if err := s.Create(cm("ns", "b", "1")); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete("ns", "a"); err != nil {
		t.Fatal(err)
	}
	ev := readEvents(t, resp.Body, 3)
	want := []string{"MODIFIED a 3", "ADDED b 4", "DELETED a 5"}
	for i, e := range ev {
		if got := fmt.Sprintf("%s %s %s", e.Type, e.name(), e.rv()); got != want[i] {
			t.Fatalf("event %d = %s, want %s", i, got, want[i])
		}
	}
}

func TestWatchResumeReplaysMissingEvents(t *testing.T) {
	s, srv := newStore(t, nil)
	for i := 0; i < 6; i++ {
		if err := s.Create(cm("ns", strconv.Itoa(i), "")); err != nil {
			t.Fatal(err)
		}
	}
	resp := get(t, srv.URL+"/api/v1/configmaps?watch=true&resourceVersion=4")
	ev := readEvents(t, resp.Body, 3)
	for i, e := range ev {
		if e.Type != "ADDED" || e.rv() != strconv.Itoa(5+i) {
			t.Fatalf("event %d = %s %s", i, e.Type, e.rv())
		}
	}
	if err := s.Create(cm("ns", "live", "")); err != nil {
		t.Fatal(err)
	}
	if e := readEvents(t, resp.Body, 1)[0]; e.rv() != "8" || e.name() != "live" {
		t.Fatalf("live event %s %s", e.name(), e.rv())
	}
}

func TestWatchTooOldRVIsExpired(t *testing.T) {
	s, srv := newStore(t, nil) // history 10
	for i := 0; i < 15; i++ {
		if err := s.Create(cm("ns", strconv.Itoa(i), "")); err != nil {
			t.Fatal(err)
		}
	}
	resp := get(t, srv.URL+"/api/v1/configmaps?watch=true&resourceVersion=2")
	e := readEvents(t, resp.Body, 1)[0]
	if e.Type != "ERROR" || e.Object["reason"] != "Expired" || e.Object["code"] != float64(410) {
		t.Fatalf("got %+v", e)
	}
	// The oldest resumable RV still works.
	resp = get(t, srv.URL+"/api/v1/configmaps?watch=true&resourceVersion=6")
	if e := readEvents(t, resp.Body, 1)[0]; e.Type != "ADDED" || e.rv() != "7" {
		t.Fatalf("got %s %s", e.Type, e.rv())
	}
	// So does the current one, which waits for the next change.
	resp = get(t, srv.URL+"/api/v1/configmaps?watch=true&resourceVersion=16")
	if err := s.Create(cm("ns", "next", "")); err != nil {
		t.Fatal(err)
	}
	if e := readEvents(t, resp.Body, 1)[0]; e.Type != "ADDED" || e.rv() != "17" {
		t.Fatalf("got %s %s", e.Type, e.rv())
	}
	// A version the store never reached comes from before a restart: the
	// client must list again.
	resp = get(t, srv.URL+"/api/v1/configmaps?watch=true&resourceVersion=18")
	e = readEvents(t, resp.Body, 1)[0]
	if e.Type != "ERROR" || e.Object["reason"] != "Expired" || e.Object["code"] != float64(410) ||
		!strings.Contains(e.Object["message"].(string), "newer than the store's 17") {
		t.Fatalf("got %+v", e)
	}
}

func TestWatchTimeoutSecondsAndBookmarks(t *testing.T) {
	s, srv := newStore(t, func(o *resourcemanager.Options) { o.BookmarkInterval = 20 * time.Millisecond })
	if err := s.Create(cm("ns", "a", "")); err != nil {
		t.Fatal(err)
	}
	resp := get(t, srv.URL+"/api/v1/configmaps?watch=true&resourceVersion=2&allowWatchBookmarks=true&timeoutSeconds=1")
	e := readEvents(t, resp.Body, 1)[0]
	if e.Type != "BOOKMARK" || e.rv() != "2" || e.Object["kind"] != "ConfigMap" {
		t.Fatalf("got %+v", e)
	}
	start := time.Now()
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("stream lasted %v past timeoutSeconds=1", d)
	}
}

// informerFixture is a real client-go informer over a rest.RESTClient
// talking to the store's HTTP server.
type informerFixture struct {
	inf    cache.SharedIndexInformer
	mu     sync.Mutex
	events []string // "add name rv" etc., in delivery order
	gate   *gate
}

// gate blocks reads of watch response bodies while closed.
type gate struct {
	mu   sync.Mutex
	open chan struct{}
}

func newGate() *gate { g := &gate{open: make(chan struct{})}; close(g.open); return g }

func (g *gate) shut() { g.mu.Lock(); g.open = make(chan struct{}); g.mu.Unlock() }
func (g *gate) release() {
	g.mu.Lock()
	select {
	case <-g.open:
	default:
		close(g.open)
	}
	g.mu.Unlock()
}
func (g *gate) wait() { g.mu.Lock(); c := g.open; g.mu.Unlock(); <-c }

type gatedBody struct {
	io.ReadCloser
	g *gate
}

func (b gatedBody) Read(p []byte) (int, error) { b.g.wait(); return b.ReadCloser.Read(p) }

type gatedRT struct {
	rt http.RoundTripper
	g  *gate
}

func (r gatedRT) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := r.rt.RoundTrip(req)
	if err == nil && req.URL.Query().Get("watch") != "" {
		resp.Body = gatedBody{resp.Body, r.g}
	}
	return resp, err
}

func startInformer(t *testing.T, srv *httptest.Server) *informerFixture {
	t.Helper()
	f := &informerFixture{gate: newGate()}
	cfg := &rest.Config{
		Host:    srv.URL,
		APIPath: "/api",
		ContentConfig: rest.ContentConfig{
			GroupVersion:         &schema.GroupVersion{Version: "v1"},
			NegotiatedSerializer: scheme.Codecs.WithoutConversion(),
			ContentType:          runtime.ContentTypeJSON,
		},
		WrapTransport: func(rt http.RoundTripper) http.RoundTripper { return gatedRT{rt, f.gate} },
	}
	rc, err := rest.RESTClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return rc.Get().Resource("configmaps").VersionedParams(&o, scheme.ParameterCodec).Do(ctx).Get()
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.Watch = true
			return rc.Get().Resource("configmaps").VersionedParams(&o, scheme.ParameterCodec).Watch(ctx)
		},
	}
	f.inf = custominformer.New(lw, &v1.ConfigMap{}, custominformer.Options{Name: t.Name()})
	rec := func(kind string, o any) {
		if d, ok := o.(cache.DeletedFinalStateUnknown); ok {
			o = d.Obj
		}
		c := o.(*v1.ConfigMap)
		f.mu.Lock()
		f.events = append(f.events, fmt.Sprintf("%s %s %s", kind, c.Name, c.ResourceVersion))
		f.mu.Unlock()
	}
	if _, err := f.inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { rec("add", o) },
		UpdateFunc: func(_, o any) { rec("update", o) },
		DeleteFunc: func(o any) { rec("delete", o) },
	}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(func() { f.gate.release(); cancel() })
	go f.inf.Run(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), f.inf.HasSynced) {
		t.Fatal("informer did not sync")
	}
	return f
}

func (f *informerFixture) eventLog() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.events...)
}

// waitConverged polls until the informer's store holds exactly the store's
// objects at the same resourceVersions.
func waitConverged(t *testing.T, s *resourcemanager.Store, f *informerFixture) {
	t.Helper()
	var last string
	err := wait.PollUntilContextTimeout(context.Background(), 10*time.Millisecond, 20*time.Second, true,
		func(context.Context) (bool, error) {
			want, _ := s.List("")
			got := f.inf.GetStore().List()
			last = fmt.Sprintf("store has %d objects, informer %d", len(want), len(got))
			if len(got) != len(want) {
				return false, nil
			}
			for _, w := range want {
				wc := w.(*v1.ConfigMap)
				o, ok, _ := f.inf.GetStore().GetByKey(wc.Namespace + "/" + wc.Name)
				if !ok || o.(*v1.ConfigMap).ResourceVersion != wc.ResourceVersion {
					last = "differs at " + wc.Name
					return false, nil
				}
			}
			return true, nil
		})
	if err != nil {
		t.Fatalf("informer did not converge: %s: %v; events %v; watchers %d", last, err, f.eventLog(), s.Watchers())
	}
}

func TestInformerSeesEveryChangeInOrder(t *testing.T) {
	s, srv := newStore(t, func(o *resourcemanager.Options) { o.HistorySize = 1000 })
	if err := s.Create(cm("ns", "pre", "")); err != nil {
		t.Fatal(err)
	}
	f := startInformer(t, srv)
	var want []string
	want = append(want, "add pre 2")
	for i := 0; i < 50; i++ {
		c := cm("ns", fmt.Sprintf("o%d", i%7), strconv.Itoa(i))
		var err error
		kind := "update"
		if _, ok := s.Get("ns", c.Name); ok {
			if i%5 == 0 {
				err, kind = s.Delete("ns", c.Name), "delete"
				c.ResourceVersion = s.ResourceVersion()
			} else {
				err = s.Update(c)
			}
		} else {
			err, kind = s.Create(c), "add"
		}
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, fmt.Sprintf("%s %s %s", kind, c.Name, c.ResourceVersion))
	}
	waitConverged(t, s, f)
	err := wait.PollUntilContextTimeout(context.Background(), 10*time.Millisecond, 10*time.Second, true,
		func(context.Context) (bool, error) { return len(f.eventLog()) >= len(want), nil })
	got := f.eventLog()
	if err != nil || len(got) != len(want) {
		t.Fatalf("got %d events, want %d: %v", len(got), len(want), got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("event %d = %q, want %q", i, got[i], want[i])
		}
	}
}

func TestInformerRelistsAfterWatchKilled(t *testing.T) {
	s, srv := newStore(t, func(o *resourcemanager.Options) { o.HistorySize = 5 })
	f := startInformer(t, srv)
	if err := s.Create(cm("ns", "a", "")); err != nil {
		t.Fatal(err)
	}
	waitConverged(t, s, f)
	// Stop the client from reading, change more than the history holds,
	// then kill the connections: the resumed watch gets 410 and relists.
	f.gate.shut()
	for i := 0; i < 20; i++ {
		if err := s.Create(cm("ns", fmt.Sprintf("n%d", i), "")); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Delete("ns", "a"); err != nil {
		t.Fatal(err)
	}
	srv.CloseClientConnections()
	f.gate.release()
	waitConverged(t, s, f)
}

func TestSlowWatcherIsClosedAndInformerRecovers(t *testing.T) {
	s, srv := newStore(t, func(o *resourcemanager.Options) { o.HistorySize = 20; o.WatcherBuffer = 2 })
	f := startInformer(t, srv)
	waitConverged(t, s, f)
	f.gate.shut()
	big := string(make([]byte, 64<<10))
	for i := 0; s.SlowWatchersClosed() == 0; i++ {
		if i > 10000 {
			t.Fatal("watcher never closed as slow")
		}
		if err := s.Create(cm("ns", fmt.Sprintf("big%d", i), big)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Create(cm("ns", "after", "")); err != nil {
		t.Fatal(err)
	}
	f.gate.release()
	waitConverged(t, s, f)
}

func TestHistoryPerObjectGrowsAndShrinksTheHistory(t *testing.T) {
	s, _ := newStore(t, func(o *resourcemanager.Options) { o.HistoryPerObject = 2 }) // history 10
	lw := listerWatcher(t, s)
	// resume watches from rv and returns the resourceVersions of the
	// events it replays (up to n), or "expired".
	resume := func(rv string, n int) string {
		t.Helper()
		w, err := lw.WatchWithContext(context.Background(), metav1.ListOptions{ResourceVersion: rv})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Stop()
		e := next(t, w)
		if e.Type == watch.Error {
			if st, ok := e.Object.(*metav1.Status); !ok || st.Code != 410 || st.Reason != metav1.StatusReasonExpired {
				t.Fatalf("rv %s: error event %#v, want 410 Expired", rv, e.Object)
			}
			return "expired"
		}
		rvs := []string{e.Object.(*v1.ConfigMap).ResourceVersion}
		for len(rvs) < n {
			rvs = append(rvs, next(t, w).Object.(*v1.ConfigMap).ResourceVersion)
		}
		return rvs[0] + ".." + rvs[len(rvs)-1]
	}

	// 20 objects, then a change to each: 40 events, more than
	// HistorySize but no more than 2 per object, all kept.
	for i := 0; i < 20; i++ {
		if err := s.Create(cm("ns", strconv.Itoa(i), "a")); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < 20; i++ {
		if err := s.Update(cm("ns", strconv.Itoa(i), "b")); err != nil {
			t.Fatal(err)
		}
	}
	if got := resume("1", 40); got != "2..41" {
		t.Fatalf("replay from 1 = %s, want 2..41", got)
	}
	// One more change is one more than 2 per object: the oldest goes.
	if err := s.Update(cm("ns", "0", "c")); err != nil {
		t.Fatal(err)
	}
	if got := resume("1", 1); got != "expired" {
		t.Fatalf("replay from 1 = %s, want expired", got)
	}
	if got := resume("2", 40); got != "3..42" {
		t.Fatalf("replay from 2 = %s, want 3..42", got)
	}
	// Deleting every object shrinks the history back to HistorySize.
	for i := 0; i < 20; i++ {
		if err := s.Delete("ns", strconv.Itoa(i)); err != nil {
			t.Fatal(err)
		}
	}
	if s.ResourceVersion() != "62" {
		t.Fatalf("store rv = %s", s.ResourceVersion())
	}
	if got := resume("51", 1); got != "expired" {
		t.Fatalf("replay from 51 = %s, want expired", got)
	}
	if got := resume("52", 10); got != "53..62" {
		t.Fatalf("replay from 52 = %s, want 53..62", got)
	}
}
