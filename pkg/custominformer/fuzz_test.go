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
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"

	"github.com/batch-scheduler/batch-scheduler/pkg/apis/batchscheduler/v1alpha1"
)

// cannedServer answers every request with the body last set.
type cannedServer struct {
	srv  *httptest.Server
	mu   sync.Mutex // guards body
	body []byte
}

func newCannedServer(tb testing.TB) *cannedServer {
	c := &cannedServer{}
	c.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		c.mu.Lock()
		body := c.body
		c.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(body)
	}))
	tb.Cleanup(c.srv.Close)
	return c
}

func (c *cannedServer) set(body []byte) {
	c.mu.Lock()
	c.body = body
	c.mu.Unlock()
}

// fuzzListWatch is the http source's ListerWatcher behind the check every
// custom informer has, against srv, with small limits so that the size
// checks are reachable.
func fuzzListWatch(tb testing.TB, srv *cannedServer) *checkedListWatch {
	tb.Helper()
	// QPS < 0: no client-side rate limit, which would throttle fuzzing.
	lw, err := NewListWatchWithLimits(&rest.Config{Host: srv.srv.URL, QPS: -1}, v1alpha1.SchemeGroupVersion.WithResource(v1alpha1.ExternalWorkloadsResource),
		"", 5*time.Second, &v1alpha1.ExternalWorkload{}, Limits{MaxObjectBytes: 2048, MaxListBytes: 16 << 10})
	if err != nil {
		tb.Fatal(err)
	}
	return newCheckedListWatch(lw, &v1alpha1.ExternalWorkload{}, "fuzz", unregisteredMetrics().forSource("fuzz"))
}

// checkStored fails unless obj may go into the informer's store.
func checkStored(t *testing.T, obj any, bookmark bool) {
	t.Helper()
	w, ok := obj.(*v1alpha1.ExternalWorkload)
	if !ok {
		t.Fatalf("object of type %T passed the check", obj)
	}
	if w.ResourceVersion == "" || (!bookmark && w.Name == "") {
		t.Fatalf("object without name or resourceVersion passed the check: %+v", w.ObjectMeta)
	}
}

// FuzzWatchDecode feeds arbitrary bytes to the informer as a watch stream:
// the informer must never panic or hang, and only valid objects may pass.
func FuzzWatchDecode(f *testing.F) {
	for _, seed := range []string{
		watchLine("ADDED", `{"apiVersion":"batch-scheduler.io/v1alpha1","kind":"ExternalWorkload","metadata":{"name":"w1","resourceVersion":"2"},"spec":{"nodeName":"h"}}`),
		watchLine("BOOKMARK", `{"apiVersion":"batch-scheduler.io/v1alpha1","kind":"ExternalWorkload","metadata":{"resourceVersion":"9"}}`),
		watchLine("ERROR", `{"kind":"Status","apiVersion":"v1","status":"Failure","code":410,"reason":"Expired","message":"too old"}`),
		watchLine("DELETED", `{"apiVersion":"v1","kind":"Node","metadata":{"name":"n","resourceVersion":"3"}}`),
		`{"type":"ADDED","object":{"metadata":nope}}`,
		`{"type":"ADDED"}{"type":"MODIFIED","object":null}`,
		`[1,2,3]`,
		"",
	} {
		f.Add([]byte(seed))
	}
	srv := newCannedServer(f)
	lw := fuzzListWatch(f, srv)
	f.Fuzz(func(t *testing.T, data []byte) {
		srv.set(data)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		w, err := lw.WatchWithContext(ctx, metav1.ListOptions{ResourceVersion: "1"})
		if err != nil {
			return
		}
		defer w.Stop()
		for {
			select {
			case e, ok := <-w.ResultChan():
				if !ok {
					return
				}
				switch e.Type {
				case watch.Error:
				case watch.Added, watch.Modified, watch.Deleted, watch.Bookmark:
					checkStored(t, e.Object, e.Type == watch.Bookmark)
				default:
					t.Fatalf("event of type %q passed the check", e.Type)
				}
			case <-ctx.Done():
				t.Fatal("the watch did not end with its stream")
			}
		}
	})
}

// FuzzListDecode feeds arbitrary bytes to the informer as a list
// response: either an error or a list of valid objects.
func FuzzListDecode(f *testing.F) {
	for _, seed := range []string{
		listOf("5", goodItem),
		listOf("5"),
		listOf("", goodItem),
		`{"apiVersion":"batch-scheduler.io/v1alpha1","kind":"GrantList","metadata":{"resourceVersion":"3"},"items":[]}`,
		`{"kind":"Status","apiVersion":"v1","status":"Failure","code":410,"reason":"Expired"}`,
		`{"items":[{"metadata":{"name":"a","resourceVersion":"1"}}],"metadata":{"resourceVersion":"1"}}`,
		`null`,
		`{"kind":"ExternalWorkloadList","items":{}}`,
	} {
		f.Add([]byte(seed))
	}
	srv := newCannedServer(f)
	lw := fuzzListWatch(f, srv)
	f.Fuzz(func(t *testing.T, data []byte) {
		srv.set(data)
		obj, err := lw.ListWithContext(context.Background(), metav1.ListOptions{})
		if err != nil {
			return
		}
		list, ok := obj.(*v1alpha1.ExternalWorkloadList)
		if !ok {
			t.Fatalf("list of type %T passed the check", obj)
		}
		if list.ResourceVersion == "" {
			t.Fatal("list without resourceVersion passed the check")
		}
		for i := range list.Items {
			checkStored(t, &list.Items[i], false)
		}
	})
}
