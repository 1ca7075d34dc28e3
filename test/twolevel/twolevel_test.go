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

package twolevel

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	bsv1 "github.com/batch-scheduler/batch-scheduler/pkg/apis/batchscheduler/v1alpha1"
	"github.com/batch-scheduler/batch-scheduler/pkg/cache"
	"github.com/batch-scheduler/batch-scheduler/pkg/demand"
)

// fakeFramework serves the demand report of a framework that places
// nothing itself: it claims to use what used says, per node. Once told
// the allocator's address (acknowledge), its reports are synced and
// acknowledge every grant of its the allocator serves: it places nothing,
// so it applies any grant at once.
type fakeFramework struct {
	name string
	url  string
	mu   sync.Mutex
	used map[string]v1.ResourceList
	// grantsURL is the allocator's grant list, "" until acknowledge.
	grantsURL string
}

// startFakeFramework serves name's demand report until the test ends.
func startFakeFramework(t *testing.T, name string) *fakeFramework {
	t.Helper()
	f := &fakeFramework{name: name}
	srv := httptest.NewServer(demand.Handler(func() *demand.Report {
		f.mu.Lock()
		grantsURL := f.grantsURL
		f.mu.Unlock()
		r := &demand.Report{Framework: f.name, Time: metav1.Now(), Used: map[string]v1.ResourceList{}}
		if grantsURL != "" {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			var l bsv1.GrantList
			if err := getJSON(ctx, grantsURL, &l); err == nil {
				r.Synced = true
				r.ObservedGrants = map[string]string{}
				for _, g := range l.Items {
					if g.Spec.Framework == f.name {
						r.ObservedGrants[g.Name] = g.ResourceVersion
					}
				}
			}
		}
		f.mu.Lock()
		defer f.mu.Unlock()
		for n, l := range f.used {
			r.Used[n] = l.DeepCopy()
		}
		return r
	}))
	t.Cleanup(srv.Close)
	f.url = srv.URL + demand.Path
	return f
}

// acknowledge makes the framework acknowledge the grants of the allocator
// at allocatorURL from now on.
func (f *fakeFramework) acknowledge(allocatorURL string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.grantsURL = allocatorURL + "/apis/batch-scheduler.io/v1alpha1/grants"
}

// setUsed replaces what the framework claims to use.
func (f *fakeFramework) setUsed(used map[string]v1.ResourceList) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.used = used
}

// allocationStatus is the part of the allocator's GET /allocation the
// tests read.
type allocationStatus struct {
	Frameworks map[string]struct {
		Hungry bool                       `json:"hungry"`
		Used   map[string]v1.ResourceList `json:"used"`
	} `json:"frameworks"`
}

// waitAllocation polls the allocator's /allocation until cond holds.
func (a *allocatorProc) waitAllocation(t *testing.T, what string, cond func(*allocationStatus) bool) {
	t.Helper()
	var last allocationStatus
	err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		last = allocationStatus{}
		if err := getJSON(ctx, a.url+"/allocation", &last); err != nil {
			return false, nil
		}
		return cond(&last), nil
	})
	if err != nil {
		t.Fatalf("waiting until %s: %v; last /allocation: %+v", what, err, last)
	}
}

// fmtList prints a resource list as "cpu=2 memory=1Gi", sorted.
func fmtList(l v1.ResourceList) string {
	names := make([]string, 0, len(l))
	for n := range l {
		names = append(names, string(n))
	}
	sort.Strings(names)
	var b strings.Builder
	for i, n := range names {
		if i > 0 {
			b.WriteByte(' ')
		}
		q := l[v1.ResourceName(n)]
		fmt.Fprintf(&b, "%s=%s", n, q.String())
	}
	return b.String()
}

// grantsOf maps node to the live cpu (milli) of framework's grants there.
func grantsOf(grants []bsv1.Grant, framework string, nodes []string) map[string]int64 {
	now := time.Now()
	out := map[string]int64{}
	for _, n := range nodes {
		out[n] = liveGrantMilli(grants, framework, n, now)
	}
	return out
}

// checkInsideGrants fails the test if framework's pods on a node request
// more cpu than its live grant there.
func checkInsideGrants(t *testing.T, pods []v1.Pod, scheduler string, grants []bsv1.Grant, framework string, nodes []string) {
	t.Helper()
	granted := grantsOf(grants, framework, nodes)
	for n, used := range boundCPU(pods, scheduler) {
		if used > granted[n] {
			t.Errorf("node %s: the pods of %s request %dm cpu, above framework %s's grant of %dm; grants:\n%s\npods: %s",
				n, scheduler, used, framework, granted[n], describeGrants(grants), placements(pods))
		}
	}
}

// waitCap polls the scheduler's /debug/cache until cond holds for node.
func waitCap(t *testing.T, s *scheduler, node, what string, cond func(n *cache.NodeDump) bool) {
	t.Helper()
	var last *cache.NodeDump
	err := wait.PollUntilContextTimeout(t.Context(), 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		d, err := s.dump(ctx)
		if err != nil {
			return false, nil
		}
		for i := range d.Nodes {
			if d.Nodes[i].Name == node {
				last = &d.Nodes[i]
				return cond(last), nil
			}
		}
		return false, nil
	})
	if err != nil {
		desc := "not in the dump"
		if last != nil {
			desc = fmt.Sprintf("cap %v ownRequested %s capExceeded %v", last.Cap, last.OwnRequested.String(), last.CapExceeded)
		}
		t.Fatalf("scheduler %s, node %s: waiting until %s: %v; last: %s", s.name, node, what, err, desc)
	}
}

// noGrant says the node is capped at zero.
func noGrant(n *cache.NodeDump) bool { return n.Cap != nil && n.Cap.IsZero() }

// stays polls for d and fails the test as soon as cond stops holding.
func stays(t *testing.T, d time.Duration, what string, cond func(ctx context.Context) (bool, string)) {
	t.Helper()
	var msg string
	err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, d, true, func(ctx context.Context) (bool, error) {
		var ok bool
		ok, msg = cond(ctx)
		return !ok, nil
	})
	if err == nil {
		t.Fatalf("%s stopped holding: %s", what, msg)
	}
}

// Pods land only inside the grants: with batch and an idle framework of
// equal weight, batch gets half of each node, and pods beyond it wait with
// the grant named as the reason.
func TestPodsLandOnlyInsideGrants(t *testing.T) {
	ns := createNamespace(t)
	nodes := createNodes(t, "inside", 2, "8")
	port := freePort(t)
	const name = "tl-inside"
	demandURL := "http://127.0.0.1:" + strconv.Itoa(port) + demand.Path
	a, scheds := startTwoLevel(t, allocatorOptions{frameworks: []framework{
		{Name: "batch", Weight: 1, DemandURL: demandURL},
		{Name: "idle", Weight: 1},
	}}, schedulerSpec{name: name, framework: "batch", port: port})
	s := scheds[0]
	grants := a.waitGrants(t, "batch and idle hold 4 cpu each on both nodes", 30*time.Second, func(gs []bsv1.Grant) bool {
		for _, n := range nodes {
			if liveGrantMilli(gs, "batch", n, time.Now()) != 4000 || liveGrantMilli(gs, "idle", n, time.Now()) != 4000 {
				return false
			}
		}
		return true
	})
	for _, n := range nodes {
		waitCap(t, s, n, "the cap is batch's 4 cpu", func(d *cache.NodeDump) bool { return d.Cap != nil && d.Cap.MilliCPU == 4000 })
	}

	for i := range 12 {
		mustCreate(t, pod(ns, fmt.Sprintf("p-%02d", i), name, "1"))
	}
	pods := waitPods(t, ns, "8 of 12 pods bound (4 cpu granted on each of 2 nodes)", 60*time.Second, func(ps []v1.Pod) bool { return countBound(ps) == 8 })
	checkInsideGrants(t, pods, name, grants, "batch", nodes)
	var pending []string
	for _, p := range pods {
		if p.Spec.NodeName == "" {
			pending = append(pending, p.Name)
		}
	}
	for _, p := range pending {
		msg := waitUnschedulable(t, ns, p, "Grant exhausted: cpu")
		t.Logf("pending pod %s: %s", p, msg)
	}
	waitEvent(t, ns, pending[0], "FailedScheduling", "Grant exhausted: cpu")
	// Nothing else lands while the grants stay as they are (idle has no
	// demand URL, so its share is never reclaimed).
	stays(t, 3*time.Second, "8 pods bound inside the grants", func(ctx context.Context) (bool, string) {
		ps := listPods(t, ns)
		gs, err := a.grants(ctx)
		switch {
		case err != nil && ctx.Err() != nil:
			// The window ended during the read: nothing left to check.
			return true, ""
		case err != nil:
			// Unchecked is not inside: a check that cannot read the
			// grants fails rather than passes.
			return false, fmt.Sprintf("reading the grants: %v", err)
		}
		granted := grantsOf(gs, "batch", nodes)
		for n, used := range boundCPU(ps, name) {
			if used > granted[n] {
				return false, fmt.Sprintf("node %s: %dm used above the grant %dm; %s", n, used, granted[n], placements(ps))
			}
		}
		return countBound(ps) == 8, placements(ps)
	})
}

// A gang larger than its grant waits and shows on /demand; once the other
// framework's capacity has been idle for --idle-timeout the allocator
// moves it to batch, and the whole gang lands.
func TestGangWaitsThenAllocatorGrowsTheGrant(t *testing.T) {
	ns := createNamespace(t)
	nodes := createNodes(t, "grow", 2, "8")
	port := freePort(t)
	const name = "tl-grow"
	idle := startFakeFramework(t, "idle")
	a, scheds := startTwoLevel(t, allocatorOptions{idleTimeout: 2 * time.Second, frameworks: []framework{
		{Name: "batch", Weight: 1, DemandURL: "http://127.0.0.1:" + strconv.Itoa(port) + demand.Path},
		{Name: "idle", Weight: 1, DemandURL: idle.url},
	}}, schedulerSpec{name: name, framework: "batch", port: port})
	idle.acknowledge(a.url)
	s := scheds[0]
	a.waitGrants(t, "batch holds 4 cpu on both nodes", 30*time.Second, func(gs []bsv1.Grant) bool {
		g := grantsOf(gs, "batch", nodes)
		return g[nodes[0]] == 4000 && g[nodes[1]] == 4000
	})
	for _, n := range nodes {
		waitCap(t, s, n, "the cap is batch's 4 cpu", func(d *cache.NodeDump) bool { return d.Cap != nil && d.Cap.MilliCPU == 4000 })
	}
	// idle now claims to use its whole share, so that the allocator
	// cannot move it before the gang has been seen waiting.
	busy := map[string]v1.ResourceList{}
	for _, n := range nodes {
		busy[n] = v1.ResourceList{v1.ResourceCPU: resource.MustParse("4")}
	}
	idle.setUsed(busy)
	a.waitAllocation(t, "the allocator read idle's usage", func(st *allocationStatus) bool {
		f := st.Frameworks["idle"]
		u0, u1 := f.Used[nodes[0]], f.Used[nodes[1]]
		return u0.Cpu().MilliValue() == 4000 && u1.Cpu().MilliValue() == 4000
	})

	// 6 members of 2 cpu: 12 cpu, where batch holds 8.
	for i := range 6 {
		mustCreate(t, pod(ns, fmt.Sprintf("g-%d", i), name, "2").Group("big").MinAvailable("6"))
	}
	var rep *demand.Report
	err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		r, err := s.demand(ctx)
		if err != nil {
			return false, nil
		}
		rep = r
		g := r.LargestGang
		return g != nil && g.MinMember == 6 && g.Members == 6 && r.Unmet.Cpu().MilliValue() >= 12000, nil
	})
	if err != nil {
		t.Fatalf("the scheduler's /demand never showed the gang of 6 x 2 cpu: %v; last report %+v", err, rep)
	}
	t.Logf("demand while the gang waits: unmet %s, waiting %d, largest gang %s: %d members, min %d, total %s, reason %q",
		fmtList(rep.Unmet), rep.Waiting, rep.LargestGang.Name, rep.LargestGang.Members, rep.LargestGang.MinMember, fmtList(rep.LargestGang.Total), rep.LargestGang.Reason)
	// The allocator reads that report: batch is hungry, but nothing is
	// idle, so the grants stay and the gang waits.
	a.waitAllocation(t, "batch is hungry at the allocator", func(st *allocationStatus) bool { return st.Frameworks["batch"].Hungry })
	stays(t, 2*time.Second, "the gang waits while batch holds 8 cpu", func(ctx context.Context) (bool, string) {
		ps := listPods(t, ns)
		return countBound(ps) == 0, placements(ps)
	})

	// idle stops using its share: after 2s the allocator may move it.
	idle.setUsed(nil)
	grants := a.waitGrants(t, "batch's grants cover the 12 cpu gang", 30*time.Second, func(gs []bsv1.Grant) bool {
		g := grantsOf(gs, "batch", nodes)
		// 2 cpu members: each node must hold a multiple of 2.
		return g[nodes[0]]/2000*2+g[nodes[1]]/2000*2 >= 12
	})
	t.Logf("grants after the move:\n%s", describeGrants(grants))
	for _, p := range listPods(t, ns) {
		if msg := unschedulableMessage(&p); msg != "" {
			t.Logf("gang member %s, last condition: %s", p.Name, msg)
			break
		}
	}
	pods := waitPods(t, ns, "all 6 members of the gang bound", 60*time.Second, func(ps []v1.Pod) bool { return countBound(ps) == 6 })
	grants, err = a.grants(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	checkInsideGrants(t, pods, name, grants, "batch", nodes)
}

// A revoked grant stops new placements on its node, with the reason on
// the pod; lifting the revocation lets the waiting pods land. A dead
// allocator's grants expire at the scheduler after their TTL.
func TestRevokedGrantStopsPlacements(t *testing.T) {
	t.Run("revoked", func(t *testing.T) {
		ns := createNamespace(t)
		nodes := createNodes(t, "revoke", 2, "8")
		port := freePort(t)
		const name = "tl-revoke"
		a, scheds := startTwoLevel(t, allocatorOptions{frameworks: []framework{
			{Name: "batch", Weight: 1, DemandURL: "http://127.0.0.1:" + strconv.Itoa(port) + demand.Path},
		}}, schedulerSpec{name: name, framework: "batch", port: port})
		s := scheds[0]
		a.waitGrants(t, "batch holds both nodes whole", 30*time.Second, func(gs []bsv1.Grant) bool {
			g := grantsOf(gs, "batch", nodes)
			return g[nodes[0]] == 8000 && g[nodes[1]] == 8000
		})
		a.revoke(t, "batch."+nodes[1])
		a.waitGrants(t, "batch's grant on "+nodes[1]+" is revoked", 30*time.Second, func(gs []bsv1.Grant) bool {
			return liveGrantMilli(gs, "batch", nodes[1], time.Now()) == 0
		})
		waitCap(t, s, nodes[1], "the scheduler has no grant on "+nodes[1], noGrant)

		// One pod that only fits on the revoked node, ten anywhere.
		mustCreate(t, pod(ns, "only-there", name, "1").NodeSelector(map[string]string{nodeLabel: nodes[1]}))
		for i := range 10 {
			mustCreate(t, pod(ns, fmt.Sprintf("p-%d", i), name, "1"))
		}
		pods := waitPods(t, ns, "8 pods bound, all on "+nodes[0], 60*time.Second, func(ps []v1.Pod) bool { return countBound(ps) == 8 })
		for _, p := range pods {
			if p.Spec.NodeName == nodes[1] {
				t.Fatalf("pod %s landed on %s after batch's grant there was revoked; pods: %s", p.Name, nodes[1], placements(pods))
			}
		}
		msg := waitUnschedulable(t, ns, "only-there", "No grant on node")
		t.Logf("only-there: %s", msg)
		waitEvent(t, ns, "only-there", "FailedScheduling", "No grant on node")
		stays(t, 2*time.Second, "nothing lands on "+nodes[1], func(context.Context) (bool, string) {
			ps := listPods(t, ns)
			return boundCPU(ps, name)[nodes[1]] == 0 && countBound(ps) == 8, placements(ps)
		})

		// Lifting the revocation lets the waiting pods land there.
		mustCall(t, http.MethodDelete, a.url+"/grants/batch."+nodes[1]+"/revocation", "", http.StatusOK, http.StatusNoContent)
		pods = waitPods(t, ns, "all 11 pods bound once the revocation is lifted", 60*time.Second, func(ps []v1.Pod) bool { return countBound(ps) == 11 })
		for _, p := range pods {
			if p.Name == "only-there" && p.Spec.NodeName != nodes[1] {
				t.Fatalf("only-there bound to %s, want %s", p.Spec.NodeName, nodes[1])
			}
		}
	})

	t.Run("expired", func(t *testing.T) {
		ns := createNamespace(t)
		nodes := createNodes(t, "expire", 1, "4")
		port := freePort(t)
		const name = "tl-expire"
		const ttl = 3 * time.Second
		a, scheds := startTwoLevel(t, allocatorOptions{interval: 500 * time.Millisecond, grantTTL: ttl, frameworks: []framework{
			{Name: "batch", Weight: 1, DemandURL: "http://127.0.0.1:" + strconv.Itoa(port) + demand.Path},
		}}, schedulerSpec{name: name, framework: "batch", port: port})
		s := scheds[0]
		grants := a.waitGrants(t, "batch holds the node with an expiry", 30*time.Second, func(gs []bsv1.Grant) bool {
			for _, g := range gs {
				if g.Spec.Framework == "batch" && g.Spec.NodeName == nodes[0] && g.Spec.ExpiresAt != nil {
					return liveGrantMilli(gs, "batch", nodes[0], time.Now()) == 4000
				}
			}
			return false
		})
		t.Logf("grants with a TTL:\n%s", describeGrants(grants))
		mustCreate(t, pod(ns, "before", name, "1"))
		waitPods(t, ns, "the first pod bound while the grant is live", 30*time.Second, func(ps []v1.Pod) bool { return countBound(ps) == 1 })

		a.kill()
		killed := time.Now()
		// The last renewal was at most ttl ago; the scheduler's timer must
		// take the grant away within ttl (and a margin for the timer).
		waitCap(t, s, nodes[0], "the killed allocator's grant expired at the scheduler", noGrant)
		if waited := time.Since(killed); waited > ttl+5*time.Second {
			t.Errorf("the grant expired %s after the allocator was killed, TTL %s", waited, ttl)
		}
		mustCreate(t, pod(ns, "after", name, "1"))
		msg := waitUnschedulable(t, ns, "after", "No grant on node")
		t.Logf("after expiry: %s", msg)
		waitEvent(t, ns, "after", "FailedScheduling", "No grant on node")
		stays(t, 2*time.Second, "nothing new lands after expiry", func(context.Context) (bool, string) {
			ps := listPods(t, ns)
			return countBound(ps) == 1, placements(ps)
		})
	})
}
