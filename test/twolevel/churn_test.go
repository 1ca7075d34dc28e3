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
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	bsv1 "github.com/batch-scheduler/batch-scheduler/pkg/apis/batchscheduler/v1alpha1"
	"github.com/batch-scheduler/batch-scheduler/pkg/demand"
	st "github.com/batch-scheduler/batch-scheduler/pkg/testing"
	"github.com/batch-scheduler/batch-scheduler/test/controlplane"
)

// churnDuration is how long each churn test churns: 30 seconds in make
// test, 2 minutes with TWOLEVEL_CHURN=full (make test-chaos, which runs
// them with several seeds).
func churnDuration() time.Duration {
	if os.Getenv("TWOLEVEL_CHURN") == "full" {
		return 2 * time.Minute
	}
	return 30 * time.Second
}

// churnSeed is TWOLEVEL_CHURN_SEED when set (to replay a run), else the
// time.
func churnSeed(t *testing.T) uint64 {
	t.Helper()
	if v := os.Getenv("TWOLEVEL_CHURN_SEED"); v != "" {
		seed, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			t.Fatalf("TWOLEVEL_CHURN_SEED=%q: %v", v, err)
		}
		return seed
	}
	return uint64(time.Now().UnixNano())
}

// resizeEvery bounds how often the churn resizes a node: hosts change
// size rarely, and a node shrunk under what runs there is over-committed
// by the resize until the churn frees it (see resizeGrace).
const resizeEvery = 10 * time.Second

// fault kills one component (SIGKILL) at a point of the churn and starts
// it again down later; the churn goes on meanwhile.
type fault struct {
	name string
	// at is the share of the churn's duration when it strikes.
	at float64
	// down is how long the component stays dead.
	down    time.Duration
	kill    func()
	restart func(t *testing.T)

	killed, restarted time.Time
}

// churner makes random changes: pods and gangs of the schedulers (created,
// finished, deleted), VMs (created, deleted), and, in the two-level test,
// framework weights and revocations, in the hybrid one node sizes; and it
// strikes its faults on time.
type churner struct {
	t          *testing.T
	rng        *rand.Rand
	ns         string
	schedulers []string
	nodes      []string
	vm         *vmManagerProc
	// alloc and frameworks are set in the two-level test: frameworks are
	// re-registered with a new weight, keeping their demand URL.
	alloc      *allocatorProc
	frameworks []framework
	// resize enables node resizes (hybrid test), to one of resizeCPU.
	resize    bool
	resizeCPU []string
	// raceShare is the share of the steps that are races (see race), on
	// top of the few of the random mix.
	raceShare float64
	faults    []*fault
	// pause bounds the wait between two changes.
	pause [2]time.Duration

	seq        int
	lastResize time.Time
	singles    []string
	gangs      map[string][]string
	vms        []string
	revoked    map[string]bool
	counts     map[string]int
}

func newChurner(t *testing.T, ns string, schedulers, nodes []string, vm *vmManagerProc) *churner {
	seed := churnSeed(t)
	t.Logf("churn for %s, seed %d (TWOLEVEL_CHURN_SEED=%d replays it)", churnDuration(), seed, seed)
	return &churner{t: t, rng: rand.New(rand.NewPCG(seed, 0)), ns: ns, schedulers: schedulers, nodes: nodes, vm: vm,
		pause: [2]time.Duration{50 * time.Millisecond, 250 * time.Millisecond},
		gangs: map[string][]string{}, revoked: map[string]bool{}, counts: map[string]int{}}
}

func (c *churner) name(prefix string) string {
	c.seq++
	return fmt.Sprintf("%s-%04d", prefix, c.seq)
}

// down reports whether a fault has the component name dead now.
func (c *churner) down(name string) bool {
	for _, f := range c.faults {
		if f.name == name && !f.killed.IsZero() && f.restarted.IsZero() {
			return true
		}
	}
	return false
}

// run churns for churnDuration, striking the faults on time; it returns
// early if the test failed.
func (c *churner) run(ctx context.Context) {
	start := time.Now()
	d := churnDuration()
	end := start.Add(d)
	for time.Now().Before(end) && !c.t.Failed() {
		for _, f := range c.faults {
			switch {
			case f.killed.IsZero() && time.Since(start) >= time.Duration(f.at*float64(d)):
				f.kill()
				f.killed = time.Now()
				c.t.Logf("fault: %s killed (SIGKILL) at %s", f.name, time.Since(start).Round(time.Millisecond))
			case !f.killed.IsZero() && f.restarted.IsZero() && time.Since(f.killed) >= f.down:
				f.restart(c.t)
				f.restarted = time.Now()
				c.t.Logf("fault: %s back at %s", f.name, time.Since(start).Round(time.Millisecond))
			}
		}
		c.step(ctx)
		// Pace the changes; the placers react in between. This is the
		// churn's rate, not a wait for a condition.
		select {
		case <-ctx.Done():
			return
		case <-time.After(c.pause[0] + time.Duration(c.rng.Int64N(int64(c.pause[1]-c.pause[0])))):
		}
	}
	for _, f := range c.faults {
		if f.killed.IsZero() || f.restarted.IsZero() {
			c.t.Errorf("fault %s did not run its course (killed %v, restarted %v)", f.name, !f.killed.IsZero(), !f.restarted.IsZero())
		}
	}
	c.t.Logf("churn: %v", c.counts)
}

// step makes one random change. Answers the churn can cause (a VM
// refused, a manager down, a pod already gone) are counted, not failures.
func (c *churner) step(ctx context.Context) {
	live := len(c.singles)
	for _, g := range c.gangs {
		live += len(g)
	}
	if c.rng.Float64() < c.raceShare {
		c.race(ctx)
		return
	}
	r := c.rng.IntN(100)
	if live > 40 {
		r = 40 // delete something
	}
	switch {
	case r < 25:
		sched := c.schedulers[c.rng.IntN(len(c.schedulers))]
		name := c.name("p")
		cpu := []string{"500m", "1", "2"}[c.rng.IntN(3)]
		c.create(ctx, pod(c.ns, name, sched, cpu))
		c.singles = append(c.singles, name)
		c.counts["pods created"]++
	case r < 35:
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
	case r < 45:
		c.finishOne(ctx)
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
	case r < 65:
		c.createVM(ctx)
	case r < 70:
		c.burst(ctx)
	case r < 75:
		c.race(ctx)
	case r < 85:
		c.deleteVM(ctx)
	case r < 92 && c.resize:
		c.resizeNode(ctx)
	case r < 92 && c.alloc != nil:
		if c.down("allocator") {
			return
		}
		f := c.frameworks[c.rng.IntN(len(c.frameworks))]
		f.Weight = float64(1 + c.rng.IntN(3))
		c.alloc.putFramework(c.t, f)
		c.counts["weights changed"]++
	case c.alloc != nil:
		if c.down("allocator") {
			return
		}
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

// finishOne makes a bound single pod finish (phase Succeeded), as its
// kubelet would report it; its capacity frees while the pod object stays
// until the churn deletes it.
func (c *churner) finishOne(ctx context.Context) {
	if len(c.singles) == 0 {
		return
	}
	name := c.singles[c.rng.IntN(len(c.singles))]
	p, err := cp.Client.CoreV1().Pods(c.ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil || p.Spec.NodeName == "" || terminal(p) {
		return
	}
	p.Status.Phase = v1.PodSucceeded
	if _, err := cp.Client.CoreV1().Pods(c.ns).UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
		if !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			c.t.Errorf("churn: finishing pod %s/%s: %v", c.ns, name, err)
		}
		return
	}
	c.counts["pods finished"]++
}

// burst creates pods and, a moment later, VMs of the same size: the
// scheduler binds the pods about when the VM manager places the VMs, so
// both placers race for the same room. The delay varies from burst to
// burst to sweep the window in which each learns of the other's
// placement only through a watch.
func (c *churner) burst(ctx context.Context) {
	n := 2 + c.rng.IntN(3)
	sched := c.schedulers[c.rng.IntN(len(c.schedulers))]
	for range n {
		name := c.name("b")
		c.create(ctx, pod(c.ns, name, sched, "1"))
		c.singles = append(c.singles, name)
	}
	delay := time.Duration(c.rng.IntN(300)) * time.Millisecond
	names := make([]string, n)
	for i := range names {
		names[i] = c.name("vm")
	}
	select {
	case <-ctx.Done():
		return
	case <-time.After(delay):
	}
	type result struct {
		name string
		code int
		body string
		err  error
	}
	results := make(chan result, n)
	for _, name := range names {
		go func() {
			code, body, err := c.vm.createVM(ctx, name, "1", "1Gi", "")
			results <- result{name, code, body, err}
		}()
	}
	for range names {
		r := <-results
		c.recordVM(r.name, r.code, r.body, r.err)
	}
	c.counts["bursts"]++
}

// race frees room on a host and, a moment later, asks for a VM there,
// while the scheduler has pods waiting for room: the scheduler's next pod
// and the VM go for the same room, each learning of the other only through
// a watch. It deletes a bound pod of 1 or 2 cpu and asks for a VM of its
// size on its host after 0 to 150 ms.
func (c *churner) race(ctx context.Context) {
	list, err := cp.Client.CoreV1().Pods(c.ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		c.t.Errorf("churn: listing pods: %v", err)
		return
	}
	var candidates []*v1.Pod
	for i := range list.Items {
		p := &list.Items[i]
		if p.Spec.NodeName != "" && !terminal(p) && p.Annotations[st.GroupNameAnnotation] == "" && podCPU(p) >= 1000 {
			candidates = append(candidates, p)
		}
	}
	if len(candidates) == 0 {
		return
	}
	victim := candidates[c.rng.IntN(len(candidates))]
	for i, name := range c.singles {
		if name == victim.Name {
			c.singles = append(c.singles[:i], c.singles[i+1:]...)
			break
		}
	}
	c.delete(ctx, victim.Name)
	name := c.name("vm")
	select {
	case <-ctx.Done():
		return
	case <-time.After(time.Duration(c.rng.IntN(150)) * time.Millisecond):
	}
	cpu := resource.NewMilliQuantity(podCPU(victim), resource.DecimalSI).String()
	code, body, err := c.vm.createVM(ctx, name, cpu, "1Gi", victim.Spec.NodeName)
	c.recordVM(name, code, body, err)
	c.counts["races"]++
}

func (c *churner) createVM(ctx context.Context) {
	name := c.name("vm")
	cpu := []string{"500m", "1", "2"}[c.rng.IntN(3)]
	code, body, err := c.vm.createVM(ctx, name, cpu, "1Gi", "")
	c.recordVM(name, code, body, err)
}

// recordVM counts the answer to the creation of VM name and keeps it for
// deletion if it was created.
func (c *churner) recordVM(name string, code int, body string, err error) {
	switch {
	case err != nil && c.down("vm-manager"):
		c.counts["VM calls to a dead manager"]++
	case err != nil:
		c.t.Errorf("creating VM %s: %v", name, err)
	case code == http.StatusCreated || code == http.StatusAccepted:
		c.vms = append(c.vms, name)
		c.counts["VMs created"]++
	case code == http.StatusConflict || code == http.StatusServiceUnavailable:
		// No room (hybrid), or the ledger unavailable: refused.
		c.counts[fmt.Sprintf("VMs refused (%d)", code)]++
	default:
		c.t.Errorf("creating VM %s: HTTP %d %s", name, code, body)
	}
}

func (c *churner) deleteVM(ctx context.Context) {
	if len(c.vms) == 0 {
		return
	}
	i := c.rng.IntN(len(c.vms))
	code, body, err := call(ctx, http.MethodDelete, c.vm.url+"/vms/"+c.vms[i], "")
	switch {
	case err != nil && c.down("vm-manager"):
		c.counts["VM calls to a dead manager"]++
		return
	case err != nil:
		c.t.Errorf("deleting VM %s: %v", c.vms[i], err)
		return
	case code == http.StatusConflict:
		// Its placement is being committed: delete it later.
		c.counts["VM deletions retried"]++
		return
	case code != http.StatusOK:
		c.t.Errorf("deleting VM %s: HTTP %d %s", c.vms[i], code, body)
	}
	c.vms = append(c.vms[:i], c.vms[i+1:]...)
	c.counts["VMs deleted"]++
}

// resizeNode sets a node's cpu to one of resizeCPU, as a host that loses
// or gains CPUs would report it, at most once every resizeEvery.
func (c *churner) resizeNode(ctx context.Context) {
	if time.Since(c.lastResize) < resizeEvery {
		return
	}
	c.lastResize = time.Now()
	name := c.nodes[c.rng.IntN(len(c.nodes))]
	cpu := resource.MustParse(c.resizeCPU[c.rng.IntN(len(c.resizeCPU))])
	n, err := cp.Client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		c.t.Errorf("resizing node %s: %v", name, err)
		return
	}
	n.Status.Capacity[v1.ResourceCPU] = cpu
	n.Status.Allocatable[v1.ResourceCPU] = cpu
	if _, err := cp.Client.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{}); err != nil {
		if !apierrors.IsConflict(err) {
			c.t.Errorf("resizing node %s: %v", name, err)
		}
		return
	}
	c.counts["nodes resized"]++
}

// Two batch-scheduler instances (frameworks batch-a and batch-b) and the
// VM manager (framework vms) under one allocator, with random churn of
// pods (created, finished, deleted), gangs, VMs, weights and revocations,
// and the allocator, the VM manager and a scheduler each killed with
// SIGKILL once and started again; the checker, reading only the API
// server and the two managers, must find no over-committed node and no
// framework placing above its grant, and no over-commit left unconfirmed.
func TestTwoFrameworksChurn(t *testing.T) {
	ns := createNamespace(t)
	nodes := createNodes(t, "churn", 5, "8")
	portA, portB := freePort(t), freePort(t)
	vmListen := "127.0.0.1:" + strconv.Itoa(freePort(t))
	dir := t.TempDir()
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
	opts := allocatorOptions{idleTimeout: 3 * time.Second, frameworks: fws, stateFile: filepath.Join(dir, "allocator-state.yaml")}
	a, scheds := startTwoLevelProcs(t, opts,
		func(a *allocatorProc) {
			vm = startVMManagerWith(t, vmManagerOptions{listen: vmListen, framework: "vms", grantsURL: a.url,
				stateFile: filepath.Join(dir, "vm-state.json")})
		},
		schedulerSpec{name: "tl-churn-a", framework: "batch-a", port: portA, vmURL: "http://" + vmListen},
		schedulerSpec{name: "tl-churn-b", framework: "batch-b", port: portB, vmURL: "http://" + vmListen, evictOnRevoke: true})
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

	chk := startChecker(t, ns, nodes, map[string]string{"tl-churn-a": "batch-a", "tl-churn-b": "batch-b"}, a.url, vm, "vms")
	ch := newChurner(t, ns, []string{"tl-churn-a", "tl-churn-b"}, nodes, vm)
	ch.alloc, ch.frameworks = a, fws
	allocOpts := a.opts
	ch.faults = []*fault{
		{name: "allocator", at: 0.2, down: 3 * time.Second, kill: func() { ch.alloc.kill() },
			restart: func(t *testing.T) { ch.alloc = startAllocator(t, allocOpts) }},
		{name: "vm-manager", at: 0.45, down: 3 * time.Second, kill: func() { vm.kill() }, restart: vm.restart},
		{name: "scheduler tl-churn-a", at: 0.7, down: 3 * time.Second, kill: func() { scheds[0].kill() }, restart: scheds[0].restart},
	}
	ch.run(t.Context())
	chk.finish(t)
	chk.requirePlacements(t)
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
	idle.acknowledge(a.url)
	s := scheds[0]
	a.waitGrants(t, "batch holds a grant on every node", 30*time.Second, func(gs []bsv1.Grant) bool {
		for _, g := range grantsOf(gs, "batch", nodes) {
			if g == 0 {
				return false
			}
		}
		return true
	})
	chk := startChecker(t, ns, nodes, map[string]string{name: "batch"}, a.url, nil, "")
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
		t.Fatalf("batch-scheduler exited with %d: %s", code, s.Stderr())
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
	idle.acknowledge(a.url)
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
