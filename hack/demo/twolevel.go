package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/batch-scheduler/batch-scheduler/pkg/cache"
	"github.com/batch-scheduler/batch-scheduler/pkg/demand"
	"github.com/batch-scheduler/batch-scheduler/pkg/resources"
	st "github.com/batch-scheduler/batch-scheduler/pkg/testing"
	"github.com/batch-scheduler/batch-scheduler/test/controlplane"
)

// The two-level story. Three equal nodes (8 cpu, 16Gi) are divided by the
// allocator between two frameworks of weight 1: batch (batch-scheduler,
// two-level handler) and vms (the VM manager in two-level mode). Each
// framework gets half of each node: 4 cpu, 8Gi.
//
//  1. The nodes join; the grants appear and reach the scheduler as caps.
//  2. VMs: vm-a and vm-b (2 cpu, 4Gi each) fill vms's grant on node-1
//     (first fit, by name); vm-big (6 cpu) fits in no grant of vms (4 cpu
//     per node) and waits. vms now has unmet demand.
//  3. Pods: sort (3 cpu) and the gang ingest (2 × 2 cpu) land inside
//     batch's grants; the gang train (4 × 2 cpu, 4Gi; 8 cpu in all) does
//     not fit in what is left of them (at most 2 tasks) and waits. Its
//     demand shows on the scheduler's /demand. Both frameworks wait, so
//     nothing moves: the allocator never takes capacity from a framework
//     with unmet demand.
//  4. vm-big is deleted: vms no longer waits, and its grants on node-2 and
//     node-3 have been unused longer than --idle-timeout. The allocator
//     moves them to batch (4 units of 2 cpu, 4Gi), and the gang lands.
//  5. batch's grant on the node where most of its pods run is revoked:
//     the pods stay (evictOnRevoke is off) but the node is over batch's
//     cap. New pods land elsewhere; a pod pinned to that node waits with
//     "No grant on node".

const (
	frameworkBatch = "batch"
	frameworkVMs   = "vms"
)

var twoLevelNodes = []string{"node-1", "node-2", "node-3"}

// twoLevelNode is one of the story's nodes.
func twoLevelNode(name string) *v1.Node {
	return st.MakeNode().Name(name).Label(v1.LabelHostname, name).
		Capacity(res{"cpu": "8", "memory": "16Gi", "pods": "20"}).Obj()
}

var (
	vmA   = vmSpec{name: "vm-a", cpu: "2", memory: "4Gi"}
	vmB   = vmSpec{name: "vm-b", cpu: "2", memory: "4Gi"}
	vmBig = vmSpec{name: "vm-big", cpu: "6", memory: "8Gi"}
)

// twoLevelPods arrive in step 3.
func twoLevelPods() []*v1.Pod {
	pods := []*v1.Pod{
		st.MakePod().Namespace("etl").Name("sort").Req(res{"cpu": "3", "memory": "2Gi"}).Obj(),
	}
	for i := range 2 {
		pods = append(pods, st.MakePod().Namespace("etl").Name(fmt.Sprintf("ingest-%d", i)).
			Group("ingest").MinAvailable("2").Req(res{"cpu": "2", "memory": "2Gi"}).Obj())
	}
	for i := range 4 {
		pods = append(pods, st.MakePod().Namespace("ml").Name(fmt.Sprintf("train-%d", i)).
			Group("train").MinAvailable("4").Req(res{"cpu": "2", "memory": "4Gi"}).Obj())
	}
	return pods
}

// latePods arrive after the revocation; pinned selects the revoked node.
func latePods(revoked string) []*v1.Pod {
	return []*v1.Pod{
		st.MakePod().Namespace("etl").Name("late-0").Req(res{"cpu": "500m", "memory": "512Mi"}).Obj(),
		st.MakePod().Namespace("etl").Name("late-1").Req(res{"cpu": "500m", "memory": "512Mi"}).Obj(),
		st.MakePod().Namespace("etl").Name("pinned").Req(res{"cpu": "500m", "memory": "512Mi"}).
			NodeSelector(map[string]string{v1.LabelHostname: revoked}).Obj(),
	}
}

// tlStep is a step of the two-level story: a change, what it should lead
// to (pods, and check for the rest), and a description of both.
type tlStep struct {
	title   string
	apply   func(context.Context, *env) error
	creates []*v1.Pod
	expect  []outcome
	// shown names the outcomes of expect printed before the change (all
	// when nil).
	shown []string
	// check returns what is not yet as expected (nil when all is).
	check func(*snapshot) error
}

// runTwoLevel is the two-level story; it returns the number of steps.
func runTwoLevel(ctx context.Context, cp *controlplane.ControlPlane, logFile io.Writer, bins string) (n int, err error) {
	fmt.Println("    the cluster has no nodes yet: the programs start first, the nodes join in step 1")
	var alloc *allocator
	if err := progress(fmt.Sprintf("starting examples/allocator as a process (--interval %s --idle-timeout %s, no frameworks yet)", allocatorInterval, idleTimeout), func() (err error) {
		alloc, err = startAllocator(ctx, filepath.Join(bins, "allocator"), cp.KubeconfigPath)
		return err
	}); err != nil {
		return 0, err
	}
	// Stopped last: the others' watches of the grants end first.
	defer func() { err = errors.Join(err, progress("stopping the allocator", alloc.stop)) }()
	fmt.Printf("    allocator: %s (grants, admin API /frameworks /allocation /grants/{name}/revoke, log %s)\n", alloc.url(), alloc.logPath)

	var vms *vmManager
	if err := progress(fmt.Sprintf("starting examples/vm-manager as a process (two-level mode: --framework %s --grants-url %s)", frameworkVMs, alloc.url()), func() (err error) {
		vms, err = startVMManager(ctx, filepath.Join(bins, "vm-manager"), cp.KubeconfigPath, frameworkVMs, alloc.url())
		return err
	}); err != nil {
		return 0, err
	}
	defer func() { err = errors.Join(err, progress("stopping the VM manager", vms.stop)) }()
	fmt.Printf("    VM manager: %s (admin API /vms, ExternalWorkloads, /demand, log %s)\n", vms.url(), vms.logPath)

	handler := []string{
		"- name: two-level",
		"  args: {framework: " + frameworkBatch + ", evictOnRevoke: false}",
	}
	if err := progress(fmt.Sprintf("writing %s (event handler two-level, framework %s; custom informers %s: Grant, %s: ExternalWorkload)", configPath, frameworkBatch, grantInformer, vmInformer), func() error {
		return writeConfig(configPath, []informer{
			{name: grantInformer, resource: "Grant", url: alloc.url()},
			{name: vmInformer, resource: "ExternalWorkload", url: vms.url()},
		}, handler...)
	}); err != nil {
		return 0, err
	}
	insecure, err := freeLoopbackAddress()
	if err != nil {
		return 0, err
	}
	_, insecurePort, err := net.SplitHostPort(insecure)
	if err != nil {
		return 0, fmt.Errorf("splitting %s: %w", insecure, err)
	}
	s, stopScheduler, err := launchScheduler(ctx, cp, logFile, "--event-handler=two-level", "--insecure-port", insecurePort)
	defer func() { err = errors.Join(err, stopScheduler()) }()
	if err != nil {
		return 0, err
	}
	e := &env{client: cp.Client, sched: s, vms: vms, alloc: alloc, demandURL: "http://" + insecure + demand.Path}
	if err := progress("creating the namespaces etl and ml", func() error {
		for _, ns := range namespacesOf(append(twoLevelPods(), latePods("")...)) {
			obj := &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}
			if _, err := cp.Client.CoreV1().Namespaces().Create(ctx, obj, metav1.CreateOptions{}); err != nil {
				return fmt.Errorf("creating namespace %s: %w", ns, err)
			}
		}
		return nil
	}); err != nil {
		return 0, err
	}

	if err := progress(fmt.Sprintf("registering the frameworks with the allocator: PUT /frameworks/%s (weight 1, demandURL %s), PUT /frameworks/%s (weight 1, demandURL %s)",
		frameworkBatch, e.demandURL, frameworkVMs, vms.url()+demand.Path), func() error {
		if err := alloc.register(ctx, frameworkBatch, 1, e.demandURL); err != nil {
			return err
		}
		if err := alloc.register(ctx, frameworkVMs, 1, vms.url()+demand.Path); err != nil {
			return err
		}
		// Both reports read in one round: from then on, a new node is
		// split between both at once.
		return s.poll(ctx, "the allocator to read both demand reports", func() (bool, error) {
			a, err := alloc.allocation(ctx)
			if err != nil {
				return false, err
			}
			for _, f := range []string{frameworkBatch, frameworkVMs} {
				st, ok := a.Frameworks[f]
				if !ok || st.LastReport == nil || st.LastError != "" {
					return false, fmt.Errorf("framework %s: registered %t, last error %q", f, ok, st.LastError)
				}
			}
			return true, nil
		})
	}); err != nil {
		return 0, err
	}

	script := twoLevelSteps()
	for i, st := range script {
		if err := runTLStep(ctx, e, i+1, st); err != nil {
			return 0, err
		}
	}
	return len(script), nil
}

// runTLStep applies st, waits until the pods and st.check show the
// expected outcome and the invariants of two-level scheduling hold, and
// prints the tables. If the outcome differs, it prints what it saw and
// fails.
func runTLStep(ctx context.Context, e *env, n int, st tlStep) error {
	fmt.Printf("\n== %d. %s\n", n, st.title)
	shown := st.shown
	if shown == nil {
		shown = names(st.expect)
	}
	if len(shown) > 0 {
		fmt.Println()
		printExpected(st.expect, shown)
	}
	start := time.Now()
	if st.apply != nil {
		if err := st.apply(ctx, e); err != nil {
			return fmt.Errorf("step %d: %w", n, err)
		}
	}
	for _, p := range st.creates {
		if _, err := controlplane.CreatePod(ctx, e.client, p); err != nil {
			return fmt.Errorf("step %d: %w", n, err)
		}
	}
	var snap *snapshot
	err := e.sched.poll(ctx, "the expected outcome", func() (bool, error) {
		var err error
		if snap, err = observeAll(ctx, e); err != nil {
			return false, err
		}
		pending, final := compare(st.expect, snap.pods)
		switch {
		case len(final) > 0:
			return false, finalError{errors.New(strings.Join(final, "; "))}
		case len(pending) > 0:
			return false, errors.New(strings.Join(pending, "; "))
		}
		if !cacheAgrees(snap.dump, snap.pods) {
			return false, errors.New("/debug/cache does not hold every bound pod on its node yet")
		}
		if err := invariants(snap); err != nil {
			return false, err
		}
		if st.check != nil {
			if err := st.check(snap); err != nil {
				return false, err
			}
		}
		return true, nil
	})
	took := time.Since(start)
	if snap != nil && ctx.Err() == nil {
		fmt.Println()
		if err != nil {
			fmt.Println("actual:")
		}
		printTwoLevel(snap)
	}
	if err != nil {
		return fmt.Errorf("step %d: the outcome differs from the expected one: %w", n, err)
	}
	fmt.Printf("\n-> as expected, %.1fs after the change\n", took.Seconds())
	return nil
}

// twoLevelSteps is the two-level story.
func twoLevelSteps() []tlStep {
	var revoked string // chosen in step 5
	gangWaits := outcome{name: "ml/train-0..3", pods: keys("ml", "train-0", "train-1", "train-2", "train-3"),
		why:     []string{"gang ml/train", "min-available 4"},
		because: "8 cpu in all: batch's grants have at most 2 × 2 cpu left"}
	placed := []outcome{
		{name: "etl/sort", pods: keys("etl", "sort"), anywhere: true, because: "3 cpu: inside batch's 4 cpu grant on a node"},
		{name: "etl/ingest-0,1", pods: keys("etl", "ingest-0", "ingest-1"), anywhere: true, because: "gang of 2 × 2 cpu: fits inside batch's grants"},
	}
	gangLands := outcome{name: "ml/train-0..3", pods: gangWaits.pods, anywhere: true,
		because: "batch's grants grew by vms's idle capacity"}
	return []tlStep{
		{
			title: "Three nodes join (8 cpu, 16Gi each). The allocator divides each between batch and vms\n" +
				"   (weights 1:1, weighted DRF): 4 cpu and 8Gi each. batch-scheduler's two-level handler\n" +
				"   turns batch's grants into caps on the nodes.",
			apply: func(ctx context.Context, e *env) error {
				for _, name := range twoLevelNodes {
					if _, err := controlplane.CreateKwokNode(ctx, e.client, twoLevelNode(name)); err != nil {
						return err
					}
				}
				return nil
			},
			check: func(s *snapshot) error {
				half := resources.FromList(v1.ResourceList{v1.ResourceCPU: resource.MustParse("4"), v1.ResourceMemory: resource.MustParse("8Gi")})
				for _, node := range twoLevelNodes {
					for _, f := range []string{frameworkBatch, frameworkVMs} {
						g := resources.FromList(s.alloc.Frameworks[f].Grants[node])
						if g.MilliCPU != half.MilliCPU || g.Memory != half.Memory {
							return fmt.Errorf("%s's grant on %s is %s; expected 4 cpu, 8Gi", f, node, short(g))
						}
					}
				}
				return nil
			},
		},
		{
			title: fmt.Sprintf("The VM manager is asked (POST /vms) for %s, %s\n", vmA, vmB) +
				fmt.Sprintf("   and %s. It places VMs only inside vms's grants, first fit by host name:\n", vmBig) +
				"   vm-a and vm-b fill node-1's. vm-big fits in no grant of vms (4 cpu per node) and waits:\n" +
				"   vms now has unmet demand.",
			apply: applyAll(createVM(vmA, http.StatusCreated), createVM(vmB, http.StatusCreated), createVM(vmBig, http.StatusAccepted)),
			check: func(s *snapshot) error {
				if err := vmsAre(s, map[string]string{"vm-a": "node-1", "vm-b": "node-1", "vm-big": ""}); err != nil {
					return err
				}
				if !s.alloc.Frameworks[frameworkVMs].Hungry {
					return errors.New("the allocator does not see vms's unmet demand yet")
				}
				return nil
			},
		},
		{
			title: "Pods arrive: etl/sort (3 cpu), the gang etl/ingest (2 × 2 cpu) and the gang ml/train\n" +
				"   (4 × 2 cpu, 4Gi, min-available 4). Both frameworks now wait for capacity, so nothing\n" +
				"   moves: the allocator never takes capacity from a framework with unmet demand.",
			creates: twoLevelPods(),
			expect:  append(slices.Clone(placed), gangWaits),
			check: func(s *snapshot) error {
				g := s.demand.LargestGang
				if g == nil || g.Name != "ml/train" || s.demand.Waiting < 4 {
					return fmt.Errorf("the scheduler's /demand does not show the gang ml/train waiting yet (waiting %d, largest gang %+v)", s.demand.Waiting, g)
				}
				if !s.alloc.Frameworks[frameworkBatch].Hungry {
					return errors.New("the allocator does not see batch's unmet demand yet")
				}
				return grantsUnchanged(s)
			},
		},
		{
			title: fmt.Sprintf("vm-big is deleted (DELETE /vms/vm-big): vms no longer waits, and its grants on node-2\n"+
				"   and node-3 have been unused for longer than --idle-timeout (%s). The allocator moves them to\n"+
				"   batch, preferring a node where the whole gang fits, and ml/train lands at once.", idleTimeout),
			apply:  applyAll(deleteVMOnly(vmBig)),
			expect: append(slices.Clone(placed), gangLands),
			check: func(s *snapshot) error {
				if err := vmsAre(s, map[string]string{"vm-a": "node-1", "vm-b": "node-1"}); err != nil {
					return err
				}
				if s.demand.Waiting != 0 {
					return fmt.Errorf("the scheduler's /demand still shows %d pods waiting", s.demand.Waiting)
				}
				if s.alloc.Frameworks[frameworkBatch].Hungry {
					return errors.New("the allocator has not read batch's demand report since the gang landed")
				}
				return nil
			},
		},
		{
			title: "batch's grant on the node where most of its pods run is revoked (POST\n" +
				"   /grants/batch.<node>/revoke). Its pods stay (evictOnRevoke: false), but the node is over\n" +
				"   batch's cap and nothing new of batch goes there; the allocator gives its share to vms.\n" +
				"   Then etl/late-0,1 arrive, and etl/pinned, which selects that node.",
			apply: func(ctx context.Context, e *env) error {
				s, err := observeAll(ctx, e)
				if err != nil {
					return err
				}
				revoked = busiestNode(s)
				fmt.Println()
				printExpected(revokedOutcome(revoked), names(revokedOutcome(revoked)))
				fmt.Println()
				if err := progress(fmt.Sprintf("POST /grants/%s.%s/revoke", frameworkBatch, revoked), func() error {
					if err := e.alloc.revoke(ctx, frameworkBatch, revoked, "maintenance (demo)"); err != nil {
						return err
					}
					_, err := e.sched.waitForDump(ctx, "no grant for batch on "+revoked, func(d *cache.Dump) bool {
						for _, n := range d.Nodes {
							if n.Name == revoked {
								return n.Cap != nil && n.Cap.IsZero()
							}
						}
						return false
					})
					return err
				}); err != nil {
					return err
				}
				for _, p := range latePods(revoked) {
					if _, err := controlplane.CreatePod(ctx, e.client, p); err != nil {
						return err
					}
				}
				return nil
			},
			// The pods of step 4 stay where they are; the late pods'
			// outcome depends on the node chosen, so check compares it.
			expect: append(slices.Clone(placed), gangLands),
			shown:  []string{},
			check: func(s *snapshot) error {
				pending, final := compare(revokedOutcome(revoked), s.pods)
				if len(final) > 0 {
					return finalError{errors.New(strings.Join(final, "; "))}
				}
				if len(pending) > 0 {
					return errors.New(strings.Join(pending, "; "))
				}
				batch := s.alloc.Frameworks[frameworkBatch]
				if _, ok := batch.Revoked[revoked]; !ok {
					return fmt.Errorf("/allocation does not list batch's grant on %s as revoked", revoked)
				}
				// The pinned pod's demand reaches the allocator, which
				// cannot meet it: batch may get nothing on that node.
				if !batch.Hungry {
					return errors.New("the allocator has not read etl/pinned's demand yet")
				}
				for _, n := range s.dump.Nodes {
					if n.Name == revoked && !n.CapExceeded {
						return fmt.Errorf("/debug/cache does not show %s over batch's cap", revoked)
					}
				}
				return nil
			},
		},
	}
}

// revokedOutcome is step 5's expected outcome of the late pods.
func revokedOutcome(revoked string) []outcome {
	return []outcome{
		{name: "etl/late-0,1", pods: keys("etl", "late-0", "late-1"), anywhere: true, avoid: revoked,
			because: "bound inside batch's grants, not on " + revoked},
		{name: "etl/pinned", pods: keys("etl", "pinned"), why: []string{"1 No grant on node"},
			because: "selects " + revoked + ", where batch has no grant now"},
	}
}

// busiestNode is the node where most of batch's pods run (the first by
// name among equals).
func busiestNode(s *snapshot) string {
	count := map[string]int{}
	for _, p := range s.pods {
		if p.node != "" {
			count[p.node]++
		}
	}
	best := twoLevelNodes[0]
	for _, n := range twoLevelNodes {
		if count[n] > count[best] {
			best = n
		}
	}
	return best
}

// createVM asks the VM manager for v and expects status (201 placed, 202
// pending); it prints where the VM went or why it waits.
func createVM(v vmSpec, status int) func(context.Context, *env) error {
	return func(ctx context.Context, e *env) error {
		var got *vm
		err := progress("POST /vms "+v.String(), func() error {
			var code int
			var err error
			got, code, err = e.vms.create(ctx, v)
			if err != nil {
				return err
			}
			if code != status {
				return fmt.Errorf("VM %s: answer %d (phase %s, host %q, %s); expected %d", v.name, code, got.Phase, got.Host, got.Message, status)
			}
			return nil
		})
		if err != nil {
			return err
		}
		if got.Host != "" {
			fmt.Printf("    %s: %s on %s\n", got.Name, got.Phase, got.Host)
		} else {
			fmt.Printf("    %s: %s: %s\n", got.Name, got.Phase, got.Message)
		}
		return nil
	}
}

// deleteVMOnly deletes v through the admin API.
func deleteVMOnly(v vmSpec) func(context.Context, *env) error {
	return func(ctx context.Context, e *env) error {
		return progress("DELETE /vms/"+v.name, func() error { return e.vms.remove(ctx, v.name) })
	}
}
