package twolevel

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	bsv1 "github.com/batch-scheduler/batch-scheduler/pkg/apis/batchscheduler/v1alpha1"
	"github.com/batch-scheduler/batch-scheduler/pkg/demand"
	"github.com/batch-scheduler/batch-scheduler/test/controlplane"
)

// churnDuration is how long TestTwoFrameworksChurn churns: 2 minutes with
// TWOLEVEL_CHURN=full (make test-chaos), 30 seconds with
// TWOLEVEL_CHURN=short; 0 (the test is skipped) without it, as in make
// test: it is a long randomized run.
func churnDuration() time.Duration {
	switch os.Getenv("TWOLEVEL_CHURN") {
	case "full":
		return 2 * time.Minute
	case "short":
		return 30 * time.Second
	}
	return 0
}

// churner makes random changes: pods and gangs of the schedulers, VMs,
// framework weights, revocations.
type churner struct {
	t          *testing.T
	rng        *rand.Rand
	ns         string
	schedulers []string
	nodes      []string
	alloc      *allocatorProc
	vm         *vmManagerProc
	// frameworks are re-registered with a new weight, keeping their
	// demand URL.
	frameworks []framework

	seq     int
	singles []string
	gangs   map[string][]string
	vms     []string
	revoked map[string]bool
	counts  map[string]int
}

func (c *churner) name(prefix string) string {
	c.seq++
	return fmt.Sprintf("%s-%04d", prefix, c.seq)
}

// step makes one random change; errors of the programs' APIs that the
// churn can cause (a VM already deleted, a revocation already lifted)
// are tolerated, others fail the test.
func (c *churner) step(ctx context.Context) {
	live := len(c.singles)
	for _, g := range c.gangs {
		live += len(g)
	}
	r := c.rng.IntN(100)
	if live > 40 {
		r = 40 // delete something
	}
	switch {
	case r < 30:
		sched := c.schedulers[c.rng.IntN(len(c.schedulers))]
		name := c.name("p")
		cpu := []string{"500m", "1", "2"}[c.rng.IntN(3)]
		c.create(ctx, pod(c.ns, name, sched, cpu))
		c.singles = append(c.singles, name)
		c.counts["pods created"]++
	case r < 40:
		sched := c.schedulers[c.rng.IntN(len(c.schedulers))]
		g := c.name("g")
		size := 2 + c.rng.IntN(3)
		cpu := []string{"500m", "1"}[c.rng.IntN(2)]
		for i := range size {
			name := fmt.Sprintf("%s-%d", g, i)
			c.create(ctx, pod(c.ns, name, sched, cpu).Group(g).MinAvailable(strconv.Itoa(size)))
			c.gangs[g] = append(c.gangs[g], name)
		}
		c.counts["gangs created"]++
	case r < 60:
		if len(c.gangs) > 0 && c.rng.IntN(3) == 0 {
			for g, members := range c.gangs {
				for _, m := range members {
					c.delete(ctx, m)
				}
				delete(c.gangs, g)
				c.counts["gangs deleted"]++
				break
			}
		} else if len(c.singles) > 0 {
			i := c.rng.IntN(len(c.singles))
			c.delete(ctx, c.singles[i])
			c.singles = append(c.singles[:i], c.singles[i+1:]...)
			c.counts["pods deleted"]++
		}
	case r < 75:
		name := c.name("vm")
		cpu := []string{"500m", "1", "2"}[c.rng.IntN(3)]
		code, body, err := c.vm.createVM(ctx, name, cpu, "1Gi", "")
		if err != nil || (code != http.StatusCreated && code != http.StatusAccepted) {
			c.t.Errorf("creating VM %s: %d %s %v", name, code, body, err)
			return
		}
		c.vms = append(c.vms, name)
		c.counts["VMs created"]++
	case r < 85:
		if len(c.vms) == 0 {
			return
		}
		i := c.rng.IntN(len(c.vms))
		code, body, err := call(ctx, http.MethodDelete, c.vm.url+"/vms/"+c.vms[i], "")
		if err != nil || code != http.StatusOK {
			c.t.Errorf("deleting VM %s: %d %s %v", c.vms[i], code, body, err)
		}
		c.vms = append(c.vms[:i], c.vms[i+1:]...)
		c.counts["VMs deleted"]++
	case r < 91:
		f := c.frameworks[c.rng.IntN(len(c.frameworks))]
		f.Weight = float64(1 + c.rng.IntN(3))
		c.alloc.putFramework(c.t, f)
		c.counts["weights changed"]++
	default:
		if len(c.revoked) > 0 && c.rng.IntN(2) == 0 {
			for g := range c.revoked {
				mustCall(c.t, http.MethodDelete, c.alloc.url+"/grants/"+g+"/revocation", "", http.StatusOK, http.StatusNoContent)
				delete(c.revoked, g)
				c.counts["revocations lifted"]++
				break
			}
			return
		}
		f := c.frameworks[c.rng.IntN(len(c.frameworks))]
		g := f.Name + "." + c.nodes[c.rng.IntN(len(c.nodes))]
		if c.revoked[g] {
			return
		}
		c.alloc.revoke(c.t, g)
		c.revoked[g] = true
		c.counts["grants revoked"]++
	}
}

func (c *churner) create(ctx context.Context, p interface{ Obj() *v1.Pod }) {
	if _, err := controlplane.CreatePod(ctx, cp.Client, p.Obj()); err != nil {
		c.t.Errorf("churn: %v", err)
	}
}

func (c *churner) delete(ctx context.Context, name string) {
	if err := cp.Client.CoreV1().Pods(c.ns).Delete(ctx, name, deleteNow); err != nil && !apierrors.IsNotFound(err) {
		c.t.Errorf("churn: deleting pod %s/%s: %v", c.ns, name, err)
	}
}

// Two batch-scheduler instances (frameworks batch-a and batch-b) and the
// VM manager (framework vms) under one allocator, with random churn of
// pods, gangs, VMs, weights and revocations; the checker, reading only
// the apiserver and the two managers, must find no over-committed node
// and no framework placing above its grant.
func TestTwoFrameworksChurn(t *testing.T) {
	if churnDuration() == 0 {
		t.Skip("a long randomized run: make test-chaos runs it (TWOLEVEL_CHURN=full; short for 30 s)")
	}
	ns := createNamespace(t)
	nodes := createNodes(t, "churn", 5, "8")
	portA, portB := freePort(t), freePort(t)
	vmListen := "127.0.0.1:" + strconv.Itoa(freePort(t))
	fws := []framework{
		{Name: "batch-a", Weight: 1, DemandURL: "http://127.0.0.1:" + strconv.Itoa(portA) + demand.Path},
		{Name: "batch-b", Weight: 1, DemandURL: "http://127.0.0.1:" + strconv.Itoa(portB) + demand.Path},
		{Name: "vms", Weight: 1, DemandURL: "http://" + vmListen + demand.Path},
	}
	// The schedulers count the VMs too, as docs/two-level.md sets them
	// up. The VM manager lists the grants before it listens, so the
	// allocator cannot read its demand in its first round: vms starts with
	// no share and gets capacity from idle grants once VMs wait (see
	// startTwoLevel).
	var vm *vmManagerProc
	a, _ := startTwoLevelWith(t, allocatorOptions{idleTimeout: 3 * time.Second, frameworks: fws},
		func(a *allocatorProc) { vm = startVMManager(t, vmListen, "vms", a.url) },
		schedulerSpec{"tl-churn-a", "batch-a", portA, "http://" + vmListen}, schedulerSpec{"tl-churn-b", "batch-b", portB, "http://" + vmListen})
	a.waitGrants(t, "both batch frameworks hold a grant on every node", 30*time.Second, func(gs []bsv1.Grant) bool {
		for _, f := range fws[:2] {
			for _, n := range grantsOf(gs, f.Name, nodes) {
				if n == 0 {
					return false
				}
			}
		}
		return true
	})

	chk := startChecker(t, ns, nodes, amount{8000, 32 << 30},
		map[string]string{"tl-churn-a": "batch-a", "tl-churn-b": "batch-b"}, a.url, vm, "vms")
	seed := time.Now().UnixNano()
	t.Logf("churn for %s, seed %d", churnDuration(), seed)
	ch := &churner{t: t, rng: rand.New(rand.NewPCG(uint64(seed), 0)), ns: ns, schedulers: []string{"tl-churn-a", "tl-churn-b"},
		nodes: nodes, alloc: a, vm: vm, frameworks: fws, gangs: map[string][]string{}, revoked: map[string]bool{}, counts: map[string]int{}}
	end := time.Now().Add(churnDuration())
	for time.Now().Before(end) && !t.Failed() {
		ch.step(t.Context())
		// Pace the changes; the schedulers and the managers react in
		// between. This is the churn's rate, not a wait for a condition.
		select {
		case <-t.Context().Done():
		case <-time.After(time.Duration(50+ch.rng.IntN(200)) * time.Millisecond):
		}
	}
	t.Logf("churn: %v", ch.counts)
	chk.finish(t)
	chk.mu.Lock()
	placedPods, placedVMs := chk.podPlacements, chk.vmPlacements
	chk.mu.Unlock()
	if placedPods == 0 || placedVMs == 0 {
		t.Errorf("the churn placed %d pods and %d VMs; want some of each for the check to mean anything", placedPods, placedVMs)
	}
	if bound := boundCPU(listPods(t, ns), ""); len(bound) == 0 {
		t.Errorf("no pod bound at the end of the churn")
	}
}

// A scheduler and the allocator restarted mid-scenario converge: no pod
// bound twice, no node over-committed, no placement above the grants, and
// the pending pods that fit land.
func TestRestartsConverge(t *testing.T) {
	ns := createNamespace(t)
	nodes := createNodes(t, "restart", 3, "8")
	port := freePort(t)
	const name = "tl-restart"
	listen := "127.0.0.1:" + strconv.Itoa(freePort(t))
	state := filepath.Join(t.TempDir(), "state.yaml")
	idle := startFakeFramework(t, "idle")
	opts := allocatorOptions{listen: listen, stateFile: state, idleTimeout: 2 * time.Second, frameworks: []framework{
		{Name: "batch", Weight: 1, DemandURL: "http://127.0.0.1:" + strconv.Itoa(port) + demand.Path},
		{Name: "idle", Weight: 1, DemandURL: idle.url},
	}}
	a, scheds := startTwoLevel(t, opts, schedulerSpec{name: name, framework: "batch", port: port})
	s := scheds[0]
	a.waitGrants(t, "batch holds a grant on every node", 30*time.Second, func(gs []bsv1.Grant) bool {
		for _, g := range grantsOf(gs, "batch", nodes) {
			if g == 0 {
				return false
			}
		}
		return true
	})
	chk := startChecker(t, ns, nodes, amount{8000, 32 << 30}, map[string]string{name: "batch"}, a.url, nil, "")
	t.Cleanup(func() {
		if t.Failed() {
			logState(t, a.url, s)
		}
	})

	created := 0
	createPods := func(n int, cpu string) {
		for range n {
			mustCreate(t, pod(ns, fmt.Sprintf("p-%02d", created), name, cpu))
			created++
		}
	}
	createPods(6, "1")
	mustCreate(t, pod(ns, "g-0", name, "1").Group("g").MinAvailable("3"),
		pod(ns, "g-1", name, "1").Group("g").MinAvailable("3"), pod(ns, "g-2", name, "1").Group("g").MinAvailable("3"))
	waitPods(t, ns, "the first 9 pods bound", 60*time.Second, func(ps []v1.Pod) bool { return countBound(ps) == 9 })

	// An admin change the restarted allocator must keep: batch weighs 2.
	a.putFramework(t, framework{Name: "batch", Weight: 2, DemandURL: opts.frameworks[0].DemandURL})
	a.terminate(t)
	// While the allocator is down the scheduler keeps its last grants.
	createPods(3, "1")
	a = startAllocator(t, opts)
	var fwList []framework
	if err := getJSON(t.Context(), a.url+"/frameworks", &fwList); err != nil {
		t.Fatal(err)
	}
	for _, f := range fwList {
		if f.Name == "batch" && f.Weight != 2 {
			t.Errorf("the restarted allocator has batch at weight %v, want 2 from its state file %s", f.Weight, state)
		}
	}

	// The scheduler restarts; pods created while it is down wait for it.
	if code := s.stop(t); code != 0 {
		t.Fatalf("batch-scheduler exited with %d: %s", code, s.stderr.String())
	}
	createPods(4, "1")
	mustCreate(t, pod(ns, "big", name, "2"))
	s.start(t)

	// 13 pods of 1 cpu, a gang of 3 and one of 2 cpu: 18 of 24 cpu. With
	// idle using nothing, batch's grants grow to hold them all. (With a
	// 3 cpu pod this hits the allocator bug of
	// TestHungryFrameworkUnitCountsItsOwnUnusedGrant.)
	pods := waitPods(t, ns, "all 17 pods bound after the restarts", 90*time.Second, func(ps []v1.Pod) bool { return countBound(ps) == 17 })
	chk.finish(t)
	for n, used := range boundCPU(pods, "") {
		if used > 8000 {
			t.Errorf("node %s: %dm cpu bound, above its 8 cpu; pods: %s", n, used, placements(pods))
		}
	}
	// Each pod was bound once: one Scheduled event each.
	events, err := cp.Client.EventsV1().Events(ns).List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	scheduled := map[string]int{}
	for _, e := range events.Items {
		if e.Reason == "Scheduled" {
			scheduled[e.Regarding.Name]++
		}
	}
	for _, p := range pods {
		if scheduled[p.Name] > 1 {
			t.Errorf("pod %s has %d Scheduled events: bound more than once?", p.Name, scheduled[p.Name])
		}
	}
	t.Logf("Scheduled events: %d for %d pods", len(scheduled), len(pods))
}

// logState logs the allocator's /allocation and the scheduler's /demand
// and /debug/cache nodes, for a failure.
func logState(t *testing.T, allocatorURL string, s *scheduler) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, u := range []string{allocatorURL + "/allocation", s.demandURL()} {
		code, b, err := call(ctx, http.MethodGet, u, "")
		t.Logf("GET %s: %d %v\n%s", u, code, err, b)
	}
	if d, err := s.dump(ctx); err == nil {
		for _, n := range d.Nodes {
			t.Logf("scheduler %s, node %s: cap %v ownRequested %s requested %s capExceeded %v", s.name, n.Name, n.Cap, n.OwnRequested.String(), n.Requested.String(), n.CapExceeded)
		}
	}
}

// A hungry framework's next unit counts what it already holds unused on a
// node. batch (weight 2) holds 5334m of an 8 cpu node and uses 5 cpu; idle
// (weight 1) holds 2666m and uses nothing. A pod of 3 cpu fits the node,
// and batch's 334m plus idle's 2666m make the unit (the report's
// largestUnit, 3 cpu). An allocator that looked for the unit in the free
// and lendable capacity alone (2666m) would never grow the grant, and the
// pod would wait forever; this test found that bug.
func TestHungryFrameworkUnitCountsItsOwnUnusedGrant(t *testing.T) {
	ns := createNamespace(t)
	nodes := createNodes(t, "unit", 1, "8")
	port := freePort(t)
	const name = "tl-unit"
	idle := startFakeFramework(t, "idle")
	a, _ := startTwoLevel(t, allocatorOptions{idleTimeout: time.Second, frameworks: []framework{
		{Name: "batch", Weight: 2, DemandURL: "http://127.0.0.1:" + strconv.Itoa(port) + demand.Path},
		{Name: "idle", Weight: 1, DemandURL: idle.url},
	}}, schedulerSpec{name: name, framework: "batch", port: port})
	a.waitGrants(t, "batch holds 5334m", 30*time.Second, func(gs []bsv1.Grant) bool {
		return liveGrantMilli(gs, "batch", nodes[0], time.Now()) == 5334
	})
	createdPods := 0
	for range 5 {
		mustCreate(t, pod(ns, fmt.Sprintf("p-%d", createdPods), name, "1"))
		createdPods++
	}
	waitPods(t, ns, "5 pods of 1 cpu bound", 30*time.Second, func(ps []v1.Pod) bool { return countBound(ps) == 5 })
	mustCreate(t, pod(ns, "three", name, "3"))
	var last []bsv1.Grant
	err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, 20*time.Second, true, func(ctx context.Context) (bool, error) {
		p, err := cp.Client.CoreV1().Pods(ns).Get(ctx, "three", metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		if gs, err := a.grants(ctx); err == nil {
			last = gs
		}
		return p.Spec.NodeName != "", nil
	})
	if gs, gerr := a.grants(t.Context()); gerr == nil {
		last = gs
	}
	if err != nil {
		t.Fatalf("the 3 cpu pod never landed on %s, where 3 cpu are free: batch holds 334m unused and idle 2666m idle for over "+
			"--idle-timeout, which together make the 3 cpu unit batch waits for (the allocator must count a hungry framework's "+
			"own unused grant on the node). Grants:\n%s", nodes[0], describeGrants(last))
	}
}
