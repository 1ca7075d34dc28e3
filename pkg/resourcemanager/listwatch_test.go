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
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/cache"

	"github.com/batch-scheduler/batch-scheduler/pkg/custominformer"
	"github.com/batch-scheduler/batch-scheduler/pkg/resourcemanager"
)

func listerWatcher(t *testing.T, s *resourcemanager.Store) cache.ListerWatcherWithContext {
	t.Helper()
	lw, err := s.ListerWatcher(scheme.Scheme)
	if err != nil {
		t.Fatal(err)
	}
	lwc, ok := lw.(cache.ListerWatcherWithContext)
	if !ok {
		t.Fatalf("%T does not take a context", lw)
	}
	return lwc
}

// next receives one event, failing after 10s.
func next(t *testing.T, w watch.Interface) watch.Event {
	t.Helper()
	select {
	case e, ok := <-w.ResultChan():
		if !ok {
			t.Fatal("watch ended early")
		}
		return e
	case <-time.After(10 * time.Second):
		t.Fatal("no event within 10s")
	}
	return watch.Event{}
}

// waitEnded drains w until its channel is closed, failing after 10s, and
// returns what it drained.
func waitEnded(t *testing.T, w watch.Interface) []watch.Event {
	t.Helper()
	var got []watch.Event
	deadline := time.After(10 * time.Second)
	for {
		select {
		case e, ok := <-w.ResultChan():
			if !ok {
				return got
			}
			got = append(got, e)
		case <-deadline:
			t.Fatal("watch did not end within 10s")
		}
	}
}

// describe renders an event as "TYPE name rv value".
func describe(e watch.Event) string {
	c, ok := e.Object.(*v1.ConfigMap)
	if !ok {
		return fmt.Sprintf("%s %T", e.Type, e.Object)
	}
	return fmt.Sprintf("%s %s %s %s", e.Type, c.Name, c.ResourceVersion, c.Data["v"])
}

func waitNoWatchers(t *testing.T, s *resourcemanager.Store) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for s.Watchers() != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%d watchers still registered", s.Watchers())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestListerWatcherListIsTypedAndCopied(t *testing.T) {
	s, _ := newStore(t, nil)
	for _, c := range []*v1.ConfigMap{cm("ns", "b", "1"), cm("ns", "a", "2"), cm("other", "a", "3")} {
		if err := s.Create(c); err != nil {
			t.Fatal(err)
		}
	}
	lw := listerWatcher(t, s)
	obj, err := lw.ListWithContext(context.Background(), metav1.ListOptions{ResourceVersion: "0"})
	if err != nil {
		t.Fatal(err)
	}
	list, ok := obj.(*v1.ConfigMapList)
	if !ok {
		t.Fatalf("list is a %T, want *v1.ConfigMapList", obj)
	}
	if list.ResourceVersion != s.ResourceVersion() || list.Kind != "ConfigMapList" || list.APIVersion != "v1" {
		t.Fatalf("list meta = %+v %+v, store at %s", list.TypeMeta, list.ListMeta, s.ResourceVersion())
	}
	var names []string
	for _, c := range list.Items {
		names = append(names, c.Namespace+"/"+c.Name+"="+c.Data["v"])
		if c.Kind != "ConfigMap" || c.ResourceVersion == "" {
			t.Errorf("item %s: kind %q rv %q", c.Name, c.Kind, c.ResourceVersion)
		}
	}
	if got := strings.Join(names, " "); got != "ns/a=2 ns/b=1 other/a=3" {
		t.Fatalf("items = %s", got)
	}
	list.Items[0].Data["v"] = "changed"
	if o, _ := s.Get("ns", "a"); o.(*v1.ConfigMap).Data["v"] != "2" {
		t.Fatal("changing a listed object changed the store")
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := lw.ListWithContext(ctx, metav1.ListOptions{}); err == nil {
		t.Fatal("list with a cancelled context succeeded")
	}
}

func TestListerWatcherConvertsOtherGoTypes(t *testing.T) {
	s, _ := newStore(t, nil)
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"namespace": "ns", "name": "u"},
		"data":     map[string]any{"v": "x"},
	}}
	if err := s.Create(u); err != nil {
		t.Fatal(err)
	}
	lw := listerWatcher(t, s)
	obj, err := lw.ListWithContext(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if items := obj.(*v1.ConfigMapList).Items; len(items) != 1 || items[0].Data["v"] != "x" {
		t.Fatalf("items = %+v", items)
	}
	w, err := lw.WatchWithContext(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	if e := next(t, w); describe(e) != "ADDED u 2 x" {
		t.Fatalf("event = %s", describe(e))
	}
}

func TestListerWatcherWatchFromListStreamsInOrder(t *testing.T) {
	s, _ := newStore(t, nil)
	if err := s.Create(cm("ns", "a", "1")); err != nil {
		t.Fatal(err)
	}
	lw := listerWatcher(t, s)
	obj, err := lw.ListWithContext(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rv := obj.(*v1.ConfigMapList).ResourceVersion
	// A change between list and watch is replayed from the history.
	if err := s.Update(cm("ns", "a", "2")); err != nil {
		t.Fatal(err)
	}
	w, err := lw.WatchWithContext(context.Background(), metav1.ListOptions{ResourceVersion: rv})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Create(cm("ns", "b", "3")); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete("ns", "a"); err != nil {
		t.Fatal(err)
	}
	want := []string{"MODIFIED a 3 2", "ADDED b 4 3", "DELETED a 5 2"}
	for i, wnt := range want {
		if got := describe(next(t, w)); got != wnt {
			t.Fatalf("event %d = %s, want %s", i, got, wnt)
		}
	}
	w.Stop()
	w.Stop() // idempotent
	if rest := waitEnded(t, w); len(rest) != 0 {
		t.Fatalf("events after Stop: %v", rest)
	}
	waitNoWatchers(t, s)
}

func TestListerWatcherWatchFromZeroStartsWithAdded(t *testing.T) {
	s, _ := newStore(t, nil)
	for _, n := range []string{"b", "a"} {
		if err := s.Create(cm("ns", n, n)); err != nil {
			t.Fatal(err)
		}
	}
	lw := listerWatcher(t, s)
	for _, rv := range []string{"", "0"} {
		w, err := lw.WatchWithContext(context.Background(), metav1.ListOptions{ResourceVersion: rv})
		if err != nil {
			t.Fatal(err)
		}
		got := []string{describe(next(t, w)), describe(next(t, w))}
		if strings.Join(got, ", ") != "ADDED a 3 a, ADDED b 2 b" {
			t.Fatalf("rv %q: events %v", rv, got)
		}
		w.Stop()
		waitEnded(t, w)
	}
}

func TestListerWatcherTooOldIsExpired(t *testing.T) {
	s, _ := newStore(t, nil) // history of 10
	for i := 0; i < 15; i++ {
		if err := s.Create(cm("ns", fmt.Sprint(i), "")); err != nil {
			t.Fatal(err)
		}
	}
	lw := listerWatcher(t, s)
	w, err := lw.WatchWithContext(context.Background(), metav1.ListOptions{ResourceVersion: "2"})
	if err != nil {
		t.Fatal(err)
	}
	got := waitEnded(t, w)
	if len(got) != 1 || got[0].Type != watch.Error {
		t.Fatalf("events = %v, want one ERROR", got)
	}
	st, ok := got[0].Object.(*metav1.Status)
	if !ok || st.Code != 410 || st.Reason != metav1.StatusReasonExpired {
		t.Fatalf("error object = %#v", got[0].Object)
	}
	if !apierrors.IsResourceExpired(apierrors.FromObject(got[0].Object)) {
		t.Fatal("reflector would not see an Expired error")
	}
	w.Stop()
	if s.Watchers() != 0 {
		t.Fatal("an expired watch stayed registered")
	}
}

func TestListerWatcherBadOptionsAndScheme(t *testing.T) {
	s, _ := newStore(t, nil)
	lw := listerWatcher(t, s)
	neg := int64(-1)
	for _, o := range []metav1.ListOptions{{ResourceVersion: "x"}, {ResourceVersion: "-3"}, {TimeoutSeconds: &neg}} {
		if _, err := lw.WatchWithContext(context.Background(), o); !apierrors.IsBadRequest(err) {
			t.Errorf("options %+v: error %v, want BadRequest", o, err)
		}
	}
	if _, err := s.ListerWatcher(runtime.NewScheme()); err == nil || !strings.Contains(err.Error(), "no type for /v1, Kind=ConfigMap") {
		t.Errorf("empty scheme: error %v", err)
	}
	if _, err := s.ListerWatcher(nil); err == nil {
		t.Error("nil scheme accepted")
	}
}

func TestListerWatcherWatchEnds(t *testing.T) {
	t.Run("context", func(t *testing.T) {
		s, _ := newStore(t, nil)
		ctx, cancel := context.WithCancel(context.Background())
		w, err := listerWatcher(t, s).WatchWithContext(ctx, metav1.ListOptions{ResourceVersion: s.ResourceVersion()})
		if err != nil {
			t.Fatal(err)
		}
		waitFor := time.Now().Add(10 * time.Second)
		for s.Watchers() != 1 && time.Now().Before(waitFor) {
			time.Sleep(time.Millisecond)
		}
		cancel()
		waitEnded(t, w)
		waitNoWatchers(t, s)
	})
	t.Run("timeoutSeconds", func(t *testing.T) {
		s, _ := newStore(t, nil)
		one := int64(1)
		start := time.Now()
		w, err := listerWatcher(t, s).WatchWithContext(context.Background(),
			metav1.ListOptions{ResourceVersion: s.ResourceVersion(), TimeoutSeconds: &one})
		if err != nil {
			t.Fatal(err)
		}
		waitEnded(t, w)
		if d := time.Since(start); d < 900*time.Millisecond {
			t.Fatalf("watch ended after %v, before its timeout", d)
		}
		waitNoWatchers(t, s)
	})
	t.Run("store closed", func(t *testing.T) {
		s, _ := newStore(t, nil)
		w, err := listerWatcher(t, s).WatchWithContext(context.Background(), metav1.ListOptions{ResourceVersion: s.ResourceVersion()})
		if err != nil {
			t.Fatal(err)
		}
		s.Close()
		waitEnded(t, w)
		// A watch on a closed store ends at once.
		w, err = listerWatcher(t, s).WatchWithContext(context.Background(), metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		waitEnded(t, w)
	})
	t.Run("stop while blocked sending", func(t *testing.T) {
		s, _ := newStore(t, nil)
		w, err := listerWatcher(t, s).WatchWithContext(context.Background(), metav1.ListOptions{ResourceVersion: s.ResourceVersion()})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Create(cm("ns", "a", "")); err != nil {
			t.Fatal(err)
		}
		time.Sleep(20 * time.Millisecond) // let the pump block on the unread event
		w.Stop()
		waitEnded(t, w)
		waitNoWatchers(t, s)
	})
}

func TestListerWatcherBookmarks(t *testing.T) {
	s, _ := newStore(t, func(o *resourcemanager.Options) { o.BookmarkInterval = 20 * time.Millisecond })
	if err := s.Create(cm("ns", "a", "")); err != nil {
		t.Fatal(err)
	}
	w, err := listerWatcher(t, s).WatchWithContext(context.Background(),
		metav1.ListOptions{ResourceVersion: "1", AllowWatchBookmarks: true})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	if e := next(t, w); describe(e) != "ADDED a 2 " {
		t.Fatalf("event = %s", describe(e))
	}
	e := next(t, w)
	c, ok := e.Object.(*v1.ConfigMap)
	if e.Type != watch.Bookmark || !ok || c.ResourceVersion != "2" {
		t.Fatalf("event = %s %#v, want a BOOKMARK at 2", e.Type, e.Object)
	}
}

func TestListerWatcherSlowWatchResumes(t *testing.T) {
	s, _ := newStore(t, func(o *resourcemanager.Options) { o.WatcherBuffer = 2; o.HistorySize = 100 })
	lw := listerWatcher(t, s)
	w, err := lw.WatchWithContext(context.Background(), metav1.ListOptions{ResourceVersion: s.ResourceVersion()})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 10; i++ {
		if err := s.Create(cm("ns", fmt.Sprint(i), "")); err != nil {
			t.Fatal(err)
		}
	}
	if s.SlowWatchersClosed() == 0 {
		t.Fatal("the unread watcher was not closed as slow")
	}
	// The closed watch delivers what it holds and ends; resuming from the
	// last resourceVersion seen replays the rest, with nothing lost or
	// repeated.
	var names []string
	last := ""
	for _, e := range waitEnded(t, w) {
		names = append(names, e.Object.(*v1.ConfigMap).Name)
		last = e.Object.(*v1.ConfigMap).ResourceVersion
	}
	w, err = lw.WatchWithContext(context.Background(), metav1.ListOptions{ResourceVersion: last})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	for len(names) < 10 {
		names = append(names, next(t, w).Object.(*v1.ConfigMap).Name)
	}
	if got := strings.Join(names, ","); got != "0,1,2,3,4,5,6,7,8,9" {
		t.Fatalf("names = %s", got)
	}
}

func TestListerWatcherDrivesAnInformer(t *testing.T) {
	s, _ := newStore(t, func(o *resourcemanager.Options) { o.HistorySize = 1000 })
	if err := s.Create(cm("ns", "pre", "")); err != nil {
		t.Fatal(err)
	}
	lw, err := s.ListerWatcher(scheme.Scheme)
	if err != nil {
		t.Fatal(err)
	}
	inf := custominformer.New(lw, &v1.ConfigMap{}, custominformer.Options{Name: t.Name()})
	f := &informerFixture{inf: inf}
	rec := func(kind string, o any) {
		if d, ok := o.(cache.DeletedFinalStateUnknown); ok {
			o = d.Obj
		}
		c := o.(*v1.ConfigMap)
		f.mu.Lock()
		f.events = append(f.events, fmt.Sprintf("%s %s %s", kind, c.Name, c.ResourceVersion))
		f.mu.Unlock()
	}
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { rec("add", o) },
		UpdateFunc: func(_, o any) { rec("update", o) },
		DeleteFunc: func(o any) { rec("delete", o) },
	}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); inf.RunWithContext(ctx) }()
	defer func() { cancel(); <-done; waitNoWatchers(t, s) }()
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		t.Fatal("informer did not sync")
	}
	want := []string{"add pre 2"}
	for i := 0; i < 40; i++ {
		c := cm("ns", fmt.Sprintf("o%d", i%6), fmt.Sprint(i))
		kind := "add"
		var err error
		switch _, ok := s.Get("ns", c.Name); {
		case ok && i%4 == 0:
			err, kind = s.Delete("ns", c.Name), "delete"
			c.ResourceVersion = s.ResourceVersion()
		case ok:
			err, kind = s.Update(c), "update"
		default:
			err = s.Create(c)
		}
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, fmt.Sprintf("%s %s %s", kind, c.Name, c.ResourceVersion))
	}
	waitConverged(t, s, f)
	deadline := time.Now().Add(10 * time.Second)
	for len(f.eventLog()) < len(want) && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if got := f.eventLog(); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("events:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
