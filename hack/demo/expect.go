package main

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/batch-scheduler/batch-scheduler/pkg/cache"
)

// outcome is what a group of our pods should show after a step.
type outcome struct {
	// name shows the group, e.g. "ml/train-0..3".
	name string
	// pods are the group's "namespace/name" keys.
	pods []string
	// on maps each node to how many of the pods are bound there; nil means
	// that none is bound.
	on map[string]int
	// anywhere: every pod is bound, on any node but avoid (when set).
	anywhere bool
	avoid    string
	// why are substrings of every pod's PodScheduled=False/Unschedulable
	// message, when none is bound.
	why []string
	// because explains the outcome to the reader.
	because string
}

// expectation renders where the group should be, e.g. "large" or
// "large ×3, edge ×1" or "not bound".
func (o outcome) expectation() string {
	if o.anywhere && o.avoid != "" {
		return "bound, not on " + o.avoid
	}
	if o.anywhere {
		return "bound"
	}
	if o.on == nil {
		return "not bound"
	}
	var parts []string
	for _, n := range slices.Sorted(maps.Keys(o.on)) {
		if len(o.pods) == 1 || len(o.on) == 1 {
			parts = append(parts, n)
		} else {
			parts = append(parts, fmt.Sprintf("%d on %s", o.on[n], n))
		}
	}
	return strings.Join(parts, ", ")
}

// step is one stage of the demo: a change to the cluster (none for the
// first) and the outcome it should lead to.
type step struct {
	title string
	// apply makes the change, if any; then the pods of creates are
	// created.
	apply   func(context.Context, *env) error
	creates []*v1.Pod
	// expect is the whole expected outcome after the step; shown names
	// the groups whose outcome the step changes (all of them for the
	// first), which are printed before waiting.
	expect []outcome
	shown  []string
}

func keys(ns string, names ...string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = ns + "/" + n
	}
	return out
}

// analyticsVM starts on node edge in a live change and is deleted later.
var analyticsVM = vmSpec{name: "vm-analytics", node: "edge", cpu: "3", memory: "4Gi"}

// crowdedVM asks for node large, whose memory the pods use up: the VM
// manager refuses it.
var crowdedVM = vmSpec{name: "vm-crowded", node: "large", cpu: "1", memory: "1Gi"}

const (
	gangFourMsg = "gang ml/train: 3 of 4 tasks could be placed, min-available 4"
	evalInvalid = `gang ml/eval is not scheduled: annotation scheduling.k8s.io/min-available="three" must be an integer >= 1`
)

// steps is the demo's script.
func steps() []step {
	first := []outcome{
		{name: "etl/big-sort", pods: keys("etl", "big-sort"), on: map[string]int{"large": 1},
			because: "4 cpu: more than small has free; gpu's taint is not tolerated"},
		{name: "etl/ingest-0,1", pods: keys("etl", "ingest-0", "ingest-1"), on: map[string]int{"large": 2},
			because: "gang of 2, min-available 2, 1500m cpu each: fits on large"},
		{name: "etl/warehouse", pods: keys("etl", "warehouse"),
			why:     []string{"0/3 nodes are available: 3 Insufficient cpu, 3 Insufficient memory."},
			because: "20 cpu, 80Gi: bigger than any node (it tolerates the GPU taint)"},
		{name: "ml/retrain", pods: keys("ml", "retrain"), on: map[string]int{"gpu": 1},
			because: "priority 1000, selects pool=gpu, tolerates the taint: gets the last 2 free GPUs"},
		{name: "ml/finetune", pods: keys("ml", "finetune"),
			why:     []string{"0/3 nodes are available: 2 node(s) didn't match Pod's node affinity/selector, 1 Insufficient nvidia.com/gpu."},
			because: "priority 100: created before retrain, wants the same GPUs, loses them to it"},
		{name: "ml/inference", pods: keys("ml", "inference"),
			why:     []string{"0/3 nodes are available: 2 node(s) didn't match Pod's node affinity/selector, 1 node(s) had untolerated taint(s)."},
			because: "selects pool=gpu but does not tolerate its taint"},
		{name: "ml/train-0..3", pods: keys("ml", "train-0", "train-1", "train-2", "train-3"),
			why:     []string{gangFourMsg},
			because: "gang of 4, min-available 4, 16Gi each: large has room for 3, so none is bound"},
		{name: "ml/eval-0,1", pods: keys("ml", "eval-0", "eval-1"),
			why:     []string{evalInvalid},
			because: `min-available "three" is not a number: a gang without a usable quorum never starts, not even partly`},
	}
	second := replace(first,
		outcome{name: "ml/train-0..3", pods: keys("ml", "train-0", "train-1", "train-2", "train-3"), on: map[string]int{"large": 3, "edge": 1},
			because: "edge has 22Gi free: room for the 4th task, so all 4 are bound at once"},
		// TaintToleration rejected inference on gpu, and edge has no
		// taint: its hint says this node may help, so inference is
		// retried (and NodeAffinity rejects edge). The other waiting jobs'
		// plugins see that edge cannot help them.
		outcome{name: "ml/inference", pods: keys("ml", "inference"),
			why:     []string{"0/4 nodes are available: 3 node(s) didn't match Pod's node affinity/selector, 1 node(s) had untolerated taint(s)."},
			because: "retried: edge has no taint, but does not match pool=gpu either"},
	)
	// A deleted pod may free room for anyone: every waiting job is retried,
	// and the messages now count 4 nodes.
	third := replace(second,
		outcome{name: "ml/finetune", pods: keys("ml", "finetune"), on: map[string]int{"gpu": 1},
			because: "ml/notebook's 2 GPUs are free: the waiting low-priority pod takes them"},
		outcome{name: "etl/warehouse", pods: keys("etl", "warehouse"),
			why:     []string{"0/4 nodes are available: 4 Insufficient cpu, 4 Insufficient memory."},
			because: "retried, still too big for every node"},
		outcome{name: "ml/inference", pods: keys("ml", "inference"),
			why:     []string{"0/4 nodes are available: 3 node(s) didn't match Pod's node affinity/selector, 1 node(s) had untolerated taint(s)."},
			because: "retried: GPUs are free, but the taint is still not tolerated"},
	)
	// A VM on edge takes the room that etl/report, created after it,
	// would have had there.
	vm := analyticsVM
	fourth := append(slices.Clone(third),
		outcome{name: "etl/report", pods: keys("etl", "report"),
			why:     []string{"0/4 nodes are available: 3 Insufficient cpu, 1 Insufficient memory, 1 node(s) had untolerated taint(s)."},
			because: fmt.Sprintf("4 cpu, 2Gi: only edge had room (6 cpu idle), but %s leaves it 3", vm.name)},
	)
	// Usage that shrinks may help any job waiting for room: those are
	// retried, and only report fits.
	fifth := replace(fourth,
		outcome{name: "etl/report", pods: keys("etl", "report"), on: map[string]int{"edge": 1},
			because: fmt.Sprintf("%s's %s cpu are free again: edge has 6 cpu idle", vm.name, vm.cpu)},
	)
	return []step{
		{
			title:  "batch-scheduler schedules the seeded pods (leader election is off, so it starts at once)",
			expect: first,
			shown:  names(first),
		},
		{
			title: "Node edge joins (8 cpu, 24Gi, pool=edge): web/cache-1, bound there by default-scheduler,\n" +
				"   leaves the placeholder, and the waiting gang ml/train now fits. A job is retried only if a\n" +
				"   plugin that rejected it says edge may help; the others' messages still count 3 nodes.",
			apply:  addNode(edgeNode()),
			expect: second,
			shown:  []string{"ml/train-0..3", "ml/inference", "ml/eval-0,1"},
		},
		{
			title: "ml/notebook (2 GPUs, bound to gpu by default-scheduler) is deleted: its room is free.\n" +
				"   A deleted pod may help any waiting job, so all of them are retried.",
			apply:  deletePod("ml", "notebook"),
			expect: third,
			shown:  []string{"ml/finetune", "etl/warehouse", "ml/inference", "ml/eval-0,1"},
		},
		{
			title: fmt.Sprintf("The VM manager (examples/vm-manager, hybrid mode) refuses %s: the pods\n", crowdedVM) +
				fmt.Sprintf("   fill that host. It starts %s next to the pods; the scheduler learns of it\n", vm) +
				"   through its custom informer. Once /debug/cache counts it, etl/report (4 cpu, 2Gi) is created:\n" +
				"   it would fit on edge alone, and the VM is in the way.",
			apply:   applyAll(refuseVM(crowdedVM, "does not fit"), startVM(vm)),
			creates: []*v1.Pod{reportPod()},
			expect:  fourth,
			shown:   []string{"etl/report"},
		},
		{
			title: fmt.Sprintf("%s is deleted (DELETE /vms/%s): its room on %s is free again.\n", vm.name, vm.name, vm.node) +
				"   Usage that shrinks may help any job waiting for room, so those are retried.",
			apply:  applyAll(deleteVM(vm)),
			expect: fifth,
			shown:  []string{"etl/report"},
		},
	}
}

// replace returns base with the outcomes of the same names replaced.
func replace(base []outcome, with ...outcome) []outcome {
	out := slices.Clone(base)
	for _, w := range with {
		i := slices.IndexFunc(out, func(o outcome) bool { return o.name == w.name })
		if i < 0 {
			panic("demo: no outcome named " + w.name)
		}
		out[i] = w
	}
	return out
}

func names(outcomes []outcome) []string {
	var out []string
	for _, o := range outcomes {
		out = append(out, o.name)
	}
	return out
}

// checkScript verifies that every step's outcome covers each of our pods
// exactly once, so that no pod goes unchecked: those seeded (ours) and
// those the step or an earlier one creates.
func checkScript(ss []step, ours []string) error {
	ours = slices.Clone(ours)
	for i, s := range ss {
		ours = append(ours, ourPods(s.creates)...)
		var covered []string
		for _, o := range s.expect {
			covered = append(covered, o.pods...)
		}
		if !sameKeys(covered, ours) {
			return fmt.Errorf("step %d: the expected outcome covers %v, not the pods of batch-scheduler %v", i+1, covered, ours)
		}
		for _, name := range s.shown {
			if !slices.ContainsFunc(s.expect, func(o outcome) bool { return o.name == name }) {
				return fmt.Errorf("step %d: no outcome named %s", i+1, name)
			}
		}
	}
	return nil
}

// podState is what the API says of a pod.
type podState struct {
	key       string
	scheduler string
	node      string
	// unschedulable: PodScheduled=False with reason Unschedulable, and
	// its message.
	unschedulable bool
	message       string
}

// observe lists every pod through the API.
func observe(ctx context.Context, client kubernetes.Interface) (map[string]podState, error) {
	list, err := client.CoreV1().Pods(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing pods: %w", err)
	}
	out := make(map[string]podState, len(list.Items))
	for _, p := range list.Items {
		s := podState{key: p.Namespace + "/" + p.Name, scheduler: p.Spec.SchedulerName, node: p.Spec.NodeName}
		for _, c := range p.Status.Conditions {
			if c.Type == v1.PodScheduled && c.Status == v1.ConditionFalse && c.Reason == v1.PodReasonUnschedulable {
				s.unschedulable, s.message = true, c.Message
			}
		}
		out[s.key] = s
	}
	return out, nil
}

// compare returns how states differ from expect: mismatches that may
// still resolve (a pod not placed yet, a message not updated yet), and
// final ones that cannot (a pod bound where it should not be: bindings are
// not undone).
func compare(expect []outcome, states map[string]podState) (pending, final []string) {
	for _, o := range expect {
		counts := map[string]int{}
		allBound := true // and where expected
		for _, key := range o.pods {
			s, ok := states[key]
			switch {
			case !ok:
				final = append(final, key+" is gone")
				allBound = false
			case o.anywhere && s.node == "":
				pending = append(pending, fmt.Sprintf("%s is not bound yet (%s)", key, s.message))
			case o.anywhere && s.node == o.avoid:
				final = append(final, fmt.Sprintf("%s is bound to %s; expected anywhere but there", key, s.node))
			case o.anywhere:
			case o.on == nil && s.node != "":
				final = append(final, fmt.Sprintf("%s is bound to %s; expected not bound", key, s.node))
			case o.on == nil && !s.unschedulable:
				pending = append(pending, key+" has no PodScheduled=False/Unschedulable condition yet")
			case o.on == nil:
				for _, w := range o.why {
					if !strings.Contains(s.message, w) {
						pending = append(pending, fmt.Sprintf("%s is Unschedulable with %q, which does not contain %q", key, s.message, w))
					}
				}
			case s.node == "":
				allBound = false
				if s.unschedulable {
					pending = append(pending, fmt.Sprintf("%s is not bound (expected on %s): %s", key, o.expectation(), s.message))
				} else {
					pending = append(pending, fmt.Sprintf("%s is not bound yet (expected on %s)", key, o.expectation()))
				}
			case o.on[s.node] == 0:
				final = append(final, fmt.Sprintf("%s is bound to %s; expected on %s", key, s.node, o.expectation()))
				allBound = false
			default:
				counts[s.node]++
			}
		}
		if o.on != nil && allBound && !maps.Equal(counts, o.on) {
			final = append(final, fmt.Sprintf("%s are bound %v; expected %s", o.name, counts, o.expectation()))
		}
	}
	return pending, final
}

// cacheAgrees reports whether /debug/cache holds on each node exactly the
// pods the API has bound there, none of them merely assumed.
func cacheAgrees(d *cache.Dump, states map[string]podState) bool {
	want := map[string][]string{}
	for _, s := range states {
		if s.node != "" {
			want[s.node] = append(want[s.node], s.key)
		}
	}
	for _, n := range d.Nodes {
		if len(n.AssumedPods) > 0 || !sameKeys(n.Pods, want[n.Name]) {
			return false
		}
		delete(want, n.Name)
	}
	return len(want) == 0
}

// sameKeys reports whether a and b hold the same keys, in any order.
func sameKeys(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}
