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

package kueue

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
	st "github.com/batch-scheduler/batch-scheduler/pkg/testing"
	"github.com/batch-scheduler/batch-scheduler/test/controlplane"
	"github.com/batch-scheduler/batch-scheduler/test/podwatch"
)

var (
	resourceFlavorGVR = schema.GroupVersionResource{Group: "kueue.x-k8s.io", Version: "v1beta2", Resource: "resourceflavors"}
	clusterQueueGVR   = schema.GroupVersionResource{Group: "kueue.x-k8s.io", Version: "v1beta2", Resource: "clusterqueues"}
	// clusterQueueV1beta1GVR is the older version Kueue still serves,
	// converted by its webhook.
	clusterQueueV1beta1GVR = schema.GroupVersionResource{Group: "kueue.x-k8s.io", Version: "v1beta1", Resource: "clusterqueues"}
	localQueueGVR          = schema.GroupVersionResource{Group: "kueue.x-k8s.io", Version: "v1beta2", Resource: "localqueues"}
	workloadGVR            = schema.GroupVersionResource{Group: "kueue.x-k8s.io", Version: "v1beta2", Resource: "workloads"}
)

const (
	// queueLabel puts a Job in a LocalQueue (Kueue's
	// kueue.x-k8s.io/queue-name).
	queueLabel = "kueue.x-k8s.io/queue-name"
	flavor     = "default-flavor"

	// jobPods is the Job's parallelism and completions, and its quorum as
	// a gang; each pod requests 1 CPU, each node has 1 CPU, and the
	// ClusterQueue's quota is jobPods CPUs.
	jobPods = 4
	// hold is how long each run keeps room for jobPods-1 pods once every
	// pod has its verdict (bound, or unschedulable).
	hold = 5 * time.Second
	// runFor is how long a pod runs under KWOK: longer than hold, so that
	// pods started while there is room for jobPods-1 hold their nodes
	// until the last node comes, as the workers of a gang job waiting for
	// their peers would.
	runFor = 8 * time.Second
	// settle is how long the watcher lets a Job run below its quorum on its
	// way up (the binds of a gang are separate calls); shorter than hold,
	// so that kube-scheduler's partial placement is seen as one.
	settle = 3 * time.Second
)

// outcome is what one scheduler did with the admitted Job.
type outcome struct {
	// admitted: Job created -> its Workload Admitted by Kueue.
	admitted time.Duration
	// boundWhileShort and runningWhileShort are how many of the Job's
	// pods were bound, and in phase Running, at the end of the hold, and
	// peakWhileShort the most that were running (bound and not finished,
	// as the watcher counts) at once until then, while the cluster had
	// room for jobPods-1.
	boundWhileShort, runningWhileShort, peakWhileShort int
	// whole: the last node joined (Ready, and its not-ready taint
	// removed) -> all the pods bound.
	whole time.Duration
	// peak and belowQuorum are the watcher's figures for the whole run:
	// the most pods running at once, and how long some but fewer than
	// jobPods were running after a bind.
	peak        int
	belowQuorum time.Duration
	// finished: the last node joined -> Kueue's Workload Finished.
	finished   time.Duration
	violations []podwatch.Violation
}

// TestAdmittedJobPlacedWhole runs the same Kueue-admitted Job of 4 pods,
// on a cluster with room for 3, under kube-scheduler and then under
// batch-scheduler. Kueue admits both by quota. kube-scheduler starts 3 of
// the 4 pods (the test requires it: the partial placement Kueue's
// waitForPodsReady exists to undo); batch-scheduler starts none until a
// fourth node comes, then all 4, and a watcher of every pod transition
// fails the test if the Job ever runs below its quorum for longer than
// the binds take.
func TestAdmittedJobPlacedWhole(t *testing.T) {
	ensureResourceFlavor(t)
	var kube, batch outcome
	kubeOK := t.Run(kubeScheduler.name, func(t *testing.T) {
		kube = runAdmittedJob(t, kubeScheduler)
		if kube.peakWhileShort != jobPods-1 {
			t.Errorf("kube-scheduler: want %d of the %d pods running while there is room for %d (a partial placement), saw at most %d", jobPods-1, jobPods, jobPods-1, kube.peakWhileShort)
		}
		if kube.runningWhileShort != jobPods-1 {
			t.Errorf("kube-scheduler: want %d pods in phase Running under KWOK at the end of the hold, saw %d", jobPods-1, kube.runningWhileShort)
		}
		if kube.belowQuorum <= settle {
			t.Errorf("kube-scheduler: want the Job below its quorum for longer than %s, saw %s", settle, kube.belowQuorum)
		}
		if !hasViolation(kube.violations, "below-quorum") {
			t.Errorf("kube-scheduler: the watcher saw no gang below its quorum; violations: %v", kube.violations)
		}
		for _, v := range kube.violations {
			if v.Kind != "below-quorum" {
				t.Errorf("kube-scheduler: %s", v)
			}
		}
	})
	batchOK := t.Run(batchScheduler.name, func(t *testing.T) {
		batch = runAdmittedJob(t, batchScheduler)
		if batch.boundWhileShort != 0 || batch.peakWhileShort != 0 {
			t.Errorf("batch-scheduler: want no pod bound while there is room for %d of %d, saw %d bound (at most %d running)", jobPods-1, jobPods, batch.boundWhileShort, batch.peakWhileShort)
		}
		if batch.peak != jobPods {
			t.Errorf("batch-scheduler: want all %d pods running at once, saw at most %d", jobPods, batch.peak)
		}
		for _, v := range batch.violations {
			t.Errorf("batch-scheduler: %s", v)
		}
	})
	if kubeOK && batchOK {
		t.Logf("Kueue admitted a Job of %d pods (1 CPU each) by quota on a cluster with room for %d; %s later a node joined:", jobPods, jobPods-1, hold)
		for _, r := range []struct {
			name string
			o    outcome
		}{{kubeScheduler.name, kube}, {batchScheduler.name, batch}} {
			t.Logf("  %-15s admitted in %s; with room for %d: %d bound (%d Running), peak %d running; below quorum (0 < running < %d) for %s in all; all bound %s after the node joined, Workload Finished %s after",
				r.name, r.o.admitted.Round(time.Millisecond), jobPods-1, r.o.boundWhileShort, r.o.runningWhileShort, r.o.peakWhileShort, jobPods,
				r.o.belowQuorum.Round(time.Millisecond), r.o.whole.Round(time.Millisecond), r.o.finished.Round(time.Millisecond))
		}
	}
}

// runAdmittedJob runs the Job under s in a namespace and on nodes of its
// own, stopping s at the end.
func runAdmittedJob(t *testing.T, s scheduler) outcome {
	ctx := t.Context()
	ns := createNamespace(t, "kq-"+s.name)
	var nodes []string
	capacities := map[string]podwatch.Capacity{}
	for i := range jobPods {
		name := fmt.Sprintf("%s-%d", ns, i)
		nodes = append(nodes, name)
		capacities[name] = podwatch.Capacity{MilliCPU: 1000, Memory: 8 << 30, Pods: 110}
	}
	for _, n := range nodes[:jobPods-1] {
		addNode(t, n)
	}
	createQueues(t, ns)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("KWOK's log, lines about %s:\n%s", ns, logLines(filepath.Join(cp.Dir, "kwok.log"), ns, 40))
		}
	})

	w := podwatch.New(cp.Client, ns, capacities, nil)
	w.Settle = settle
	w.GangOf = podwatch.ControllerGang("Job", func(string) int { return jobPods })
	watchCtx, cancel := context.WithCancel(ctx)
	t.Cleanup(cancel)
	if err := w.Start(watchCtx); err != nil {
		t.Fatalf("watching the pods of %s: %v", ns, err)
	}

	s.start(t)
	var out outcome
	start := time.Now()
	job := createJob(t, ns, "train", s.schedulerName)
	wl := waitWorkload(t, ns, "Admitted")
	out.admitted = time.Since(start)
	t.Logf("%s: Workload %s/%s admitted %s after the Job was created", s.name, ns, wl, out.admitted.Round(time.Millisecond))

	pods := waitVerdicts(t, ns, jobPods)
	t.Logf("%s: every pod has its verdict: %d bound", s.name, len(boundPods(pods)))
	out.boundWhileShort, out.runningWhileShort = holdBound(t, ns, len(boundPods(pods)), hold)
	out.peakWhileShort = w.Gangs()[job.Name].Peak

	addNode(t, nodes[jobPods-1])
	added := time.Now()
	waitAllBound(t, ns, jobPods)
	out.whole = time.Since(added)
	waitJobComplete(t, ns, job.Name)
	waitWorkloadCondition(t, ns, wl, "Finished")
	out.finished = time.Since(added)

	stats := w.Gangs()[job.Name]
	out.peak, out.belowQuorum = stats.Peak, stats.BelowQuorum
	var uids []types.UID
	for _, p := range listPods(t, ns) {
		uids = append(uids, p.UID)
	}
	out.violations = w.Violations(uids)
	return out
}

// ensureResourceFlavor creates the ResourceFlavor both runs use. It is
// the first Kueue object the tests create, so it goes through Kueue's
// webhooks (mutating and validating) as soon as Kueue is ready; it is
// retried until the API server trusts them (Kueue injects its CA bundle).
func ensureResourceFlavor(t *testing.T) {
	t.Helper()
	rf := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "kueue.x-k8s.io/v1beta2",
		"kind":       "ResourceFlavor",
		"metadata":   map[string]any{"name": flavor},
	}}
	var last error
	err := wait.PollUntilContextTimeout(t.Context(), 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		_, last = dyn.Resource(resourceFlavorGVR).Create(ctx, rf, metav1.CreateOptions{})
		return last == nil || strings.Contains(last.Error(), "already exists"), nil
	})
	if err != nil {
		t.Fatalf("creating ResourceFlavor %s through Kueue's webhooks: %v (last error: %v)", flavor, err, last)
	}
}

// createQueues creates a ClusterQueue named after ns, for ns only, with
// a quota of jobPods CPUs, and the LocalQueue "lq" in ns pointing at it,
// and waits until the ClusterQueue is active.
func createQueues(t *testing.T, ns string) {
	t.Helper()
	cq := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "kueue.x-k8s.io/v1beta2",
		"kind":       "ClusterQueue",
		"metadata":   map[string]any{"name": ns},
		"spec": map[string]any{
			"namespaceSelector": map[string]any{"matchLabels": map[string]any{"kubernetes.io/metadata.name": ns}},
			"resourceGroups": []any{map[string]any{
				"coveredResources": []any{"cpu"},
				"flavors": []any{map[string]any{
					"name":      flavor,
					"resources": []any{map[string]any{"name": "cpu", "nominalQuota": fmt.Sprint(jobPods)}},
				}},
			}},
		},
	}}
	if _, err := dyn.Resource(clusterQueueGVR).Create(t.Context(), cq, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating ClusterQueue %s: %v", ns, err)
	}
	t.Cleanup(func() { _ = dyn.Resource(clusterQueueGVR).Delete(context.Background(), ns, metav1.DeleteOptions{}) })
	lq := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "kueue.x-k8s.io/v1beta2",
		"kind":       "LocalQueue",
		"metadata":   map[string]any{"name": "lq", "namespace": ns},
		"spec":       map[string]any{"clusterQueue": ns},
	}}
	if _, err := dyn.Resource(localQueueGVR).Namespace(ns).Create(t.Context(), lq, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating LocalQueue %s/lq: %v", ns, err)
	}
	waitCondition(t, clusterQueueGVR, "", ns, "Active")
	// Stored as v1beta2; read as v1beta1 it goes through Kueue's
	// conversion webhook.
	quiet := rest.CopyConfig(cp.Config)
	quiet.WarningHandler = rest.NoWarnings{} // "This version is deprecated"
	quietDyn, err := dynamic.NewForConfig(quiet)
	if err != nil {
		t.Fatalf("creating a dynamic client: %v", err)
	}
	old, err := quietDyn.Resource(clusterQueueV1beta1GVR).Get(t.Context(), ns, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("reading ClusterQueue %s as v1beta1 (Kueue's conversion webhook): %v", ns, err)
	}
	groups, _, _ := unstructured.NestedSlice(old.Object, "spec", "resourceGroups")
	if len(groups) != 1 {
		t.Fatalf("ClusterQueue %s as v1beta1 (Kueue's conversion webhook): want 1 resource group, got %v", ns, old.Object["spec"])
	}
}

// createJob creates a Job of jobPods pods of 1 CPU in LocalQueue "lq",
// opted in to gang scheduling, for schedulerName. It is created
// unsuspended: Kueue's mutating webhook must suspend it.
func createJob(t *testing.T, ns, name, schedulerName string) *batchv1.Job {
	t.Helper()
	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{queueLabel: "lq"}},
		Spec: batchv1.JobSpec{
			Parallelism:  ptr.To(int32(jobPods)),
			Completions:  ptr.To(int32(jobPods)),
			BackoffLimit: ptr.To(int32(0)),
			Template: v1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{
					framework.JobGangAnnotation:   "true",
					controlplane.RunForAnnotation: runFor.String(),
				}},
				Spec: v1.PodSpec{
					SchedulerName: schedulerName,
					RestartPolicy: v1.RestartPolicyNever,
					Containers: []v1.Container{{
						Name:      "worker",
						Image:     "worker",
						Resources: v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("1")}},
					}},
				},
			},
		},
	}
	created, err := cp.Client.BatchV1().Jobs(ns).Create(t.Context(), job, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating Job %s/%s: %v", ns, name, err)
	}
	if !ptr.Deref(created.Spec.Suspend, false) {
		t.Fatalf("Job %s/%s was created unsuspended: Kueue's mutating webhook did not suspend it", ns, name)
	}
	return created
}

// waitWorkload waits until a Workload of ns has condition cond True and
// returns its name.
func waitWorkload(t *testing.T, ns, cond string) string {
	t.Helper()
	var name string
	err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		list, err := dyn.Resource(workloadGVR).Namespace(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil
		}
		for _, wl := range list.Items {
			if conditionTrue(&wl, cond) {
				name = wl.GetName()
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("no Workload of %s with %s=True: %v", ns, cond, err)
	}
	return name
}

// waitWorkloadCondition waits until Workload ns/name has condition cond
// True.
func waitWorkloadCondition(t *testing.T, ns, name, cond string) {
	t.Helper()
	waitCondition(t, workloadGVR, ns, name, cond)
}

func waitCondition(t *testing.T, gvr schema.GroupVersionResource, ns, name, cond string) {
	t.Helper()
	var last any
	err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		var u *unstructured.Unstructured
		var err error
		if ns == "" {
			u, err = dyn.Resource(gvr).Get(ctx, name, metav1.GetOptions{})
		} else {
			u, err = dyn.Resource(gvr).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
		}
		if err != nil {
			return false, nil
		}
		last = u.Object["status"]
		return conditionTrue(u, cond), nil
	})
	if err != nil {
		t.Fatalf("%s %s: waiting for %s=True: %v; last status %v", gvr.Resource, types.NamespacedName{Namespace: ns, Name: name}, cond, err, last)
	}
}

func conditionTrue(u *unstructured.Unstructured, cond string) bool {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == cond && m["status"] == "True" {
			return true
		}
	}
	return false
}

// waitVerdicts waits until ns has want pods and each is bound or has
// PodScheduled=False, and returns them.
func waitVerdicts(t *testing.T, ns string, want int) []v1.Pod {
	t.Helper()
	var pods []v1.Pod
	err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		pods = listPods(t, ns)
		if len(pods) != want {
			return false, nil
		}
		for _, p := range pods {
			if p.Spec.NodeName == "" && !unschedulable(&p) {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		t.Fatalf("waiting for %d pods of %s with a verdict: %v; pods: %s", want, ns, err, describe(pods))
	}
	return pods
}

// holdBound checks for d that no further pod of ns is bound (want are),
// and returns how many are bound, and in phase Running, at the end.
func holdBound(t *testing.T, ns string, want int, d time.Duration) (bound, running int) {
	t.Helper()
	var pods []v1.Pod
	err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, d, true, func(context.Context) (bool, error) {
		pods = listPods(t, ns)
		return len(boundPods(pods)) != want, nil
	})
	if err == nil {
		t.Fatalf("with room for %d pods, %d of %s were bound, then %d: %s", jobPods-1, want, ns, len(boundPods(pods)), describe(pods))
	}
	for _, p := range pods {
		if p.Status.Phase == v1.PodRunning {
			running++
		}
	}
	return len(boundPods(pods)), running
}

// waitAllBound waits until want pods of ns have been bound (finished
// pods keep their node).
func waitAllBound(t *testing.T, ns string, want int) {
	t.Helper()
	var pods []v1.Pod
	err := wait.PollUntilContextTimeout(t.Context(), 50*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		pods = listPods(t, ns)
		return len(boundPods(pods)) == want, nil
	})
	if err != nil {
		t.Fatalf("waiting for %d pods of %s bound: %v; pods: %s", want, ns, err, describe(pods))
	}
}

func waitJobComplete(t *testing.T, ns, name string) {
	t.Helper()
	var last batchv1.JobStatus
	err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		job, err := cp.Client.BatchV1().Jobs(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		last = job.Status
		for _, c := range job.Status.Conditions {
			if c.Type == batchv1.JobComplete && c.Status == v1.ConditionTrue {
				return true, nil
			}
			if c.Type == batchv1.JobFailed && c.Status == v1.ConditionTrue {
				return false, fmt.Errorf("job failed: %s: %s", c.Reason, c.Message)
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("Job %s/%s never completed: %v; active %d, succeeded %d, failed %d; pods: %s", ns, name, err, last.Active, last.Succeeded, last.Failed, describe(listPods(t, ns)))
	}
}

func listPods(t *testing.T, ns string) []v1.Pod {
	t.Helper()
	list, err := cp.Client.CoreV1().Pods(ns).List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatalf("listing the pods of %s: %v", ns, err)
	}
	return list.Items
}

func boundPods(pods []v1.Pod) []string {
	var out []string
	for _, p := range pods {
		if p.Spec.NodeName != "" {
			out = append(out, p.Name)
		}
	}
	return out
}

func unschedulable(p *v1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == v1.PodScheduled && c.Status == v1.ConditionFalse {
			return true
		}
	}
	return false
}

// logLines returns the last n lines of the file at path that contain
// substr.
func logLines(path, substr string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	var lines []string
	for _, l := range strings.Split(string(data), "\n") {
		if strings.Contains(l, substr) {
			lines = append(lines, l)
		}
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// describe says where each pod is and why it waits.
func describe(pods []v1.Pod) string {
	var b strings.Builder
	for _, p := range pods {
		fmt.Fprintf(&b, "\n  %s: phase %s, node %q", p.Name, p.Status.Phase, p.Spec.NodeName)
		for _, c := range p.Status.Conditions {
			if c.Type == v1.PodScheduled && c.Status == v1.ConditionFalse {
				fmt.Fprintf(&b, ", unschedulable: %s", c.Message)
			}
		}
	}
	return b.String()
}

func hasViolation(vs []podwatch.Violation, kind string) bool {
	for _, v := range vs {
		if v.Kind == kind {
			return true
		}
	}
	return false
}

// createNamespace creates a namespace named after prefix, deleted (not
// waited for) when the test ends.
func createNamespace(t *testing.T, prefix string) string {
	t.Helper()
	name := prefix + "-" + utilrand.String(5)
	if _, err := cp.Client.CoreV1().Namespaces().Create(t.Context(), &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating namespace %s: %v", name, err)
	}
	t.Cleanup(func() { _ = cp.Client.CoreV1().Namespaces().Delete(context.Background(), name, metav1.DeleteOptions{}) })
	return name
}

// addNode makes a KWOK node of 1 CPU join the cluster as a real node
// does: CreateKwokNode taints it node.kubernetes.io/not-ready until its
// simulated kubelet reports it Ready, so no pod is bound to it before
// KWOK manages it. The node is deleted when the test ends.
func addNode(t *testing.T, name string) {
	t.Helper()
	n := st.MakeNode().Name(name).Capacity(map[v1.ResourceName]string{"cpu": "1", "memory": "8Gi", "pods": "110"}).Obj()
	if _, err := controlplane.CreateKwokNode(t.Context(), cp.Client, n); err != nil {
		t.Fatalf("creating node %s: %v", name, err)
	}
	t.Cleanup(func() { _ = cp.Client.CoreV1().Nodes().Delete(context.Background(), name, metav1.DeleteOptions{}) })
}
