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
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/batch-scheduler/batch-scheduler/examples/allocator/internal/frameworks"
	"github.com/batch-scheduler/batch-scheduler/pkg/apis/batchscheduler/v1alpha1"
	"github.com/batch-scheduler/batch-scheduler/pkg/demand"
	"github.com/batch-scheduler/batch-scheduler/pkg/resources"
)

// harness drives an Allocator round by round without Run: nodes come
// from an indexer the test edits, demand reports from one server that
// serves, at /demand/<framework>, whatever the test last set (503 when
// nothing), and the clock advances one second per round.
type harness struct {
	t     *testing.T
	a     *Allocator
	nodes cache.Indexer
	srv   *httptest.Server
	clock time.Time

	mu      sync.Mutex
	reports map[string]*demand.Report
}

// setup configures newHarness.
type setup struct {
	nodes       []*v1.Node
	frameworks  []string // each with a demand URL on the harness's server
	registry    *frameworks.File
	stateFile   string
	idleTimeout time.Duration
}

func newHarness(t *testing.T, s setup) *harness {
	t.Helper()
	h := &harness{t: t, reports: map[string]*demand.Report{},
		nodes: cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{}),
		clock: time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)}
	h.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.mu.Lock()
		rep := h.reports[strings.TrimPrefix(r.URL.Path, "/demand/")]
		h.mu.Unlock()
		if rep == nil {
			http.Error(w, "no report", http.StatusServiceUnavailable)
			return
		}
		_ = json.NewEncoder(w).Encode(rep)
	}))
	t.Cleanup(h.srv.Close)
	reg := s.registry
	if reg == nil {
		reg = &frameworks.File{}
		for _, f := range s.frameworks {
			reg.Frameworks = append(reg.Frameworks, frameworks.Framework{Name: f, DemandURL: h.url(f)})
		}
	}
	if s.idleTimeout == 0 {
		s.idleTimeout = 3 * time.Second
	}
	a, err := New(fake.NewClientset(), Options{Name: "test", Interval: time.Second, IdleTimeout: s.idleTimeout,
		DemandTimeout: 5 * time.Second, StateFile: s.stateFile, Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	a.nodes = corelisters.NewNodeLister(h.nodes)
	a.now = func() time.Time { return h.clock }
	h.a = a
	for _, n := range s.nodes {
		h.setNode(n)
	}
	return h
}

// url is framework f's demand URL.
func (h *harness) url(f string) string { return h.srv.URL + "/demand/" + f }

func (h *harness) setNode(n *v1.Node) {
	h.t.Helper()
	if err := h.nodes.Update(n); err != nil {
		h.t.Fatal(err)
	}
}

func (h *harness) deleteNode(name string) {
	h.t.Helper()
	if err := h.nodes.Delete(&v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil {
		h.t.Fatal(err)
	}
}

// report sets what f's demand URL serves; nil makes it fail.
func (h *harness) report(f string, r *demand.Report) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.reports[f] = r
}

// round runs one round, a second after the last.
func (h *harness) round() {
	h.clock = h.clock.Add(time.Second)
	h.a.round(h.t.Context())
}

// grant is the published grant name, nil if there is none.
func (h *harness) grant(name string) *v1alpha1.Grant {
	o, ok := h.a.Store().Get("", name)
	if !ok {
		return nil
	}
	return o.(*v1alpha1.Grant)
}

// cpu is what grant name gives, in millicores: 0 when Revoked, -1 when it
// is not published.
func (h *harness) cpu(name string) int64 {
	g := h.grant(name)
	if g == nil {
		return -1
	}
	return valueOf(g).MilliCPU
}

// rv is grant name's resourceVersion ("" when not published).
func (h *harness) rv(name string) string {
	if g := h.grant(name); g != nil {
		return g.ResourceVersion
	}
	return ""
}

// observed is what framework f acknowledges once it applied every grant
// published for it now.
func (h *harness) observed(f string) map[string]string {
	objs, _ := h.a.Store().List("")
	out := map[string]string{}
	for _, o := range objs {
		if g := o.(*v1alpha1.Grant); g.Spec.Framework == f {
			out[g.Name] = g.ResourceVersion
		}
	}
	return out
}

// wantCPU checks the CPU of grants (see cpu).
func (h *harness) wantCPU(step string, want map[string]int64) {
	h.t.Helper()
	names := make([]string, 0, len(want))
	for n := range want {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if got := h.cpu(n); got != want[n] {
			h.t.Errorf("%s: %s = %dm, want %dm", step, n, got, want[n])
		}
	}
}

// status is the last round's GET /allocation.
func (h *harness) status() Status {
	h.a.mu.Lock()
	defer h.a.mu.Unlock()
	return h.a.status
}

// get serves GET path with the allocator's handler.
func (h *harness) get(path string) (int, string) {
	rec := httptest.NewRecorder()
	h.a.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	return rec.Code, rec.Body.String()
}

// metrics is the text of the allocator's /metrics.
func (h *harness) metrics() string {
	rec := httptest.NewRecorder()
	h.a.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	return rec.Body.String()
}

// makeNode is a node with cpu cores and 8Gi of memory.
func makeNode(name string, cpu string) *v1.Node {
	return &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: v1.NodeStatus{Allocatable: v1.ResourceList{
		v1.ResourceCPU: resource.MustParse(cpu), v1.ResourceMemory: resource.MustParse("8Gi")}}}
}

// reportBuilder builds demand reports: MakeReport().Used("n1", "1").
// Acks(h.observed("a")).Obj(). A report is synced unless Unsynced is
// called.
type reportBuilder struct{ r demand.Report }

func MakeReport() *reportBuilder {
	return &reportBuilder{r: demand.Report{Synced: true}}
}

func (b *reportBuilder) Unsynced() *reportBuilder { b.r.Synced = false; return b }

// Used adds cpu (a quantity) used on node.
func (b *reportBuilder) Used(node, cpu string) *reportBuilder {
	if b.r.Used == nil {
		b.r.Used = map[string]v1.ResourceList{}
	}
	b.r.Used[node] = v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpu)}
	return b
}

// Hungry sets unmet CPU demand in units of unit.
func (b *reportBuilder) Hungry(unmet, unit string) *reportBuilder {
	b.r.Unmet = v1.ResourceList{v1.ResourceCPU: resource.MustParse(unmet)}
	b.r.LargestUnit = v1.ResourceList{v1.ResourceCPU: resource.MustParse(unit)}
	b.r.Waiting = 1
	return b
}

// Acks acknowledges the given grant versions (grant name -> resourceVersion).
func (b *reportBuilder) Acks(observed map[string]string) *reportBuilder {
	if b.r.ObservedGrants == nil {
		b.r.ObservedGrants = map[string]string{}
	}
	for k, v := range observed {
		b.r.ObservedGrants[k] = v
	}
	return b
}

// Ack acknowledges one version.
func (b *reportBuilder) Ack(grant, rv string) *reportBuilder {
	return b.Acks(map[string]string{grant: rv})
}

func (b *reportBuilder) Obj() *demand.Report {
	r := b.r
	r.Time = metav1.NewTime(time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC))
	return &r
}

// cpuOf is a Resource of cpu millicores.
func cpuOf(milli int64) resources.Resource { return resources.Resource{MilliCPU: milli} }
