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

package chaos

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
)

// fakeAPI answers binds with 201, watches with a stream that sends one
// line and then waits, and "expired" watches with a 410 event.
func fakeAPI(t *testing.T) (*httptest.Server, *atomic.Int64) {
	var hits atomic.Int64
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		switch {
		case strings.HasSuffix(r.URL.Path, "/binding"):
			w.WriteHeader(http.StatusCreated)
		case isWatch(r) && strings.Contains(r.URL.Path, "expired"):
			_, _ = io.WriteString(w, `{"type":"ERROR","object":{"kind":"Status","code":410,"message":"too old resource version: 1 (5)"}}`+"\n")
		case isWatch(r):
			_, _ = io.WriteString(w, `{"type":"ADDED"}`+"\n")
			w.(http.Flusher).Flush()
			<-r.Context().Done()
		default:
			_, _ = io.WriteString(w, "{}")
		}
	}))
	t.Cleanup(srv.Close)
	return srv, &hits
}

func newTestProxy(t *testing.T) (*FaultProxy, *atomic.Int64) {
	t.Helper()
	api, hits := fakeAPI(t)
	p, err := NewFaultProxy(&rest.Config{Host: api.URL, TLSClientConfig: rest.TLSClientConfig{Insecure: true}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return p, hits
}

func do(t *testing.T, method, url string) int {
	t.Helper()
	req, _ := http.NewRequestWithContext(t.Context(), method, url, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

func TestProxyLogsBindsAndInjectsErrors(t *testing.T) {
	p, hits := newTestProxy(t)
	bind := p.URL + "/api/v1/namespaces/ns/pods/p1/binding"
	if code := do(t, http.MethodPost, bind); code != http.StatusCreated {
		t.Fatalf("bind through the proxy = %d, want 201", code)
	}
	if len(p.DoubleBinds()) != 0 {
		t.Fatalf("one bind reported as double: %v", p.DoubleBinds())
	}
	do(t, http.MethodPost, bind)
	// The proxy counts a bind once its answer went out: poll.
	err := wait.PollUntilContextTimeout(t.Context(), 10*time.Millisecond, 5*time.Second, true, func(context.Context) (bool, error) {
		return p.DoubleBinds()["ns/p1"] == 2, nil
	})
	if err != nil {
		t.Errorf("DoubleBinds() = %v, want ns/p1: 2", p.DoubleBinds())
	}
	before := hits.Load()
	p.FailRequests(1, IsBind, http.StatusInternalServerError)
	if code := do(t, http.MethodPost, bind); code != http.StatusInternalServerError {
		t.Errorf("bind with failures on = %d, want 500", code)
	}
	if code := do(t, http.MethodGet, p.URL+"/api/v1/pods"); code != http.StatusOK {
		t.Errorf("a list, which the failures do not match, = %d, want 200", code)
	}
	if hits.Load() != before+1 || p.Stats().Injected != 1 || p.Binds() != 2 {
		t.Errorf("failed bind reached the API server or was not counted: hits %d->%d, stats %+v", before, hits.Load(), p.Stats())
	}
	p.FailRequests(0, nil)
	if code := do(t, http.MethodPost, bind); code != http.StatusCreated {
		t.Errorf("bind with failures off = %d, want 201", code)
	}
}

func TestProxyCutsAndHoldsWatches(t *testing.T) {
	p, _ := newTestProxy(t)
	open := func() (*bufio.Reader, func()) {
		ctx, cancel := context.WithCancel(t.Context())
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, p.URL+"/api/v1/pods?watch=true", nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return bufio.NewReader(resp.Body), func() { cancel(); resp.Body.Close() }
	}
	r, closeIt := open()
	defer closeIt()
	if _, err := r.ReadString('\n'); err != nil {
		t.Fatalf("first event through the proxy: %v", err)
	}
	if n := p.CutWatches(); n != 1 {
		t.Errorf("CutWatches() = %d, want 1", n)
	}
	if _, err := r.ReadString('\n'); err == nil || err == io.EOF {
		t.Errorf("reading a cut watch: %v, want a broken stream (not a clean end)", err)
	}

	p.HoldWatches(true)
	got := make(chan error, 1)
	go func() {
		r, closeIt := open()
		defer closeIt()
		_, err := r.ReadString('\n')
		got <- err
	}()
	select {
	case err := <-got:
		t.Fatalf("a held watch got an answer (%v)", err)
	case <-time.After(300 * time.Millisecond):
	}
	p.HoldWatches(false)
	if err := <-got; err != nil {
		t.Errorf("the released watch: %v", err)
	}

	if code := do(t, http.MethodGet, p.URL+"/api/v1/expired?watch=true"); code != http.StatusOK {
		t.Fatalf("expired watch = %d", code)
	}
	err := wait.PollUntilContextTimeout(t.Context(), 10*time.Millisecond, 5*time.Second, true, func(context.Context) (bool, error) {
		return p.Stats().Expired == 1, nil
	})
	if err != nil {
		t.Errorf("Stats().Expired = %d after one 410 event in a stream, want 1", p.Stats().Expired)
	}
}
