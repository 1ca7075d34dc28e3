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
	v1 "k8s.io/api/core/v1"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/batch-scheduler/batch-scheduler/examples/allocator/internal/drf"
	"github.com/batch-scheduler/batch-scheduler/examples/allocator/internal/frameworks"
	"github.com/batch-scheduler/batch-scheduler/pkg/apis/batchscheduler/v1alpha1"
	"github.com/batch-scheduler/batch-scheduler/pkg/resources"
)

// shrunk brings a harness to where a's idle grant has just been shrunk to
// lend to b: node n1 has 4 cpus; a runs 1 cpu under a 2.5 cpu grant it
// acknowledged, b uses its whole 1.5 and wants 2.5 more in units of 0.5.
// After the idle timeout drf lends a's idle 1.5 to b: a's grant shrinks
// to 1 at once, but b's may not grow while a has not acknowledged the
// shrink. It returns the harness and the shrunk version.
func shrunk(t *testing.T, stateFile string) (*harness, string) {
	t.Helper()
	h := newHarness(t, setup{nodes: []*v1.Node{makeNode("n1", "4")}, frameworks: []string{"a", "b"}, stateFile: stateFile})
	h.report("a", MakeReport().Used("n1", "1").Obj())
	h.report("b", MakeReport().Obj())
	h.round()
	h.wantCPU("baseline", map[string]int64{"a.n1": 2500, "b.n1": 1500})
	h.report("a", MakeReport().Used("n1", "1").Acks(h.observed("a")).Obj())
	h.report("b", MakeReport().Used("n1", "1500m").Hungry("2500m", "500m").Acks(h.observed("b")).Obj())
	for i := 0; h.cpu("a.n1") != 1000; i++ {
		if i == 10 {
			t.Fatalf("a.n1 = %dm after %d rounds, want it shrunk to 1000m to lend to b", h.cpu("a.n1"), i)
		}
		h.round()
		if got := h.cpu("b.n1"); got != 1500 {
			t.Fatalf("round %d: b.n1 = %dm, want 1500m: a holds the rest", i, got)
		}
	}
	if d := h.status().Frameworks["b"].Deferred["n1"]; milliCPU(d) != 1500 {
		t.Errorf("/allocation: b's deferred grow on n1 = %v, want 1500m", d)
	}
	return h, h.rv("a.n1")
}

// A shrink of a's grant under a's running use: b gets the room only once
// a acknowledges the shrunk version in a synced report AND reports its
// use below the old grant.
func TestShrinkIsHeldUntilAcknowledged(t *testing.T) {
	h, shrinkRV := shrunk(t, "")
	oldRV := h.status().Frameworks["a"].Held["n1"].Acknowledged
	steps := []struct {
		name    string
		report  *reportBuilder // a's
		b       int64          // b.n1 afterwards
		held    int64          // a's held on n1 afterwards
		unacked bool           // the shrunk version is listed as unacknowledged
	}{
		{name: "a still acknowledges the old version", report: MakeReport().Used("n1", "1").Ack("a.n1", oldRV), b: 1500, held: 2500, unacked: true},
		{name: "a says nothing of its grants", report: MakeReport().Used("n1", "1"), b: 1500, held: 2500, unacked: true},
		{name: "a report that is not synced acknowledges nothing and lowers no usage",
			report: MakeReport().Unsynced().Ack("a.n1", shrinkRV), b: 1500, held: 2500, unacked: true},
		{name: "acknowledged, but a placed more under the old version", report: MakeReport().Used("n1", "2500m").Ack("a.n1", shrinkRV), b: 1500, held: 2500},
		{name: "acknowledged, and a's use is below the old grant", report: MakeReport().Used("n1", "1").Ack("a.n1", shrinkRV), b: 3000, held: 1000},
	}
	for _, s := range steps {
		h.report("a", s.report.Obj())
		h.round()
		h.round() // nothing changes by waiting
		if got := h.cpu("b.n1"); got != s.b {
			t.Errorf("%s: b.n1 = %dm, want %dm", s.name, got, s.b)
		}
		if got := h.cpu("a.n1"); got != 1000 {
			t.Errorf("%s: a.n1 = %dm, want 1000m (the shrunk grant)", s.name, got)
		}
		hs := h.status().Frameworks["a"].Held["n1"]
		if got := milliCPU(hs.Held); got != s.held {
			t.Errorf("%s: /allocation: a holds %dm on n1, want %dm (%+v)", s.name, got, s.held, hs)
		}
		last := ""
		if n := len(hs.Unacknowledged); n > 0 {
			last = hs.Unacknowledged[n-1]
		}
		if (last == shrinkRV) != s.unacked {
			t.Errorf("%s: /allocation: a.n1 unacknowledged %v; the shrunk version %s listed: %v, want %v", s.name, hs.Unacknowledged, shrinkRV, !s.unacked, s.unacked)
		}
	}
	if m := h.metrics(); !strings.Contains(m, `allocator_grant_grows_deferred_total{framework="b"}`) {
		t.Errorf("/metrics lacks b's deferred grows")
	}
}

// An observedGrants value that is not a resourceVersion counts as no
// acknowledgment at all, so every version of the grant stays held.
func TestUnparseableAcknowledgment(t *testing.T) {
	h, shrinkRV := shrunk(t, "")
	for _, bad := range []string{"latest", "-1", shrinkRV + "x"} {
		h.report("a", MakeReport().Used("n1", "1").Ack("a.n1", bad).Obj())
		h.round()
		if got := h.cpu("b.n1"); got != 1500 {
			t.Errorf("a acknowledges %q: b.n1 = %dm, want 1500m", bad, got)
		}
		if hs := h.status().Frameworks["a"].Held["n1"]; hs.Acknowledged != "" || milliCPU(hs.Held) != 2500 {
			t.Errorf("a acknowledges %q: /allocation says %+v, want nothing acknowledged and 2500m held", bad, hs)
		}
	}
	if m := h.metrics(); !strings.Contains(m, `allocator_invalid_acknowledgments_total{framework="a"} 3`) {
		t.Errorf("/metrics does not count a's 3 invalid acknowledgments")
	}
	h.report("a", MakeReport().Used("n1", "1").Ack("a.n1", shrinkRV).Obj())
	h.round()
	if got := h.cpu("b.n1"); got != 3000 {
		t.Errorf("after a valid acknowledgment: b.n1 = %dm, want 3000m", got)
	}
}

// A revoked grant under running use: the room goes to b only once a's
// synced report acknowledges the Revoked version, and only what a no
// longer uses.
func TestRevocationUnderRunningUse(t *testing.T) {
	h := newHarness(t, setup{nodes: []*v1.Node{makeNode("n1", "4")}, frameworks: []string{"a", "b"}, idleTimeout: time.Hour})
	h.report("a", MakeReport().Used("n1", "1").Obj())
	h.report("b", MakeReport().Obj())
	h.round()
	oldRV := h.rv("a.n1")
	h.report("a", MakeReport().Used("n1", "1").Ack("a.n1", oldRV).Obj())
	h.report("b", MakeReport().Used("n1", "1500m").Hungry("4", "500m").Acks(h.observed("b")).Obj())
	rec := httptest.NewRecorder()
	h.a.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/grants/a.n1/revoke", strings.NewReader(`{"message":"maintenance"}`)))
	if rec.Code != http.StatusOK {
		t.Fatalf("POST /grants/a.n1/revoke: HTTP %d %s", rec.Code, rec.Body)
	}
	h.round()
	if g := h.grant("a.n1"); g == nil || g.Status.Phase != v1alpha1.GrantRevoked {
		t.Fatalf("a.n1 = %+v, want it published as Revoked", g)
	}
	revokedRV := h.rv("a.n1")
	steps := []struct {
		name   string
		report *reportBuilder
		b      int64
	}{
		{name: "Revoked version not acknowledged", report: MakeReport().Used("n1", "1").Ack("a.n1", oldRV), b: 1500},
		{name: "not synced", report: MakeReport().Unsynced().Ack("a.n1", revokedRV), b: 1500},
		{name: "acknowledged, a's pods still run", report: MakeReport().Used("n1", "1").Ack("a.n1", revokedRV), b: 3000},
		{name: "acknowledged, a's pods gone", report: MakeReport().Ack("a.n1", revokedRV), b: 4000},
	}
	for _, s := range steps {
		h.report("a", s.report.Obj())
		h.round()
		h.round()
		if got := h.cpu("b.n1"); got != s.b {
			t.Errorf("%s: b.n1 = %dm, want %dm", s.name, got, s.b)
		}
		if g := h.grant("a.n1"); g == nil || g.Status.Phase != v1alpha1.GrantRevoked {
			t.Errorf("%s: a.n1 = %+v, want it still published as Revoked", s.name, g)
		}
	}
}

// Grants nobody wants any more drop to a zero version first and are
// deleted once their framework acknowledges it; an unregistered
// framework keeps what it holds.
func TestZeroVersionsInsteadOfDeletes(t *testing.T) {
	h := newHarness(t, setup{nodes: []*v1.Node{makeNode("n1", "4"), makeNode("n2", "4")}, frameworks: []string{"a", "b"}, idleTimeout: time.Hour})
	h.report("a", MakeReport().Obj())
	h.report("b", MakeReport().Obj())
	h.round()
	h.wantCPU("baseline", map[string]int64{"a.n1": 2000, "b.n1": 2000, "a.n2": 2000, "b.n2": 2000})
	bOld := h.observed("b")
	h.deleteNode("n2")
	h.round()
	for _, name := range []string{"a.n2", "b.n2"} {
		g := h.grant(name)
		if g == nil || g.Status.Phase != v1alpha1.GrantActive || len(g.Spec.Resources) != 0 || g.Status.Message != zeroMessage {
			t.Fatalf("%s after n2 went = %+v, want a zero version", name, g)
		}
	}
	h.report("a", MakeReport().Acks(h.observed("a")).Obj())
	h.report("b", MakeReport().Acks(bOld).Obj())
	h.round()
	h.round()
	if h.grant("a.n2") != nil {
		t.Errorf("a.n2 still published after a acknowledged its zero version")
	}
	if g := h.grant("b.n2"); g == nil {
		t.Errorf("b.n2 deleted while b acknowledges only its old version")
	}
	h.report("b", MakeReport().Acks(h.observed("b")).Obj())
	h.round()
	if h.grant("b.n2") != nil {
		t.Errorf("b.n2 still published after b acknowledged its zero version")
	}

	// b is unregistered: its grant drops to zero, but what it held stays
	// out of a's reach, and /allocation says why.
	h.report("a", MakeReport().Hungry("4", "500m").Acks(h.observed("a")).Obj())
	rec := httptest.NewRecorder()
	h.a.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodDelete, "/frameworks/b", nil))
	if rec.Code != http.StatusNoContent {
		t.Fatalf("DELETE /frameworks/b: HTTP %d %s", rec.Code, rec.Body)
	}
	for range 3 {
		h.round()
	}
	h.wantCPU("b unregistered", map[string]int64{"a.n1": 2000, "b.n1": 0})
	fs := h.status().Frameworks["b"]
	if !fs.Unregistered || milliCPU(fs.Held["n1"].Held) != 2000 {
		t.Errorf("/allocation for b = %+v, want unregistered and holding 2000m on n1", fs)
	}
}

// Two frameworks growing on one node never get more than it has between
// them, whatever the allocation asks for: frameworks in name order take
// the room the others do not hold.
func TestGrowsOnOneNodeStayWithinAllocatable(t *testing.T) {
	h := newHarness(t, setup{nodes: []*v1.Node{makeNode("n1", "4")}, frameworks: []string{"a", "b", "c"}})
	in := drf.Input{Now: h.clock, Nodes: []drf.Node{{Name: "n1", Allocatable: cpuOf(4000)}},
		Frameworks: []drf.Framework{{Name: "a"}, {Name: "b"}, {Name: "c"}}}
	key := func(f string) drf.Key { return drf.Key{Framework: f, Node: "n1"} }
	// c holds 1 cpu (say, pods it still runs); a and b are asked 3 each.
	holding := map[drf.Key]resources.Resource{key("c"): cpuOf(1000)}
	h.a.publish(in, drf.Result{Grants: map[drf.Key]drf.Grant{
		key("a"): {Resources: cpuOf(3000)}, key("b"): {Resources: cpuOf(3000)},
	}}, nil, holding)
	h.wantCPU("first", map[string]int64{"a.n1": 3000, "b.n1": -1})
	// Asked again: b still gets nothing, a holds its 3.
	h.a.publish(in, drf.Result{Grants: map[drf.Key]drf.Grant{
		key("a"): {Resources: cpuOf(1000)}, key("b"): {Resources: cpuOf(3000)},
	}}, nil, map[drf.Key]resources.Resource{key("a"): cpuOf(3000), key("c"): cpuOf(1000)})
	h.wantCPU("a shrinks, b grows", map[string]int64{"a.n1": 1000, "b.n1": -1})
}

// A restarted allocator keeps what frameworks held: the first round after
// the restart gives b nothing a held, even though a's last shrink was
// never acknowledged and a's report acknowledges only versions of the old
// run.
func TestRestartKeepsHeld(t *testing.T) {
	state := filepath.Join(t.TempDir(), "state.yaml")
	h, _ := shrunk(t, state)
	oldAck := h.status().Frameworks["a"].Held["n1"].Acknowledged
	f, err := frameworks.Load(state)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, e := range f.Held {
		got[e.Grant] = e.Resources["cpu"]
	}
	if got["a.n1"] != "2500m" || got["b.n1"] != "1500m" {
		t.Fatalf("state file held = %v, want a.n1 2500m and b.n1 1500m", got)
	}

	h2 := newHarness(t, setup{nodes: []*v1.Node{makeNode("n1", "4")}, registry: f, stateFile: state})
	// Until its first round, the restarted allocator's store is empty:
	// it must not serve that as its grants, nor an empty /allocation.
	for _, path := range []string{"/apis/batch-scheduler.io/v1alpha1/grants", "/allocation", "/readyz"} {
		if code, body := h2.get(path); code != http.StatusServiceUnavailable || !strings.Contains(body, "first round") {
			t.Errorf("GET %s before the first round after the restart: HTTP %d %s, want 503 saying why", path, code, body)
		}
	}
	// The registry's demand URLs are h's: the frameworks report there.
	h.report("a", MakeReport().Used("n1", "1").Ack("a.n1", oldAck).Obj())
	h2.round()
	if code, body := h2.get("/apis/batch-scheduler.io/v1alpha1/grants"); code != http.StatusOK || !strings.Contains(body, `"a.n1"`) {
		t.Errorf("grants after the first round: HTTP %d %s, want 200 listing a.n1", code, body)
	}
	if code, _ := h2.get("/readyz"); code != http.StatusOK {
		t.Errorf("/readyz after the first round: HTTP %d, want 200", code)
	}
	if got := h2.cpu("b.n1"); got > 1500 {
		t.Errorf("first round after the restart: b.n1 = %dm, want at most the 1500m a did not hold", got)
	}
	hs := h2.status().Frameworks["a"].Held["n1"]
	if milliCPU(hs.Held) != 2500 || len(hs.Unacknowledged) == 0 || hs.Acknowledged != oldAck {
		t.Errorf("/allocation after the restart: a on n1 = %+v, want 2500m held, %s acknowledged and the new run's version not", hs, oldAck)
	}
	for range 3 {
		h2.round()
		if got := h2.cpu("a.n1") + h2.cpu("b.n1"); got > 4000 {
			t.Errorf("after the restart: a.n1 + b.n1 = %dm, above the node's 4000m", got)
		}
	}
}

// Write-ahead: a grant does not grow into capacity the state file does
// not count as held until the file is saved.
func TestGrowWaitsForTheStateFile(t *testing.T) {
	state := filepath.Join(t.TempDir(), "state.yaml")
	h := newHarness(t, setup{nodes: []*v1.Node{makeNode("n1", "4")}, frameworks: []string{"a", "b"}, stateFile: state})
	h.report("a", MakeReport().Obj())
	h.report("b", MakeReport().Obj())
	h.round()
	h.wantCPU("baseline", map[string]int64{"a.n1": 2000, "b.n1": 2000})
	h.report("a", MakeReport().Acks(h.observed("a")).Obj())
	h.report("b", MakeReport().Acks(h.observed("b")).Obj())
	// The state file cannot be replaced (a directory is in its way).
	if err := os.Remove(state); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(state, 0o700); err != nil {
		t.Fatal(err)
	}
	h.setNode(makeNode("n1", "8"))
	h.round()
	h.wantCPU("state file unwritable", map[string]int64{"a.n1": 2000, "b.n1": 2000})
	if m := h.metrics(); !strings.Contains(m, "allocator_state_save_errors_total 1") {
		t.Errorf("/metrics does not count the failed save")
	}
	if err := os.Remove(state); err != nil {
		t.Fatal(err)
	}
	h.round()
	h.wantCPU("state file writable again", map[string]int64{"a.n1": 4000, "b.n1": 4000})
	f, err := frameworks.Load(state)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range f.Held {
		if e.Resources["cpu"] != "4" {
			t.Errorf("state file: %s holds cpu %q, want 4", e.Grant, e.Resources["cpu"])
		}
	}
}

// milliCPU is l's CPU in millicores.
func milliCPU(l v1.ResourceList) int64 { return resources.FromList(l).MilliCPU }
