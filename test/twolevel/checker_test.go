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
	"sort"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"

	bsv1 "github.com/batch-scheduler/batch-scheduler/pkg/apis/batchscheduler/v1alpha1"
)

// Tolerances of the grant check. A placement is judged against the
// largest grant its framework held on the node (as the checker saw the
// allocator's grants) from grantLead before the checker saw the placement
// to grantLag after: grants reach the frameworks through their own
// watches, a framework decides a little before its placement is visible,
// and the checker polls the grants every grantPoll. A framework that
// ignored its grants would place far outside this window.
const (
	grantLead = 2 * time.Second
	grantLag  = 500 * time.Millisecond
	grantPoll = 100 * time.Millisecond
	vmPoll    = 100 * time.Millisecond
	// checkEvery bounds the time between two checks when nothing changes.
	checkEvery = 250 * time.Millisecond
	// resizeGrace is how long after a node shrank a placement there is
	// excused for not having seen it yet: the placers learn of it
	// through their watches. A node shrunk below what already runs on it
	// is over-committed by the resize, not by a placer; that is excused as
	// long as nothing is placed there after the grace.
	resizeGrace = 3 * time.Second
	// confirmWait bounds how long finish waits for the over-commits seen
	// in the live views to be re-read (a manager may be down).
	confirmWait = 60 * time.Second
)

// amount is cpu (milli) and memory (bytes).
type amount struct{ cpu, mem int64 }

func (a amount) add(b amount) amount   { return amount{a.cpu + b.cpu, a.mem + b.mem} }
func (a amount) exceeds(b amount) bool { return a.cpu > b.cpu || a.mem > b.mem }
func (a amount) String() string {
	return fmt.Sprintf("cpu=%dm memory=%s", a.cpu, resource.NewQuantity(a.mem, resource.BinarySI))
}
func amountOf(l v1.ResourceList) amount { return amount{l.Cpu().MilliValue(), l.Memory().Value()} }
func maxAmount(a, b amount) amount      { return amount{max(a.cpu, b.cpu), max(a.mem, b.mem)} }
func podAmount(p *v1.Pod) amount {
	var a amount
	for _, c := range p.Spec.Containers {
		a = a.add(amountOf(c.Resources.Requests))
	}
	return a
}

// grantKey is a framework on a node.
type grantKey struct{ framework, node string }

// grantSample is a framework's live grant on a node as seen at a time.
type grantSample struct {
	at    time.Time
	grant amount
}

// grantGap is a time the checker could not read the grants, from its last
// read before to its first read after.
type grantGap struct{ start, end time.Time }

// placement is a pod or VM the checker saw placed, with its framework's
// whole usage on the node right after it.
type placement struct {
	what string
	at   time.Time
	key  grantKey
	used amount
}

// checker watches the apiserver (pods of one namespace, the test's
// nodes), the allocator's grants (if any) and the VM manager's VMs (if
// any), and nothing else, and checks at every change it observes and
// every checkEvery:
//   - no node where bound pods and running VMs request more than its
//     allocatable. The live views are taken at different times, so an
//     over-commit seen in them is a suspect: it is re-read consistently
//     (confirm) and counts as a violation if the re-read shows it, as
//     ruled out if not. A suspect whose re-read fails (a manager is down)
//     is retried until it succeeds; finish fails the test for any suspect
//     never re-read;
//   - no placement above its framework's grant (see grantLead);
//   - the allocator's live grants on a node never add up to more than the
//     node's allocatable;
//   - no pod ever bound to two nodes.
type checker struct {
	t  *testing.T
	ns string
	// frameworkOf maps a scheduler name to its framework.
	frameworkOf map[string]string
	grantsURL   string
	vm          *vmManagerProc
	vmFramework string

	cancel  context.CancelFunc
	wg      sync.WaitGroup
	trigger chan struct{}

	mu sync.Mutex
	// allocatable is each test node's, as the API server last said, and
	// shrunk when it last went down in some resource.
	allocatable map[string]amount
	shrunk      map[string]time.Time
	// pods mirrors the namespace's pods in event order.
	pods map[string]*v1.Pod
	// boundTo is where each pod (by UID) was first seen bound, and
	// boundAt when.
	boundTo map[types.UID]string
	boundAt map[types.UID]time.Time
	// vms are the running VMs of the last poll, by name; vmSince is when
	// each VM was first seen running on its host ("name@host").
	vms          map[string]vmInfo
	vmSince      map[string]time.Time
	grants       map[grantKey][]grantSample
	grantsPolled bool
	// lastGrantPoll is when the grants were last read. While the
	// allocator cannot be read (it is down), a gap is open; grantGaps are
	// the closed ones (see pollGrants).
	lastGrantPoll time.Time
	grantGapOpen  bool
	grantGaps     []grantGap
	pending       []placement
	// suspects are the nodes seen over-committed in the live views and
	// not yet re-read, with when they were first seen.
	suspects map[string]time.Time

	moments, placementsChecked, podPlacements, vmPlacements int
	ruledOut, rereadFailures, grantPollErrors, excused      int
	violations                                              []string
	seen                                                    map[string]int
	violationMoments                                        int
}

// startChecker starts checking the pods of ns and the VMs of vm (nil:
// none) on nodes; stop it with finish.
func startChecker(t *testing.T, ns string, nodes []string, frameworkOf map[string]string, grantsURL string, vm *vmManagerProc, vmFramework string) *checker {
	t.Helper()
	c := &checker{t: t, ns: ns, frameworkOf: frameworkOf, grantsURL: grantsURL,
		vm: vm, vmFramework: vmFramework, trigger: make(chan struct{}, 1),
		allocatable: map[string]amount{}, shrunk: map[string]time.Time{},
		seen: map[string]int{}, pods: map[string]*v1.Pod{}, boundTo: map[types.UID]string{}, boundAt: map[types.UID]time.Time{},
		vms: map[string]vmInfo{}, vmSince: map[string]time.Time{}, grants: map[grantKey][]grantSample{}, suspects: map[string]time.Time{}}
	ours := map[string]bool{}
	for _, n := range nodes {
		ours[n] = true
	}
	ctx, cancel := context.WithCancel(context.Background())
	c.cancel = cancel
	factory := informers.NewSharedInformerFactoryWithOptions(cp.Client, 0, informers.WithNamespace(ns))
	inf := factory.Core().V1().Pods().Informer()
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { c.observePod(obj, false) },
		UpdateFunc: func(_, obj any) { c.observePod(obj, false) },
		DeleteFunc: func(obj any) { c.observePod(obj, true) },
	}); err != nil {
		t.Fatal(err)
	}
	nodeFactory := informers.NewSharedInformerFactory(cp.Client, 0)
	nodeInf := nodeFactory.Core().V1().Nodes().Informer()
	if _, err := nodeInf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { c.observeNode(obj, ours) },
		UpdateFunc: func(_, obj any) { c.observeNode(obj, ours) },
	}); err != nil {
		t.Fatal(err)
	}
	factory.Start(ctx.Done())
	nodeFactory.Start(ctx.Done())
	if !cache.WaitForCacheSync(t.Context().Done(), inf.HasSynced, nodeInf.HasSynced) {
		t.Fatal("the checker's informers never synced")
	}
	c.wg.Add(3)
	go c.poll(ctx, grantPoll, c.pollGrants)
	go c.poll(ctx, vmPoll, c.pollVMs)
	go c.loop(ctx)
	t.Cleanup(func() {
		cancel()
		factory.Shutdown()
		nodeFactory.Shutdown()
	})
	return c
}

// observeNode records a test node's allocatable, and when it shrank.
func (c *checker) observeNode(obj any, ours map[string]bool) {
	n, ok := obj.(*v1.Node)
	if !ok || !ours[n.Name] {
		return
	}
	a := amountOf(n.Status.Allocatable)
	c.mu.Lock()
	defer c.mu.Unlock()
	if old, known := c.allocatable[n.Name]; known && (a.cpu < old.cpu || a.mem < old.mem) {
		c.shrunk[n.Name] = time.Now()
	}
	c.allocatable[n.Name] = a
	c.kick()
}

func (c *checker) kick() {
	select {
	case c.trigger <- struct{}{}:
	default:
	}
}

// violate records a violation; the same message seen again (an
// over-commit that lasts) is counted, not repeated.
func (c *checker) violate(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	if c.seen[msg] == 0 {
		c.violations = append(c.violations, time.Now().Format("15:04:05.000")+" "+msg)
	}
	c.seen[msg]++
	c.violationMoments++
}

// observePod updates the mirror in event order and records new bindings.
func (c *checker) observePod(obj any, deleted bool) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	p, ok := obj.(*v1.Pod)
	if !ok {
		return
	}
	key := p.Namespace + "/" + p.Name
	now := time.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	if deleted {
		delete(c.pods, key)
		c.kick()
		return
	}
	c.pods[key] = p
	if p.Spec.NodeName != "" {
		if first, seen := c.boundTo[p.UID]; !seen {
			c.boundTo[p.UID] = p.Spec.NodeName
			c.boundAt[p.UID] = now
			c.podPlacements++
			if fw, ours := c.frameworkOf[p.Spec.SchedulerName]; ours {
				k := grantKey{fw, p.Spec.NodeName}
				c.pending = append(c.pending, placement{what: "pod " + key, at: now, key: k, used: c.podUsageLocked(p.Spec.SchedulerName, p.Spec.NodeName)})
			}
		} else if first != p.Spec.NodeName {
			c.violate("pod %s bound to %s, then to %s", key, first, p.Spec.NodeName)
		}
	}
	c.kick()
}

// podUsageLocked is what the pods of scheduler request on node.
func (c *checker) podUsageLocked(scheduler, node string) amount {
	var a amount
	for _, p := range c.pods {
		if p.Spec.NodeName == node && p.Spec.SchedulerName == scheduler && !terminal(p) {
			a = a.add(podAmount(p))
		}
	}
	return a
}

func terminal(p *v1.Pod) bool {
	return p.Status.Phase == v1.PodSucceeded || p.Status.Phase == v1.PodFailed
}

func (c *checker) poll(ctx context.Context, every time.Duration, f func(context.Context)) {
	defer c.wg.Done()
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		f(ctx)
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// pollGrants records a sample of every framework's live grant on every
// node, and checks that the grants of a node fit in it.
func (c *checker) pollGrants(ctx context.Context) {
	if c.grantsURL == "" {
		return
	}
	reqCtx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	var l bsv1.GrantList
	if err := getJSON(reqCtx, c.grantsURL+"/apis/batch-scheduler.io/v1alpha1/grants", &l); err != nil {
		// The allocator may be down: the grants last seen stay in force
		// for the checker, and a gap opens. A version published just
		// before the allocator died may have reached a framework and not
		// the checker; the gap closes with what the restarted allocator
		// says each framework may still believe (see below).
		c.mu.Lock()
		c.grantPollErrors++
		c.grantGapOpen = c.grantsPolled
		c.mu.Unlock()
		return
	}
	c.mu.Lock()
	gapOpen := c.grantGapOpen
	c.mu.Unlock()
	// believed is, after a gap, the most each framework may believe of
	// its grant on each node, from the allocator's status: it counts every
	// version published and not acknowledged, those of the allocator's run
	// before its restart too (its state file keeps them).
	believed := map[grantKey]amount{}
	if gapOpen {
		var st struct {
			Frameworks map[string]struct {
				Held map[string]struct {
					Believed v1.ResourceList `json:"believed"`
				} `json:"held"`
			} `json:"frameworks"`
		}
		if err := getJSON(reqCtx, c.grantsURL+"/allocation", &st); err != nil {
			c.mu.Lock()
			c.grantPollErrors++
			c.mu.Unlock()
			return
		}
		for fw, fs := range st.Frameworks {
			for node, h := range fs.Held {
				believed[grantKey{fw, node}] = amountOf(h.Believed)
			}
		}
	}
	now := time.Now()
	live := map[grantKey]amount{}
	for _, g := range l.Items {
		if g.Status.Phase != "" && g.Status.Phase != bsv1.GrantActive {
			continue
		}
		if g.Spec.ExpiresAt != nil && !now.Before(g.Spec.ExpiresAt.Time) {
			continue
		}
		k := grantKey{g.Spec.Framework, g.Spec.NodeName}
		live[k] = live[k].add(amountOf(g.Spec.Resources))
	}
	for k, b := range believed {
		live[k] = maxAmount(live[k], b)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.grantGapOpen {
		c.grantGaps = append(c.grantGaps, grantGap{start: c.lastGrantPoll, end: now})
		c.grantGapOpen = false
	}
	c.lastGrantPoll = now
	c.grantsPolled = true
	changed := false
	perNode := map[string]amount{}
	seen := map[grantKey]bool{}
	for k, a := range live {
		perNode[k.node] = perNode[k.node].add(a)
		seen[k] = true
	}
	for k := range c.grants {
		if !seen[k] {
			live[k] = amount{}
		}
	}
	for k, a := range live {
		s := c.grants[k]
		if len(s) == 0 || s[len(s)-1].grant != a {
			changed = true
		}
		c.grants[k] = append(s, grantSample{at: now, grant: a})
	}
	for n, a := range perNode {
		if alloc, ours := c.allocatable[n]; ours && a.exceeds(alloc) {
			c.violate("the allocator's live grants on %s add up to %s, above its allocatable %s", n, a, alloc)
		}
	}
	if changed {
		c.kick()
	}
}

// pollVMs records the running VMs and their new placements.
func (c *checker) pollVMs(ctx context.Context) {
	if c.vm == nil {
		return
	}
	reqCtx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	list, err := c.vm.vms(reqCtx)
	if err != nil {
		return
	}
	now := time.Now()
	running := map[string]vmInfo{}
	perHost := map[string]amount{}
	for _, v := range list {
		if v.Phase == "Running" && v.Host != "" {
			running[v.Name] = v
			perHost[v.Host] = perHost[v.Host].add(vmAmount(v))
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	changed := len(running) != len(c.vms)
	for name, v := range running {
		if old, ok := c.vms[name]; ok && old.Host == v.Host {
			continue
		}
		if _, ok := c.vmSince[name+"@"+v.Host]; !ok {
			c.vmSince[name+"@"+v.Host] = now
		}
		changed = true
		c.pending = append(c.pending, placement{what: "VM " + name, at: now, key: grantKey{c.vmFramework, v.Host}, used: perHost[v.Host]})
		c.vmPlacements++
	}
	c.vms = running
	if changed {
		c.kick()
	}
}

func vmAmount(v vmInfo) amount {
	cpu, mem := resource.MustParse(v.CPU), resource.MustParse(v.Memory)
	return amount{cpu.MilliValue(), mem.Value()}
}

func (c *checker) loop(ctx context.Context) {
	defer c.wg.Done()
	tick := time.NewTicker(checkEvery)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-c.trigger:
		case <-tick.C:
		}
		c.check(ctx, false)
	}
}

// check is one moment: node over-commit in the live views (each one a
// suspect, re-read by confirm), and the placements whose grant window has
// passed (all of them when final).
func (c *checker) check(ctx context.Context, final bool) {
	c.mu.Lock()
	c.moments++
	used := map[string]amount{}
	for _, p := range c.pods {
		if p.Spec.NodeName != "" && !terminal(p) {
			used[p.Spec.NodeName] = used[p.Spec.NodeName].add(podAmount(p))
		}
	}
	for _, v := range c.vms {
		used[v.Host] = used[v.Host].add(vmAmount(v))
	}
	now := time.Now()
	for n, a := range used {
		if alloc, ours := c.allocatable[n]; ours && a.exceeds(alloc) {
			if _, known := c.suspects[n]; !known {
				c.suspects[n] = now
			}
		}
	}
	var keep []placement
	for _, pl := range c.pending {
		if !final && (now.Sub(pl.at) < grantLag+grantPoll || c.grantGapOpen) {
			// Its window has not passed, or the grants cannot be read
			// now: judge it once they can.
			keep = append(keep, pl)
			continue
		}
		c.placementsChecked++
		if !c.grantsPolled || pl.key.framework == "" {
			continue
		}
		g := c.maxGrantLocked(pl.key, pl.at.Add(-grantLead), pl.at.Add(grantLag))
		if pl.used.exceeds(g) {
			c.violate("%s on %s: framework %s uses %s there, above the largest grant it held from %s before to %s after (%s)",
				pl.what, pl.key.node, pl.key.framework, pl.used, grantLead, grantLag, g)
		}
	}
	c.pending = keep
	var suspects []string
	for n := range c.suspects {
		suspects = append(suspects, n)
	}
	c.mu.Unlock()
	if len(suspects) > 0 {
		c.confirm(ctx, suspects)
	}
}

// maxGrantLocked is the largest grant of k in force at any time in
// [from, to]: the samples in the window and the last one before it.
func (c *checker) maxGrantLocked(k grantKey, from, to time.Time) amount {
	// A window that overlaps a gap reaches to the first read after it.
	for _, g := range c.grantGaps {
		if g.start.Before(to) && g.end.After(from) && g.end.After(to) {
			to = g.end
		}
	}
	var best amount
	for _, s := range c.grants[k] {
		if s.at.After(to) {
			break
		}
		if s.at.Before(from) {
			best = s.grant // in force at from, unless a later sample replaces it
			continue
		}
		best = maxAmount(best, s.grant)
	}
	return best
}

// confirm re-reads the cluster consistently for the suspect nodes: the
// VMs, then the pods from the API server, then the VMs again. Only VMs
// present in both VM reads surely ran while the pods were listed, so the
// sum is a lower bound of what each node held at that moment, and an
// over-commit of that sum is real: a violation, unless the node shrank
// under what already ran there (see resizeGrace). A suspect the re-read
// clears was an artifact of views taken at different times: ruled out.
// When a read fails (a manager is down), the suspects stay for the next
// check and the failure is counted.
func (c *checker) confirm(ctx context.Context, nodes []string) {
	var before, after []vmInfo
	var err error
	readCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if c.vm != nil {
		before, err = c.vm.vms(readCtx)
	}
	var list *v1.PodList
	if err == nil {
		list, err = cp.Client.CoreV1().Pods(c.ns).List(readCtx, metav1.ListOptions{})
	}
	if err == nil && c.vm != nil {
		after, err = c.vm.vms(readCtx)
	}
	if err != nil {
		c.mu.Lock()
		c.rereadFailures++
		c.mu.Unlock()
		return
	}
	stable := map[string]amount{}
	stableVMs := map[string][]string{}
	again := map[string]vmInfo{}
	for _, v := range after {
		again[v.Name] = v
	}
	for _, v := range before {
		if w, ok := again[v.Name]; ok && v.Phase == "Running" && w.Phase == "Running" && v.Host == w.Host {
			stable[v.Host] = stable[v.Host].add(vmAmount(v))
			stableVMs[v.Host] = append(stableVMs[v.Host], v.Name)
		}
	}
	used := map[string]amount{}
	pods := map[string][]*v1.Pod{}
	for i := range list.Items {
		p := &list.Items[i]
		if p.Spec.NodeName != "" && !terminal(p) {
			used[p.Spec.NodeName] = used[p.Spec.NodeName].add(podAmount(p))
			pods[p.Spec.NodeName] = append(pods[p.Spec.NodeName], p)
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, n := range nodes {
		delete(c.suspects, n)
		total := used[n].add(stable[n])
		if !total.exceeds(c.allocatable[n]) {
			c.ruledOut++
			continue
		}
		if c.excusedLocked(n, pods[n], stableVMs[n]) {
			c.excused++
			continue
		}
		var names []string
		for _, p := range pods[n] {
			names = append(names, fmt.Sprintf("%s(%s)", p.Name, podAmount(p)))
		}
		sort.Strings(names)
		c.violate("node %s over-committed: pods %s + VMs %s > allocatable %s; pods %v, VMs %v", n, used[n], stable[n], c.allocatable[n], names, stableVMs[n])
	}
}

// excusedLocked reports whether node n is over-committed by a resize
// alone: it shrank, and everything on it now was placed before the
// placers could know (before the shrink plus resizeGrace).
func (c *checker) excusedLocked(n string, pods []*v1.Pod, vms []string) bool {
	shrunk, ok := c.shrunk[n]
	if !ok {
		return false
	}
	deadline := shrunk.Add(resizeGrace)
	for _, p := range pods {
		if at, seen := c.boundAt[p.UID]; !seen || at.After(deadline) {
			return false
		}
	}
	for _, v := range vms {
		if at, seen := c.vmSince[v+"@"+n]; !seen || at.After(deadline) {
			return false
		}
	}
	return true
}

// placements returns how many placements of pods and of VMs the checker
// has seen.
func (c *checker) placements() (pods, vms int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.podPlacements, c.vmPlacements
}

// requirePlacements fails the test unless the checker saw placements of
// both pods and VMs: a churn that placed none of one kind checked nothing
// of their collisions.
func (c *checker) requirePlacements(t *testing.T) {
	t.Helper()
	pods, vms := c.placements()
	if pods == 0 || vms == 0 {
		t.Errorf("the churn placed %d pods and %d VMs; want some of each for the check to mean anything", pods, vms)
	}
	t.Logf("placements seen: %d pods, %d VMs", pods, vms)
}

// finish stops the checker, judges the placements still waiting for
// their window and re-reads the suspects left (waiting up to confirmWait
// for the managers to answer), logs the figures and fails the test on
// any violation and on any suspect never re-read.
func (c *checker) finish(t *testing.T) {
	t.Helper()
	// Let the last placements' windows pass with the pollers running.
	_ = wait.PollUntilContextTimeout(t.Context(), 50*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		c.mu.Lock()
		defer c.mu.Unlock()
		return len(c.pending) == 0, nil
	})
	c.cancel()
	c.wg.Wait()
	c.check(context.Background(), true)
	_ = wait.PollUntilContextTimeout(t.Context(), 250*time.Millisecond, confirmWait, true, func(ctx context.Context) (bool, error) {
		c.mu.Lock()
		var left []string
		for n := range c.suspects {
			left = append(left, n)
		}
		c.mu.Unlock()
		if len(left) == 0 {
			return true, nil
		}
		c.confirm(ctx, left)
		return false, nil
	})
	c.mu.Lock()
	defer c.mu.Unlock()
	t.Logf("checker: %d moments checked, %d placements checked (%d pods, %d VMs), %d distinct violations seen %d times; "+
		"over-commits seen in the live views: %d ruled out by a consistent re-read, %d excused (a node shrunk under what ran there), %d never re-read; "+
		"%d re-reads failed and were retried, %d grant polls failed",
		c.moments, c.placementsChecked, c.podPlacements, c.vmPlacements, len(c.violations), c.violationMoments,
		c.ruledOut, c.excused, len(c.suspects), c.rereadFailures, c.grantPollErrors)
	for i, v := range c.violations {
		if i == 30 {
			t.Errorf("... and %d more violations", len(c.violations)-30)
			break
		}
		t.Errorf("violation: %s", v)
	}
	for n, at := range c.suspects {
		t.Errorf("node %s was seen over-committed in the live views at %s and could not be re-read for %s: unconfirmed", n, at.Format("15:04:05.000"), confirmWait)
	}
}
