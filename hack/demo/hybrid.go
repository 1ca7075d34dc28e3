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

// The hybrid story, the default: pods and a VM manager (hybrid mode)
// share nodes that KWOK's simulated kubelets run, and batch/v1 Jobs come
// and go. The cluster and its numbers are in cluster.go, the Jobs in
// jobs.go.

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	v1 "k8s.io/api/core/v1"

	"github.com/batch-scheduler/batch-scheduler/pkg/cache"
	"github.com/batch-scheduler/batch-scheduler/test/controlplane"
	"github.com/batch-scheduler/batch-scheduler/test/harness"
)

// runHybrid runs the hybrid story and returns the number of steps run.
func runHybrid(ctx context.Context, e *env) (int, error) {
	classes, nodes, pods := priorityClasses(), seedNodes(), seedPods()
	script := steps()
	if err := checkScript(script, ourPods(pods)); err != nil {
		return 0, err
	}
	if err := progress(fmt.Sprintf("seeding %d priority classes, %d nodes (simulated kubelets) and %d pods through the API", len(classes), len(nodes), len(pods)), func() error {
		return seed(ctx, e.cp.Client, classes, nodes, pods)
	}); err != nil {
		return 0, err
	}
	for _, n := range nodes {
		fmt.Println("    node", describeNode(n))
	}
	for _, pc := range classes {
		fmt.Printf("    priority class %s: %d\n", pc.Name, pc.Value)
	}
	// The VM manager is stopped after the scheduler, so that the
	// scheduler's watch ends first.
	var err error
	e.vms, err = startProgram(e, "examples/vm-manager (hybrid mode: first fit on the hosts' free room)", "VM manager", func() (*harness.VMManager, error) {
		return harness.StartVMManager(ctx, harness.VMManagerOptions{Bin: filepath.Join(binDir, "vm-manager"), Dir: outDir, Kubeconfig: e.cp.KubeconfigPath, RetryInterval: "1s"})
	})
	if err != nil {
		return 0, err
	}
	fmt.Printf("    VM manager: %s (admin API /vms, ExternalWorkloads, log %s), no VMs yet\n", e.vms.URL(), e.vms.LogPath)
	if err := progress(fmt.Sprintf("writing %s (custom informer %s: resource ExternalWorkload, source http)", configPath, vmInformer), func() error {
		return writeConfig(configPath, []informer{{name: vmInformer, resource: "ExternalWorkload", url: e.vms.URL()}})
	}); err != nil {
		return 0, err
	}
	if err := startScheduler(ctx, e); err != nil {
		return 0, err
	}
	e.strict, e.print = true, printHybrid
	return runSteps(ctx, e, script)
}

// printHybrid prints every pod, the Jobs, and the nodes' idle room before
// and after the step.
func printHybrid(s, prev *snapshot) {
	harness.WritePods(os.Stdout, s.pods, s.dump, ourScheduler)
	if len(s.jobs) > 0 {
		fmt.Println()
		harness.WriteJobs(os.Stdout, s.jobs, s.pods)
	}
	fmt.Println()
	var before *cache.Dump
	if prev != nil {
		before = prev.dump
	}
	printNodes(before, s.dump, s.pods)
}

// analyticsVM starts on node edge in a live change and is deleted later.
var analyticsVM = harness.VMSpec{Name: "vm-analytics", Host: "edge", CPU: "3", Memory: "4Gi"}

// crowdedVM asks for node large, whose memory the pods use up: the VM
// manager refuses it.
var crowdedVM = harness.VMSpec{Name: "vm-crowded", Host: "large", CPU: "1", Memory: "1Gi"}

const (
	gangFourMsg = "gang ml/train: 3 of 4 tasks could be placed, min-available 4"
	evalInvalid = `gang ml/eval is not scheduled: annotation scheduling.k8s.io/min-available="three" must be an integer >= 1`
)

// steps is the hybrid story.
func steps() []step {
	first := []outcome{
		{Name: "etl/big-sort", Pods: keys("etl", "big-sort"), On: map[string]int{"large": 1},
			Because: "4 cpu: more than small has free; gpu and the jobs pool are tainted"},
		{Name: "etl/ingest-0,1", Pods: keys("etl", "ingest-0", "ingest-1"), On: map[string]int{"large": 2},
			Because: "gang of 2, min-available 2, 1500m cpu each: fits on large"},
		{Name: "etl/warehouse", Pods: keys("etl", "warehouse"),
			Why:     []string{"0/5 nodes are available: 3 Insufficient cpu, 3 Insufficient memory, 2 node(s) had untolerated taint(s)."},
			Because: "20 cpu, 80Gi: bigger than any node (it tolerates the GPU taint)"},
		{Name: "ml/retrain", Pods: keys("ml", "retrain"), On: map[string]int{"gpu": 1},
			Because: "priority 1000, selects pool=gpu, tolerates the taint: gets the last 2 free GPUs"},
		{Name: "ml/finetune", Pods: keys("ml", "finetune"), On: map[string]int{"gpu": 1},
			Because: "priority 100: loses the free GPUs to retrain, so it preempts ml/notebook (priority 0) and takes its GPUs"},
		{Name: "web/cache-1", Pods: keys("web", "cache-1"), Theirs: true, On: map[string]int{"edge": 1}, Phase: v1.PodPending,
			Because: "bound by default-scheduler to edge, which has not joined: nothing runs it, and the cache keeps a placeholder"},
		{Name: "ml/notebook", Pods: keys("ml", "notebook"), Gone: true,
			Because: "default-scheduler's pod, evicted for finetune: its simulated kubelet stops it, and it is removed"},
		{Name: "ml/inference", Pods: keys("ml", "inference"),
			Why:     []string{"0/5 nodes are available: 3 node(s) had untolerated taint(s), 2 node(s) didn't match Pod's node affinity/selector."},
			Because: "selects pool=gpu but does not tolerate its taint"},
		{Name: "ml/train-0..3", Pods: keys("ml", "train-0", "train-1", "train-2", "train-3"),
			Why:     []string{gangFourMsg},
			Because: "gang of 4, min-available 4, 16Gi each: large has room for 3, so none is bound"},
		{Name: "ml/eval-0,1", Pods: keys("ml", "eval-0", "eval-1"),
			Why:     []string{evalInvalid},
			Because: `min-available "three" is not a number: a gang without a usable quorum never starts, not even partly`},
	}
	second := replace(first,
		outcome{Name: "web/cache-1", Pods: keys("web", "cache-1"), Theirs: true, On: map[string]int{"edge": 1},
			Because: "edge's simulated kubelet runs it"},
		outcome{Name: "ml/train-0..3", Pods: keys("ml", "train-0", "train-1", "train-2", "train-3"), On: map[string]int{"large": 3, "edge": 1},
			Because: "edge has 22Gi free: room for the 4th task, so all 4 are bound at once"},
		// TaintToleration rejected inference on gpu and the jobs pool,
		// warehouse on the jobs pool, and edge has no taint: its hint says
		// this node may help, so both are retried (and NodeAffinity,
		// NodeResourcesFit reject edge). eval's plugin sees that edge
		// cannot help it.
		outcome{Name: "ml/inference", Pods: keys("ml", "inference"),
			Why:     []string{"0/6 nodes are available: 3 node(s) didn't match Pod's node affinity/selector, 3 node(s) had untolerated taint(s)."},
			Because: "retried: edge has no taint, but does not match pool=gpu either"},
		outcome{Name: "etl/warehouse", Pods: keys("etl", "warehouse"),
			Why:     []string{"0/6 nodes are available: 4 Insufficient cpu, 4 Insufficient memory, 2 node(s) had untolerated taint(s)."},
			Because: "retried: edge has no taint, but is too small"},
	)
	// A VM on edge takes the room that etl/report, created after it,
	// would have had there.
	vm := analyticsVM
	third := append(slices.Clone(second),
		outcome{Name: "etl/report", Pods: keys("etl", "report"),
			Why:     []string{"0/6 nodes are available: 3 Insufficient cpu, 3 node(s) had untolerated taint(s), 1 Insufficient memory."},
			Because: fmt.Sprintf("4 cpu, 2Gi: only edge had room (6 cpu idle), but %s leaves it 3", vm.Name)},
	)
	// Usage that shrinks may help any job waiting for room: those are
	// retried, and only report fits.
	fourth := replace(third,
		outcome{Name: "etl/report", Pods: keys("etl", "report"), On: map[string]int{"edge": 1},
			Because: fmt.Sprintf("%s's %s cpu are free again: edge has 6 cpu idle", vm.Name, vm.CPU)},
	)
	pool := fmt.Sprintf("%s and %s", jobsNodes[0], jobsNodes[1])
	fifth := append(slices.Clone(fourth),
		jobOutcome(nightly, map[string]int{jobsNodes[0]: 2, jobsNodes[1]: 2}, v1.PodRunning,
			"the Job's 4 pods are one gang: placed together once all exist, 2 per node (3 × 1500m is more than 4 cpu)"))
	sixth := append(slices.Clone(fifth),
		jobWaits(backfill, []string{"0/6 nodes are available: 3 node(s) didn't match Pod's node affinity/selector, 2 Insufficient cpu, 2 Insufficient memory, 1 node(s) had untolerated taint(s)."},
			"3500m cpu per pod, one per node: nightly leaves 1 cpu on each, so no pod fits and none is bound"))
	seventh := replace(sixth,
		jobOutcome(nightly, map[string]int{jobsNodes[0]: 2, jobsNodes[1]: 2}, v1.PodSucceeded,
			"its pods ran "+nightly.runFor.String()+" and succeeded: the Job is Complete, and they no longer count on their nodes"),
		jobOutcome(backfill, map[string]int{jobsNodes[0]: 1, jobsNodes[1]: 1}, v1.PodRunning,
			"a finished pod frees room like a deleted one: the waiting gang is retried (after what is left of its backoff) and placed whole, one pod per node"),
	)
	eighth := replace(seventh,
		jobOutcome(backfill, map[string]int{jobsNodes[0]: 1, jobsNodes[1]: 1}, v1.PodSucceeded,
			"its pods ran "+backfill.runFor.String()+" and succeeded: the Job is Complete, and "+pool+" are idle again"),
	)
	return []step{
		{
			title: "batch-scheduler schedules the seeded pods (leader election is off, so it starts at once).\n" +
				"   KWOK's simulated kubelets run every bound pod, and stop and remove a pod that is evicted.",
			expect: first,
			since:  "the scheduler was ready",
		},
		{
			title: "Node edge joins (8 cpu, 24Gi, pool=edge): web/cache-1, bound there by default-scheduler,\n" +
				"   leaves the placeholder and starts, and the waiting gang ml/train now fits. A job is retried only if a\n" +
				"   plugin that rejected it says edge may help: edge has no taint, which may help those a taint kept out.",
			apply:  addNode(edgeNode()),
			expect: second,
			shown:  []string{"web/cache-1", "ml/train-0..3", "ml/inference", "etl/warehouse", "ml/eval-0,1"},
		},
		{
			title: fmt.Sprintf("The VM manager (examples/vm-manager, hybrid mode) refuses %s: the pods\n", crowdedVM) +
				fmt.Sprintf("   fill that host. It starts %s next to the pods; the scheduler learns of it\n", vm) +
				"   through its custom informer. Once /debug/cache counts it, etl/report (4 cpu, 2Gi) is created:\n" +
				"   it would fit on edge alone, and the VM is in the way.",
			apply:   applyAll(refuseVM(crowdedVM, "does not fit"), startVM(vm)),
			creates: []*v1.Pod{reportPod()},
			expect:  third,
			shown:   []string{"etl/report"},
		},
		{
			title: fmt.Sprintf("%s is deleted (DELETE /vms/%s): its room on %s is free again.\n", vm.Name, vm.Name, vm.Host) +
				"   Usage that shrinks may help any job waiting for room, so those are retried.",
			apply:  applyAll(deleteVM(vm)),
			expect: fourth,
			shown:  []string{"etl/report"},
		},
		{
			title: fmt.Sprintf("Job %s is created: a batch/v1 Job whose pod template says batch-scheduler.io/job-gang: \"true\",\n", nightly.key()) +
				fmt.Sprintf("   parallelism = completions = %d. kube-controller-manager's Job controller creates its pods;\n", nightly.n) +
				fmt.Sprintf("   batch-scheduler places them whole on the jobs pool (%s: 4 cpu, 8Gi each, tainted).", pool),
			jobs:   []gangJob{nightly},
			expect: fifth,
			shown:  []string{"Job " + nightly.key()},
		},
		{
			title:  fmt.Sprintf("Job %s, one gang too, is created while nightly runs.", backfill),
			jobs:   []gangJob{backfill},
			expect: sixth,
			shown:  []string{"Job " + nightly.key(), "Job " + backfill.key()},
		},
		{
			title: fmt.Sprintf("Nothing is changed: nightly's pods finish %s after they started (annotation %s).\n", nightly.runFor, controlplane.RunForAnnotation) +
				"   Their room is free again, and backfill, which waited for it, gets it.",
			expect: seventh,
			shown:  []string{"Job " + nightly.key(), "Job " + backfill.key()},
			since:  "the step began",
		},
		{
			title:  fmt.Sprintf("Nothing is changed: backfill's pods finish %s after they started.", backfill.runFor),
			expect: eighth,
			shown:  []string{"Job " + backfill.key()},
			since:  "the step began",
		},
	}
}
