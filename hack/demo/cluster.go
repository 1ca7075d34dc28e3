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
	st "github.com/batch-scheduler/batch-scheduler/pkg/testing"
	"github.com/batch-scheduler/batch-scheduler/test/controlplane"
)

// res is a resource list literal, e.g. res{"cpu": "2"}.
type res = map[v1.ResourceName]string

const (
	// ourScheduler is the command's default --scheduler-name.
	ourScheduler = "batch-scheduler"
	// otherScheduler binds the cluster's ordinary workloads.
	otherScheduler = "default-scheduler"
)

// seedNodes are the nodes that exist before the scheduler starts: a small
// and a large batch node, and a GPU node tainted so that only pods that
// tolerate it go there.
func seedNodes() []*v1.Node {
	return []*v1.Node{
		st.MakeNode().Name("small").Label("pool", "batch").
			Capacity(res{"cpu": "2", "memory": "4Gi", "pods": "10"}).Obj(),
		st.MakeNode().Name("large").Label("pool", "batch").
			Capacity(res{"cpu": "16", "memory": "64Gi", "pods": "110"}).Obj(),
		st.MakeNode().Name("gpu").Label("pool", "gpu").
			Capacity(res{"cpu": "8", "memory": "32Gi", "pods": "110", "nvidia.com/gpu": "4"}).
			Taint("nvidia.com/gpu", "true", v1.TaintEffectNoSchedule).Obj(),
	}
}

// seedPods are the pods that exist before the scheduler starts.
func seedPods() []*v1.Pod {
	pods := []*v1.Pod{
		// Running workloads another scheduler bound: they count on their
		// nodes. frontend-2's sidecar counts too. cache-1 is bound to node
		// edge, which does not exist yet.
		st.MakePod().Namespace("web").Name("frontend-1").Scheduler(otherScheduler).Node("large").Phase(v1.PodRunning).
			Req(res{"cpu": "4", "memory": "8Gi"}).Obj(),
		st.MakePod().Namespace("web").Name("frontend-2").Scheduler(otherScheduler).Node("small").Phase(v1.PodRunning).
			Req(res{"cpu": "500m", "memory": "1Gi"}).SidecarReq(res{"cpu": "250m", "memory": "256Mi"}).Obj(),
		st.MakePod().Namespace("web").Name("cache-1").Scheduler(otherScheduler).Node("edge").Phase(v1.PodRunning).
			Req(res{"cpu": "1", "memory": "2Gi"}).Obj(),
		// Pending for another scheduler: not ours, never in the cache.
		st.MakePod().Namespace("web").Name("frontend-3").Scheduler(otherScheduler).Req(res{"cpu": "1"}).Obj(),

		// Pending single pods for batch-scheduler, one of them for the GPU node.
		st.MakePod().Namespace("etl").Name("nightly").Req(res{"cpu": "500m", "memory": "1Gi"}).Obj(),
		st.MakePod().Namespace("etl").Name("report").Req(res{"cpu": "250m", "memory": "512Mi"}).Obj(),
		withLimits(st.MakePod().Namespace("ml").Name("finetune").Req(res{"cpu": "4", "memory": "16Gi", "nvidia.com/gpu": "2"}).
			Toleration("nvidia.com/gpu", "true", v1.TaintEffectNoSchedule).Obj()),
	}
	// A gang of 4 of which 3 must start together.
	for i := range 4 {
		pods = append(pods, st.MakePod().Namespace("ml").Name(fmt.Sprintf("train-%d", i)).
			Group("train").MinAvailable("3").Req(res{"cpu": "2", "memory": "4Gi"}).Obj())
	}
	// A gang whose min-available is not a number: the cache says so and
	// requires all of its pods.
	for i := range 2 {
		pods = append(pods, st.MakePod().Namespace("ml").Name(fmt.Sprintf("eval-%d", i)).
			Group("eval").MinAvailable("three").Req(res{"cpu": "1"}).Obj())
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

// seed creates the namespaces of pods, then nodes, then pods.
func seed(ctx context.Context, client kubernetes.Interface, nodes []*v1.Node, pods []*v1.Pod) error {
	for _, ns := range namespacesOf(pods) {
		obj := &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}
		if _, err := client.CoreV1().Namespaces().Create(ctx, obj, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("creating namespace %s: %w", ns, err)
		}
	}
	for _, n := range nodes {
		if _, err := controlplane.CreateNode(ctx, client, n); err != nil {
			return err
		}
	}
	for _, p := range pods {
		if _, err := controlplane.CreatePod(ctx, client, p); err != nil {
			return err
		}
	}
	return nil
}

// namespacesOf returns the namespaces of pods, sorted, without duplicates.
func namespacesOf(pods []*v1.Pod) []string {
	var names []string
	for _, p := range pods {
		names = append(names, p.Namespace)
	}
	slices.Sort(names)
	return slices.Compact(names)
}

// expectedKeys returns the "namespace/name" keys of the pods the cache
// should hold: every bound pod, and the pending pods for batch-scheduler.
func expectedKeys(pods []*v1.Pod) []string {
	var keys []string
	for _, p := range pods {
		if p.Spec.NodeName != "" || p.Spec.SchedulerName == ourScheduler {
			keys = append(keys, p.Namespace+"/"+p.Name)
		}
	}
	return keys
}

// change is one live change to the cluster, and how to tell that the cache
// has seen it.
type change struct {
	title string
	apply func(context.Context, kubernetes.Interface) error
	// shows describes done, for the message if the wait times out.
	shows string
	done  func(*cache.CacheDump) bool
}

// liveChanges are made one by one after the first picture of the cache.
func liveChanges() []change {
	return []change{
		{
			title: "Node edge joins: web/cache-1 moves from the placeholder to the real node.",
			apply: func(ctx context.Context, client kubernetes.Interface) error {
				_, err := controlplane.CreateNode(ctx, client, st.MakeNode().Name("edge").Label("pool", "edge").
					Capacity(res{"cpu": "4", "memory": "8Gi", "pods": "20"}).Obj())
				return err
			},
			shows: "node edge as a real node holding web/cache-1",
			done: func(d *cache.CacheDump) bool {
				n := findNode(d, "edge")
				return n != nil && !n.Placeholder && slices.Contains(n.Pods, "web/cache-1")
			},
		},
		{
			title: "web/frontend-1 finishes (phase Succeeded): its requests no longer count on node large.",
			apply: func(ctx context.Context, client kubernetes.Interface) error {
				return setPodPhase(ctx, client, "web", "frontend-1", v1.PodSucceeded)
			},
			shows: "web/frontend-1 as Succeeded and not counted",
			done: func(d *cache.CacheDump) bool {
				t := findTask(d, "web/frontend-1")
				return t != nil && t.Phase == v1.PodSucceeded && !t.Counted
			},
		},
		{
			title: "Node small is deleted while web/frontend-2 still runs on it: small becomes a placeholder\n" +
				"   that keeps the pod's requests until the pod goes away.",
			apply: func(ctx context.Context, client kubernetes.Interface) error {
				if err := client.CoreV1().Nodes().Delete(ctx, "small", metav1.DeleteOptions{}); err != nil {
					return fmt.Errorf("deleting node small: %w", err)
				}
				return nil
			},
			shows: "node small as a placeholder",
			done: func(d *cache.CacheDump) bool {
				n := findNode(d, "small")
				return n != nil && n.Placeholder
			},
		},
	}
}

// setPodPhase sets the status phase of a pod, as its kubelet would.
func setPodPhase(ctx context.Context, client kubernetes.Interface, ns, name string, phase v1.PodPhase) error {
	pods := client.CoreV1().Pods(ns)
	p, err := pods.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("getting pod %s/%s: %w", ns, name, err)
	}
	p.Status.Phase = phase
	if _, err := pods.UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("setting pod %s/%s to %s: %w", ns, name, phase, err)
	}
	return nil
}
