package allocator

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/batch-scheduler/batch-scheduler/examples/allocator/internal/drf"
	"github.com/batch-scheduler/batch-scheduler/examples/allocator/internal/frameworks"
	"github.com/batch-scheduler/batch-scheduler/pkg/apis/batchscheduler/v1alpha1"
	"github.com/batch-scheduler/batch-scheduler/pkg/resources"
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
	demandSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if healthy.Load() {
			_, _ = io.WriteString(w, `{"used":{"n1":{"cpu":"1"}}}`)
			return
		}
		http.Error(w, "down", http.StatusServiceUnavailable)
	}))
	defer demandSrv.Close()
	a, srv, client := newTest(t, &frameworks.File{Frameworks: []frameworks.Framework{
		{Name: "a", DemandURL: demandSrv.URL + "/demand"}, {Name: "b"},
	}}, "")
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
	// The node goes: its grants go.
	if err := client.CoreV1().Nodes().Delete(t.Context(), "n1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	poll("node deleted", func() bool { objs, _ := a.Store().List(""); return len(objs) == 0 })
}

// Capacity that moves between two grants of a node leaves the one before
// it reaches the other: the store takes the shrink first, so that a
// framework watching the grants never sees the node over-committed.
func TestPublishShrinksBeforeItGrows(t *testing.T) {
	a, err := New(fake.NewClientset(testNode("n1")), Options{Name: "test", Interval: time.Second, IdleTimeout: time.Second,
		DemandTimeout: time.Second, Registry: &frameworks.File{}})
	if err != nil {
		t.Fatal(err)
	}
	cpu := func(milli int64) resources.Resource { return resources.Resource{MilliCPU: milli, Memory: 1 << 30} }
	in := drf.Input{Now: time.Now(), Nodes: []drf.Node{{Name: "n1", Allocatable: cpu(4000)}},
		Frameworks: []drf.Framework{{Name: "batch"}, {Name: "idle"}}}
	rv := func(name string) int {
		t.Helper()
		o, ok := a.Store().Get("", name)
		if !ok {
			t.Fatalf("grant %s is not published", name)
		}
		n, err := strconv.Atoi(o.(*v1alpha1.Grant).ResourceVersion)
		if err != nil {
			t.Fatalf("grant %s: resourceVersion: %v", name, err)
		}
		return n
	}
	// Everything to idle; then most of it moves to batch, whose grant
	// sorts first by name.
	a.publish(in, drf.Result{Grants: map[drf.Key]drf.Grant{{Framework: "idle", Node: "n1"}: {Resources: cpu(4000)}}}, nil)
	a.publish(in, drf.Result{Grants: map[drf.Key]drf.Grant{
		{Framework: "batch", Node: "n1"}: {Resources: cpu(3000)},
		{Framework: "idle", Node: "n1"}:  {Resources: cpu(1000)},
	}}, nil)
	if idle, batch := rv("idle.n1"), rv("batch.n1"); idle > batch {
		t.Errorf("batch.n1 was written (resourceVersion %d) before idle.n1 shrank (%d)", batch, idle)
	}
	// And back: batch shrinks before idle grows.
	a.publish(in, drf.Result{Grants: map[drf.Key]drf.Grant{
		{Framework: "batch", Node: "n1"}: {Resources: cpu(1000)},
		{Framework: "idle", Node: "n1"}:  {Resources: cpu(3000)},
	}}, nil)
	if idle, batch := rv("idle.n1"), rv("batch.n1"); batch > idle {
		t.Errorf("idle.n1 grew (resourceVersion %d) before batch.n1 shrank (%d)", idle, batch)
	}
}
