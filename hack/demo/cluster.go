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
	"fmt"
	"maps"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	st "github.com/batch-scheduler/batch-scheduler/pkg/testing"
	"github.com/batch-scheduler/batch-scheduler/test/controlplane"
	"github.com/batch-scheduler/batch-scheduler/test/harness"
)

// res is a resource list literal, e.g. res{"cpu": "2"}.
type res = map[v1.ResourceName]string

const (
	// ourScheduler is the command's default --scheduler-name.
	ourScheduler = "batch-scheduler"
	// otherScheduler binds the cluster's ordinary workloads.
	otherScheduler = "default-scheduler"

	gpuTaintKey = "nvidia.com/gpu"
	// jobsPool is the pool label of the nodes for the Jobs, which are
	// tainted jobsTaintKey=jobsPool:NoSchedule.
	jobsPool     = "jobs"
	jobsTaintKey = "dedicated"
)

// jobsNodes are the nodes of the jobs pool.
var jobsNodes = []string{"jobs-1", "jobs-2"}

// The sizes below are chosen so that the outcome does not depend on the
// order in which the scheduler tries jobs of equal priority: every pod of
// ours fits on one kind of node only (by size, selector or taint), and the
// pods that compete for room are either ordered by priority or never bound.
// The numbers that matter, with the pods of default-scheduler counted:
//
//	small  2 cpu,  4Gi:  1250m cpu, 2816Mi free: none of our pods fits
//	large 16 cpu, 64Gi: 12 cpu, 56Gi free; big-sort and ingest take
//	       7 cpu, 8Gi, leaving 48Gi: room for 3 of the 16Gi train tasks
//	       (not 4, whatever the order) and 1 of the 30Gi eval tasks (not 2)
//	gpu    8 cpu, 32Gi, 4 GPUs, 2 of them ml/notebook's (priority 0);
//	       retrain (priority 1000) and finetune (100) want 2 cpu, 8Gi,
//	       2 GPUs each: retrain gets the free GPUs, and finetune those of
//	       notebook, which it preempts
//	jobs-1, jobs-2  4 cpu, 8Gi each, tainted: only the Jobs' pods go there
//	       (jobs.go). nightly's 4 pods of 1500m, 2Gi fit 2 per node only,
//	       leaving 1 cpu, 4Gi on each; backfill's 2 pods of 3500m, 6Gi fit
//	       1 per node only, and only once nightly has finished
//	edge   joins later, 22Gi free: 1 train task, no eval task
//
// Then the VM manager starts a VM of 3 cpu and 4Gi on edge and etl/report
// (4 cpu, 2Gi) is created. Idle then: small 1250m cpu; large 2 cpu and no
// memory; gpu and the jobs pool are tainted; edge 6 cpu, 6Gi, less the VM:
// 3 cpu, 2Gi. So report fits nowhere while the VM runs, and on edge only
// once it stops. The jobs still waiting (warehouse, eval) fit nowhere
// either way.
//
// Every node is a node of KWOK's simulated kubelets
// (controlplane.CreateKwokNode): a bound pod starts running, a pod with
// controlplane.RunForAnnotation succeeds that long after, and an evicted
// pod is stopped and removed, as a kubelet would.

// priorityClasses are created before the pods that name them: the API
// server's Priority admission resolves spec.priorityClassName into
// spec.priority when a pod is created.
func priorityClasses() []*schedulingv1.PriorityClass {
	return []*schedulingv1.PriorityClass{
		{ObjectMeta: metav1.ObjectMeta{Name: "batch-high"}, Value: 1000, Description: "urgent batch work"},
		{ObjectMeta: metav1.ObjectMeta{Name: "batch-low"}, Value: 100, Description: "batch work that can wait"},
	}
}

// seedNodes are the nodes that exist before the scheduler starts: a small
// and a large batch node, a GPU node tainted so that only pods that
// tolerate it go there, and the jobs pool, tainted too.
func seedNodes() []*v1.Node {
	nodes := []*v1.Node{
		st.MakeNode().Name("small").Label("pool", "batch").
			Capacity(res{"cpu": "2", "memory": "4Gi", "pods": "10"}).Obj(),
		st.MakeNode().Name("large").Label("pool", "batch").
			Capacity(res{"cpu": "16", "memory": "64Gi", "pods": "110"}).Obj(),
		st.MakeNode().Name("gpu").Label("pool", "gpu").
			Capacity(res{"cpu": "8", "memory": "32Gi", "pods": "110", "nvidia.com/gpu": "4"}).
			Taint(gpuTaintKey, "true", v1.TaintEffectNoSchedule).Obj(),
	}
	for _, name := range jobsNodes {
		nodes = append(nodes, st.MakeNode().Name(name).Label("pool", jobsPool).
			Capacity(res{"cpu": "4", "memory": "8Gi", "pods": "10"}).
			Taint(jobsTaintKey, jobsPool, v1.TaintEffectNoSchedule).Obj())
	}
	return nodes
}

// reportPod is created in a live change, while a VM runs on edge: by size
// it fits on edge only (see the numbers above), and not next to the VM.
func reportPod() *v1.Pod {
	return st.MakePod().Namespace("etl").Name("report").Req(res{"cpu": "4", "memory": "2Gi"}).Obj()
}

// edgeNode joins in a live change. web/cache-1 is bound to it from the
// start, so until then the cache keeps a placeholder for it.
func edgeNode() *v1.Node {
	return st.MakeNode().Name("edge").Label("pool", "edge").
		Capacity(res{"cpu": "8", "memory": "24Gi", "pods": "20"}).Obj()
}

// seedPods are the pods that exist before the scheduler starts, in the
// order they are created.
func seedPods() []*v1.Pod {
	gpuPool := map[string]string{"pool": "gpu"}
	pods := []*v1.Pod{
		// Workloads another scheduler bound: they count on their nodes,
		// and their simulated kubelets run them. frontend-2's sidecar
		// counts too. cache-1 is bound to node edge, which does not exist
		// yet: it runs once edge joins. notebook has no priority class:
		// priority 0, below every pod of ours that has one.
		st.MakePod().Namespace("web").Name("frontend-1").Scheduler(otherScheduler).Node("large").
			Req(res{"cpu": "4", "memory": "8Gi"}).Obj(),
		st.MakePod().Namespace("web").Name("frontend-2").Scheduler(otherScheduler).Node("small").
			Req(res{"cpu": "500m", "memory": "1Gi"}).SidecarReq(res{"cpu": "250m", "memory": "256Mi"}).Obj(),
		st.MakePod().Namespace("web").Name("cache-1").Scheduler(otherScheduler).Node("edge").
			Req(res{"cpu": "1", "memory": "2Gi"}).Obj(),
		withLimits(st.MakePod().Namespace("ml").Name("notebook").Scheduler(otherScheduler).Node("gpu").
			Req(res{"cpu": "2", "memory": "8Gi", "nvidia.com/gpu": "2"}).Toleration(gpuTaintKey, "true", v1.TaintEffectNoSchedule).Obj()),
		// Pending for another scheduler: not ours, never in the cache.
		st.MakePod().Namespace("web").Name("frontend-3").Scheduler(otherScheduler).Req(res{"cpu": "1"}).Obj(),

		// Single pods for batch-scheduler.
		st.MakePod().Namespace("etl").Name("big-sort").Req(res{"cpu": "4", "memory": "4Gi"}).Obj(),
		st.MakePod().Namespace("etl").Name("warehouse").Req(res{"cpu": "20", "memory": "80Gi"}).
			Toleration(gpuTaintKey, "true", v1.TaintEffectNoSchedule).Obj(),
		// finetune (low priority) is created before retrain (high
		// priority); both want the GPU node's last 2 GPUs. retrain gets
		// them; finetune preempts notebook.
		withPriorityClass("batch-low", withLimits(st.MakePod().Namespace("ml").Name("finetune").
			Req(res{"cpu": "2", "memory": "8Gi", "nvidia.com/gpu": "2"}).
			NodeSelector(gpuPool).Toleration(gpuTaintKey, "true", v1.TaintEffectNoSchedule).Obj())),
		withPriorityClass("batch-high", withLimits(st.MakePod().Namespace("ml").Name("retrain").
			Req(res{"cpu": "2", "memory": "8Gi", "nvidia.com/gpu": "2"}).
			NodeSelector(gpuPool).Toleration(gpuTaintKey, "true", v1.TaintEffectNoSchedule).Obj())),
		// Selects the GPU node but forgot the toleration.
		withLimits(st.MakePod().Namespace("ml").Name("inference").
			Req(res{"cpu": "1", "memory": "2Gi", "nvidia.com/gpu": "1"}).NodeSelector(gpuPool).Obj()),
	}
	// A gang of 2 that fits.
	for i := range 2 {
		pods = append(pods, st.MakePod().Namespace("etl").Name(fmt.Sprintf("ingest-%d", i)).
			Group("ingest").MinAvailable("2").Req(res{"cpu": "1500m", "memory": "2Gi"}).Obj())
	}
	// A gang of 4 that must start together, of which only 3 fit.
	for i := range 4 {
		pods = append(pods, st.MakePod().Namespace("ml").Name(fmt.Sprintf("train-%d", i)).
			Group("train").MinAvailable("4").Req(res{"cpu": "1", "memory": "16Gi"}).Obj())
	}
	// A gang whose min-available is not a number: it declares no usable
	// quorum, so it never starts, and its pods say what to fix.
	for i := range 2 {
		pods = append(pods, st.MakePod().Namespace("ml").Name(fmt.Sprintf("eval-%d", i)).
			Group("eval").MinAvailable("three").Req(res{"cpu": "1", "memory": "30Gi"}).Obj())
	}
	return pods
}

// withLimits sets the limits of pod's containers to their requests: the
// API server rejects extended resources such as GPUs without limits.
func withLimits(pod *v1.Pod) *v1.Pod {
	for i := range pod.Spec.Containers {
		c := &pod.Spec.Containers[i]
		c.Resources.Limits = c.Resources.Requests.DeepCopy()
	}
	return pod
}

// withPriorityClass sets pod's spec.priorityClassName.
func withPriorityClass(name string, pod *v1.Pod) *v1.Pod {
	pod.Spec.PriorityClassName = name
	return pod
}

// describeNode renders what the cache tables do not show of a node: its
// labels and taints, e.g. "gpu: pool=gpu, taint nvidia.com/gpu=true:NoSchedule".
func describeNode(n *v1.Node) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(n.Labels)) {
		parts = append(parts, k+"="+n.Labels[k])
	}
	for _, t := range n.Spec.Taints {
		parts = append(parts, "taint "+t.ToString())
	}
	return n.Name + ": " + strings.Join(parts, ", ")
}

// seed creates the namespaces of pods, the priority classes, then nodes
// (of the simulated kubelets, each Ready before the next), then pods. It
// checks that the API server resolved every priority class, and waits
// until the simulated kubelets run the pods bound to the nodes.
func seed(ctx context.Context, client kubernetes.Interface, classes []*schedulingv1.PriorityClass, nodes []*v1.Node, pods []*v1.Pod) error {
	if err := createNamespaces(ctx, client, pods); err != nil {
		return err
	}
	values := map[string]int32{}
	for _, pc := range classes {
		if _, err := client.SchedulingV1().PriorityClasses().Create(ctx, pc, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("creating priority class %s: %w", pc.Name, err)
		}
		values[pc.Name] = pc.Value
	}
	for _, n := range nodes {
		if _, err := controlplane.CreateKwokNode(ctx, client, n); err != nil {
			return err
		}
	}
	for _, p := range pods {
		created, err := controlplane.CreatePod(ctx, client, p)
		if err != nil {
			return err
		}
		if want, ok := values[p.Spec.PriorityClassName]; ok && (created.Spec.Priority == nil || *created.Spec.Priority != want) {
			return fmt.Errorf("pod %s/%s: the API server did not set spec.priority to %d from priority class %s (got %v)",
				p.Namespace, p.Name, want, p.Spec.PriorityClassName, created.Spec.Priority)
		}
	}
	return waitRunning(ctx, client, nodes, pods)
}

// waitRunning waits until every pod of pods bound to one of nodes is
// Running.
func waitRunning(ctx context.Context, client kubernetes.Interface, nodes []*v1.Node, pods []*v1.Pod) error {
	return harness.Poll(ctx, waitTimeout, "the simulated kubelets to run the pods bound to the seeded nodes", nil, func() (bool, error) {
		states, err := harness.ObservePods(ctx, client)
		for _, p := range pods {
			if s := states[p.Namespace+"/"+p.Name]; err == nil && slices.ContainsFunc(nodes, func(n *v1.Node) bool { return n.Name == p.Spec.NodeName }) && s.Phase != v1.PodRunning {
				return false, fmt.Errorf("%s is %s", s.Key, harness.PhaseOf(s))
			}
		}
		return err == nil, err
	})
}

// createNamespaces creates the namespaces of pods.
func createNamespaces(ctx context.Context, client kubernetes.Interface, pods []*v1.Pod) error {
	var names []string
	for _, p := range pods {
		names = append(names, p.Namespace)
	}
	slices.Sort(names)
	for _, ns := range slices.Compact(names) {
		obj := &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}
		if _, err := client.CoreV1().Namespaces().Create(ctx, obj, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("creating namespace %s: %w", ns, err)
		}
	}
	return nil
}

// ourPods returns the "namespace/name" keys of the pods batch-scheduler
// is to schedule.
func ourPods(pods []*v1.Pod) []string {
	var keys []string
	for _, p := range pods {
		if p.Spec.NodeName == "" && p.Spec.SchedulerName == ourScheduler {
			keys = append(keys, p.Namespace+"/"+p.Name)
		}
	}
	return keys
}

// addNode creates node as a node of the simulated kubelets, and returns
// once it is Ready.
func addNode(node *v1.Node) func(context.Context, *env) error {
	return func(ctx context.Context, e *env) error {
		_, err := controlplane.CreateKwokNode(ctx, e.cp.Client, node)
		return err
	}
}
