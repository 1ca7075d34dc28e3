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

package allocator

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/batch-scheduler/batch-scheduler/examples/allocator/internal/frameworks"
	"github.com/batch-scheduler/batch-scheduler/pkg/apis/batchscheduler/v1alpha1"
	"github.com/batch-scheduler/batch-scheduler/pkg/demand"
)

func testNode(name string) *v1.Node {
	return &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: v1.NodeStatus{Allocatable: v1.ResourceList{
		v1.ResourceCPU: resource.MustParse("4"), v1.ResourceMemory: resource.MustParse("4Gi")}}}
}

func newTest(t *testing.T, reg *frameworks.File, state string) (*Allocator, *httptest.Server, *fake.Clientset) {
	t.Helper()
	client := fake.NewClientset(testNode("n1"))
	a, err := New(client, Options{Name: "test", Interval: 50 * time.Millisecond, IdleTimeout: time.Second,
		DemandTimeout: time.Second, StateFile: state, Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	srv := httptest.NewServer(a.Handler())
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
		srv.Close()
	})
	return a, srv, client
}

func call(t *testing.T, srv *httptest.Server, method, path, body string) (int, string) {
	t.Helper()
	req, _ := http.NewRequestWithContext(t.Context(), method, srv.URL+path, strings.NewReader(body))
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestAdminAPI(t *testing.T) {
	state := filepath.Join(t.TempDir(), "state.yaml")
	_, srv, _ := newTest(t, &frameworks.File{Frameworks: []frameworks.Framework{{Name: "a"}}}, state)
	tests := []struct {
		method, path, body string
		code               int
		field              string // the error must name it
	}{
		{"PUT", "/frameworks/b", `{"weight":0}`, 400, "weight"},
		{"PUT", "/frameworks/b", `{"wieght":2}`, 400, "wieght"},
		{"PUT", "/frameworks/b", `{"weight":"2"}`, 400, "weight"},
		{"PUT", "/frameworks/b", `{"demandURL":"ftp://x"}`, 400, "demandURL"},
		{"PUT", "/frameworks/b", `{"demandURL":"https://x/demand","caFile":"/nonexistent/ca.crt"}`, 400, "caFile"},
		{"PUT", "/frameworks/B_1", `{}`, 400, "name"},
		{"PUT", "/frameworks/b", `{"weight":2}`, 201, ""},
		{"PUT", "/frameworks/b", `{"weight":3}`, 200, ""},
		{"DELETE", "/frameworks/zz", ``, 404, "name"},
		{"POST", "/grants/nodot/revoke", ``, 400, "name"},
		{"POST", "/grants/zz.n1/revoke", ``, 404, "name"},
		{"POST", "/grants/a.n1/revoke", `{"msg":"x"}`, 400, "msg"},
		{"POST", "/grants/a.n1/revoke", `{"message":"maintenance"}`, 200, ""},
		{"DELETE", "/grants/b.n1/revocation", ``, 404, "name"},
		{"GET", "/healthz", ``, 200, ""},
	}
	for _, tt := range tests {
		code, body := call(t, srv, tt.method, tt.path, tt.body)
		if code != tt.code {
			t.Errorf("%s %s %s: HTTP %d %s, want %d", tt.method, tt.path, tt.body, code, body, tt.code)
			continue
		}
		if tt.field != "" {
			var e apiError
			if err := json.Unmarshal([]byte(body), &e); err != nil || e.Field != tt.field || (tt.field != "name" && !strings.Contains(e.Error, tt.field)) {
				t.Errorf("%s %s %s: error %s, want one naming %q", tt.method, tt.path, tt.body, body, tt.field)
			}
		}
	}
	// Every change is in the state file.
	f, err := frameworks.Load(state)
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Frameworks) != 2 || f.Frameworks[1].EffectiveWeight() != 3 || len(f.Revoked) != 1 || f.Revoked[0].Message != "maintenance" {
		t.Errorf("state file = %+v, want a, b (weight 3) and a.n1 revoked", f)
	}
	if code, _ := call(t, srv, "DELETE", "/grants/a.n1/revocation", ""); code != 204 {
		t.Errorf("lifting the revocation: HTTP %d", code)
	}
	if code, _ := call(t, srv, "DELETE", "/frameworks/b", ""); code != 204 {
		t.Errorf("deleting b: HTTP %d", code)
	}
	if f, err = frameworks.Load(state); err != nil || len(f.Frameworks) != 1 || len(f.Revoked) != 0 {
		t.Errorf("state file = %+v, %v; want only a", f, err)
	}
}

func TestUnreadableReportKeepsGrants(t *testing.T) {
	var healthy atomic.Bool
	healthy.Store(true)
	// started is the allocator once newTest returned it: it may read the
	// report before (its first round starts inside newTest).
	var started atomic.Pointer[Allocator]
	// a applies every grant as soon as it is published and acknowledges
	// it in its next report.
	demandSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		a := started.Load()
		if !healthy.Load() || a == nil {
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		r := demand.Report{Synced: true, Used: map[string]v1.ResourceList{"n1": {v1.ResourceCPU: resource.MustParse("1")}},
			ObservedGrants: map[string]string{}}
		objs, _ := a.Store().List("")
		for _, o := range objs {
			if g := o.(*v1alpha1.Grant); g.Spec.Framework == "a" {
				r.ObservedGrants[g.Name] = g.ResourceVersion
			}
		}
		_ = json.NewEncoder(w).Encode(&r)
	}))
	defer demandSrv.Close()
	a, srv, client := newTest(t, &frameworks.File{Frameworks: []frameworks.Framework{
		{Name: "a", DemandURL: demandSrv.URL + "/demand"}, {Name: "b"},
	}}, "")
	started.Store(a)
	cpu := func(name string) int64 {
		o, ok := a.Store().Get("", name)
		if !ok {
			return -1
		}
		return o.(*v1alpha1.Grant).Spec.Resources.Cpu().MilliValue()
	}
	poll := func(what string, cond func() bool) {
		t.Helper()
		if err := wait.PollUntilContextTimeout(t.Context(), 20*time.Millisecond, 10*time.Second, true,
			func(context.Context) (bool, error) { return cond(), nil }); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	// Baseline: a uses 1 CPU; the other 3 are split 1:1.
	poll("baseline", func() bool { return cpu("a.n1") == 2500 && cpu("b.n1") == 1500 })
	healthy.Store(false)
	// Node n1 grows: b gets its part, a keeps its grant while unreadable.
	n := testNode("n1")
	n.Status.Allocatable[v1.ResourceCPU] = resource.MustParse("8")
	if _, err := client.CoreV1().Nodes().UpdateStatus(t.Context(), n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	poll("a unreadable", func() bool { return cpu("b.n1") == 5500 })
	if got := cpu("a.n1"); got != 2500 {
		t.Errorf("a.n1 = %dm while a's report is unreadable, want 2500m unchanged", got)
	}
	_, body := call(t, srv, "GET", "/allocation", "")
	if !strings.Contains(body, "HTTP 503") || !strings.Contains(body, demandSrv.URL) {
		t.Errorf("/allocation = %s, want a's last error naming the URL", body)
	}
	_, metricsText := call(t, srv, "GET", "/metrics", "")
	if !strings.Contains(metricsText, `allocator_demand_report_errors_total{framework="a"}`) {
		t.Errorf("/metrics lacks the report error count of a")
	}
	// The node goes: its grants drop to zero versions, kept while their
	// frameworks may believe more. b never reports, so its zero version
	// stays; a, readable again, acknowledges its zero version, which is
	// then deleted.
	if err := client.CoreV1().Nodes().Delete(t.Context(), "n1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	poll("zero versions", func() bool { return cpu("a.n1") == 0 && cpu("b.n1") == 0 })
	for _, name := range []string{"a.n1", "b.n1"} {
		o, _ := a.Store().Get("", name)
		if g := o.(*v1alpha1.Grant); len(g.Spec.Resources) != 0 || g.Status.Phase != v1alpha1.GrantActive {
			t.Errorf("%s after its node went = %+v %+v, want Active with no resources", name, g.Spec.Resources, g.Status)
		}
	}
	healthy.Store(true)
	poll("a's zero version deleted once acknowledged", func() bool { return cpu("a.n1") == -1 })
	if got := cpu("b.n1"); got != 0 {
		t.Errorf("b.n1 = %dm, want its zero version kept: b never acknowledged it", got)
	}
}
