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

package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/batch-scheduler/batch-scheduler/pkg/cache"
	"github.com/batch-scheduler/batch-scheduler/pkg/demand"
	"github.com/batch-scheduler/batch-scheduler/pkg/resources"
	st "github.com/batch-scheduler/batch-scheduler/pkg/testing"
	"github.com/batch-scheduler/batch-scheduler/test/controlplane"
	"github.com/batch-scheduler/batch-scheduler/test/harness"
)

// The two-level story. Three equal nodes (8 cpu, 16Gi) are divided by the
// allocator between two frameworks of weight 1: batch (batch-scheduler,
// two-level handler) and vms (the VM manager in two-level mode). Each
// framework gets half of each node: 4 cpu, 8Gi. The step titles
// (twoLevelSteps) tell the rest: VMs fill vms's grant and one waits; pods
// land inside batch's grants and a gang waits, so nothing moves; the
// waiting VM is deleted and vms's idle grants move to batch, where the
// gang lands; batch's busiest grant is revoked, its pods stay, and a pod
// pinned to that node waits with "No grant on node".

const (
	frameworkBatch = "batch"
	frameworkVMs   = "vms"
	// allocatorInterval is the allocator's --interval: a round at least
	// this often. idleTimeout is its --idle-timeout: how long granted
	// capacity must stay unused before it can move to a framework whose
	// jobs wait.
	allocatorInterval = time.Second
	idleTimeout       = 5 * time.Second
)

var twoLevelNodes = []string{"node-1", "node-2", "node-3"}

// twoLevelNode is one of the story's nodes.
func twoLevelNode(name string) *v1.Node {
	return st.MakeNode().Name(name).Label(v1.LabelHostname, name).
		Capacity(res{"cpu": "8", "memory": "16Gi", "pods": "20"}).Obj()
}

var (
	vmA   = harness.VMSpec{Name: "vm-a", CPU: "2", Memory: "4Gi"}
	vmB   = harness.VMSpec{Name: "vm-b", CPU: "2", Memory: "4Gi"}
	vmBig = harness.VMSpec{Name: "vm-big", CPU: "6", Memory: "8Gi"}
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

// runTwoLevel is the two-level story; it returns the number of steps.
func runTwoLevel(ctx context.Context, e *env) (int, error) {
	fmt.Println("    the cluster has no nodes yet: the programs start first, the nodes join in step 1")
	var err error
	// Stopped last: the others' watches of the grants end first.
	e.alloc, err = startProgram(e, fmt.Sprintf("examples/allocator (--interval %s --idle-timeout %s, no frameworks yet)", allocatorInterval, idleTimeout), "allocator", func() (*harness.Allocator, error) {
		return harness.StartAllocator(ctx, harness.AllocatorOptions{Bin: filepath.Join(binDir, "allocator"), Dir: outDir, Kubeconfig: e.cp.KubeconfigPath,
			Interval: allocatorInterval, IdleTimeout: idleTimeout})
	})
	if err != nil {
		return 0, err
	}
	fmt.Printf("    allocator: %s (grants, admin API /frameworks /allocation /grants/{name}/revoke, log %s)\n", e.alloc.URL(), e.alloc.LogPath)
	e.vms, err = startProgram(e, fmt.Sprintf("examples/vm-manager (two-level mode: --framework %s --grants-url %s)", frameworkVMs, e.alloc.URL()), "VM manager", func() (*harness.VMManager, error) {
		return harness.StartVMManager(ctx, harness.VMManagerOptions{Bin: filepath.Join(binDir, "vm-manager"), Dir: outDir, Kubeconfig: e.cp.KubeconfigPath,
			Framework: frameworkVMs, GrantsURL: e.alloc.URL(), RetryInterval: "1s"})
	})
	if err != nil {
		return 0, err
	}
	fmt.Printf("    VM manager: %s (admin API /vms, ExternalWorkloads, /demand, log %s)\n", e.vms.URL(), e.vms.LogPath)
	handler := []string{
		"- name: two-level",
		"  args: {framework: " + frameworkBatch + ", evictOnRevoke: false}",
	}
	if err := progress(fmt.Sprintf("writing %s (event handler two-level, framework %s; custom informers %s: Grant, %s: ExternalWorkload)", configPath, frameworkBatch, grantInformer, vmInformer), func() error {
		return writeConfig(configPath, []informer{
			{name: grantInformer, resource: "Grant", url: e.alloc.URL()},
			{name: vmInformer, resource: "ExternalWorkload", url: e.vms.URL()},
		}, handler...)
	}); err != nil {
		return 0, err
	}
	insecure, err := harness.FreeAddress()
	if err != nil {
		return 0, err
	}
	_, insecurePort, _ := strings.Cut(insecure, ":")
	if err := startScheduler(ctx, e, "--event-handler=two-level", "--insecure-port", insecurePort); err != nil {
		return 0, err
	}
	demandURL := "http://" + insecure + demand.Path
	if err := progress("creating the namespaces etl and ml", func() error {
		return createNamespaces(ctx, e.cp.Client, append(twoLevelPods(), latePods("")...))
	}); err != nil {
		return 0, err
	}
	if err := progress(fmt.Sprintf("registering the frameworks with the allocator: PUT /frameworks/%s (weight 1, demandURL %s), PUT /frameworks/%s (weight 1, demandURL %s)",
		frameworkBatch, demandURL, frameworkVMs, e.vms.URL()+demand.Path), func() error {
		if err := e.alloc.Register(ctx, harness.Framework{Name: frameworkBatch, Weight: 1, DemandURL: demandURL}); err != nil {
			return err
		}
		if err := e.alloc.Register(ctx, harness.Framework{Name: frameworkVMs, Weight: 1, DemandURL: e.vms.URL() + demand.Path}); err != nil {
			return err
		}
		// Both reports read in one round: from then on, a new node is
		// split between both at once.
		return harness.Poll(ctx, waitTimeout, "the allocator to read both demand reports", e.sched.Alive, func() (bool, error) {
			a, err := e.alloc.Allocation(ctx)
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
	e.print = func(s, _ *snapshot) { printTwoLevel(s) }
	script := twoLevelSteps()
	for i := range script {
		check := script[i].check
		script[i].check = func(s *snapshot) error {
			if err := invariants(s); err != nil || check == nil {
				return err
			}
			return check(s)
		}
	}
	return runSteps(ctx, e, script)
}

// twoLevelSteps is the two-level story.
func twoLevelSteps() []step {
	var revoked string // chosen in step 5
	gangWaits := outcome{Name: "ml/train-0..3", Pods: keys("ml", "train-0", "train-1", "train-2", "train-3"),
		Why:     []string{"gang ml/train", "min-available 4"},
		Because: "8 cpu in all: batch's grants have at most 2 × 2 cpu left"}
	placed := []outcome{
		{Name: "etl/sort", Pods: keys("etl", "sort"), Anywhere: true, Because: "3 cpu: inside batch's 4 cpu grant on a node"},
		{Name: "etl/ingest-0,1", Pods: keys("etl", "ingest-0", "ingest-1"), Anywhere: true, Because: "gang of 2 × 2 cpu: fits inside batch's grants"},
	}
	gangLands := outcome{Name: "ml/train-0..3", Pods: gangWaits.Pods, Anywhere: true,
		Because: "batch's grants grew by vms's idle capacity"}
	return []step{
		{
			title: "Three nodes join (8 cpu, 16Gi each). The allocator divides each between batch and vms\n" +
				"   (weights 1:1, weighted DRF): 4 cpu and 8Gi each. batch-scheduler's two-level handler\n" +
				"   turns batch's grants into caps on the nodes.",
			apply: func(ctx context.Context, e *env) error {
				for _, name := range twoLevelNodes {
					if _, err := controlplane.CreateKwokNode(ctx, e.cp.Client, twoLevelNode(name)); err != nil {
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
							return fmt.Errorf("%s's grant on %s is %s; expected 4 cpu, 8Gi", f, node, harness.Short(g))
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
			apply:  applyAll(deleteVM(vmBig)),
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
				s, err := observe(ctx, e)
				if err != nil {
					return err
				}
				revoked = busiestNode(s)
				fmt.Println()
				printExpected(revokedOutcome(revoked))
				fmt.Println()
				if err := progress(fmt.Sprintf("POST /grants/%s.%s/revoke", frameworkBatch, revoked), func() error {
					if err := e.alloc.Revoke(ctx, frameworkBatch, revoked, "maintenance (demo)"); err != nil {
						return err
					}
					return harness.Poll(ctx, waitTimeout, "/debug/cache to show no grant for batch on "+revoked, e.sched.Alive, func() (bool, error) {
						d, err := e.sched.Dump(ctx)
						if err != nil {
							return false, err
						}
						i := slices.IndexFunc(d.Nodes, func(n cache.NodeDump) bool { return n.Name == revoked })
						return i >= 0 && d.Nodes[i].Cap != nil && d.Nodes[i].Cap.IsZero(), nil
					})
				}); err != nil {
					return err
				}
				for _, p := range latePods(revoked) {
					if _, err := createPod(ctx, e, p); err != nil {
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
				c := s.check()
				if c.Outcomes(revokedOutcome(revoked)); c.Err() != nil {
					return c.Err()
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
		{Name: "etl/late-0,1", Pods: keys("etl", "late-0", "late-1"), Anywhere: true, Avoid: revoked,
			Because: "bound inside batch's grants, not on " + revoked},
		{Name: "etl/pinned", Pods: keys("etl", "pinned"), Why: []string{"1 No grant on node"},
			Because: "selects " + revoked + ", where batch has no grant now"},
	}
}

// busiestNode is the node where most of batch's pods run (the first by
// name among equals).
func busiestNode(s *snapshot) string {
	count := map[string]int{}
	for _, p := range s.pods {
		if p.Node != "" {
			count[p.Node]++
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
func createVM(v harness.VMSpec, status int) func(context.Context, *env) error {
	return func(ctx context.Context, e *env) error {
		var got *harness.VM
		err := progress("POST /vms "+v.String(), func() error {
			var code int
			var err error
			if got, code, err = e.vms.Create(ctx, v); err != nil {
				return err
			}
			if code != status {
				return fmt.Errorf("VM %s: answer %d (phase %s, host %q, %s); expected %d", v.Name, code, got.Phase, got.Host, got.Message, status)
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
