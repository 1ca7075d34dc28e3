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

package differential

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"

	frameworkruntime "github.com/batch-scheduler/batch-scheduler/pkg/framework/runtime"
	"github.com/batch-scheduler/batch-scheduler/pkg/plugins"
	"github.com/batch-scheduler/batch-scheduler/test/controlplane"
	"github.com/batch-scheduler/batch-scheduler/test/harness"
)

// scenario is one cluster state and the pods both schedulers get.
type scenario struct {
	name string
	// plugins names the kube-scheduler filters the scenario exercises. A
	// failure names those missing from batch-scheduler's default profile.
	plugins []string
	// nodes are created, with their status, before either scheduler runs,
	// and deleted after both.
	nodes []*v1.Node
	// objects are cluster-scoped objects created with the nodes and
	// deleted after both schedulers ran (StorageClasses, CSINodes, ...).
	objects []client.Object
	// phaseObjects, if set, returns objects for one scheduler's run in
	// namespace ns (claims, and the volumes bound to them): created before
	// the existing pods, deleted after the run. Objects that are
	// namespaced get ns as their namespace.
	phaseObjects func(ns string) []client.Object
	// existing are pods already running; each names its node
	// (spec.nodeName). They are created in each run's namespace before the
	// scheduler starts.
	existing []*v1.Pod
	// pods are the pods to schedule, created one at a time in this order,
	// each once the previous one has its verdict. A pod with scheduling
	// gates is judged at the end of the run instead (see verdictOf).
	pods []*v1.Pod
}

// verdict is what a scheduler decided for one pod.
type verdict struct {
	placed bool
	// node is where the pod went; informative only (scores differ).
	node string
	// gated is a pod that kept its scheduling gates' condition and no node.
	gated bool
	// message is the PodScheduled condition's message of an unschedulable
	// pod, as written; reason is its normalised form.
	message string
	reason  string
}

// key is what is compared between the two schedulers.
func (v verdict) key() string {
	switch {
	case v.placed:
		return "placed"
	case v.gated:
		return "gated"
	default:
		return "unschedulable: " + v.reason
	}
}

func (v verdict) String() string {
	switch {
	case v.placed:
		return "placed on " + v.node
	case v.gated:
		return "gated"
	default:
		return fmt.Sprintf("unschedulable: %q", v.message)
	}
}

// normalizeMessage reduces a "0/N nodes are available: ..." message to
// what both schedulers must agree on: its first sentence, without the
// period, with the "COUNT reason" entries sorted. kube-scheduler adds the
// message of its PostFilter plugin as a second sentence (" preemption:
// ...", or " not found." when preemption could not run); batch-scheduler
// has no such sentence for a pod that is not in a gang. A reason that
// itself holds ", " stays whole: an entry starts with a count.
func normalizeMessage(msg string) string {
	if i := strings.Index(msg, ". "); i >= 0 {
		msg = msg[:i]
	}
	msg = strings.TrimRight(strings.TrimSpace(msg), ".")
	head, rest, ok := strings.Cut(msg, ": ")
	if !ok {
		return msg
	}
	var entries []string
	for _, piece := range strings.Split(rest, ", ") {
		if len(entries) > 0 && !startsWithCount(piece) {
			entries[len(entries)-1] += ", " + piece
			continue
		}
		entries = append(entries, piece)
	}
	slices.Sort(entries)
	return head + ": " + strings.Join(entries, ", ")
}

// startsWithCount reports whether s starts with digits and a space.
func startsWithCount(s string) bool {
	n, _, ok := strings.Cut(s, " ")
	if !ok || n == "" {
		return false
	}
	for _, r := range n {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

// schedulerUnderTest starts one of the two schedulers.
type schedulerUnderTest struct {
	// name names it in messages and namespaces.
	name string
	// schedulerName is the spec.schedulerName it serves.
	schedulerName string
	// start starts it on the control plane; stop stops it.
	start func(t *testing.T) (stop func())
}

var (
	kubeScheduler  = schedulerUnderTest{name: "kube-scheduler", schedulerName: v1.DefaultSchedulerName, start: startKubeScheduler}
	batchScheduler = schedulerUnderTest{name: "batch-scheduler", schedulerName: "batch-scheduler", start: startBatchScheduler}
)

// startKubeScheduler runs bin/kube-scheduler (make control-plane builds
// it) as a child process; its log goes to a file shown when the test
// fails.
func startKubeScheduler(t *testing.T) (stop func()) {
	t.Helper()
	return cp.StartKubeScheduler(t, 1000)
}

// startBatchScheduler runs the batch-scheduler command in this process,
// with its default profile.
func startBatchScheduler(t *testing.T) (stop func()) {
	t.Helper()
	return harness.InProcess(t, cp.KubeconfigPath, "--kube-api-qps=1000", "--kube-api-burst=1000")
}

// objectClient reaches the control plane with any built-in type.
func objectClient(t *testing.T) client.Client {
	t.Helper()
	c, err := client.New(cp.Config, client.Options{Scheme: scheme.Scheme})
	if err != nil {
		t.Fatalf("creating a client for the control plane: %v", err)
	}
	return c
}

// runScenario runs sc through both schedulers and compares their verdicts
// pod by pod:
//
//  1. creates the nodes and cluster-scoped objects;
//  2. for kube-scheduler, then batch-scheduler: in a fresh namespace,
//     creates the run's objects and the existing pods, starts the
//     scheduler (so that its caches start from that state), creates the
//     pods with its schedulerName one at a time, waiting for each one's
//     verdict, stops the scheduler and deletes the run's pods (grace 0)
//     and objects;
//  3. deletes the nodes and cluster-scoped objects.
func runScenario(t *testing.T, sc scenario) {
	c := objectClient(t)
	ctx := t.Context()
	for _, n := range sc.nodes {
		n = n.DeepCopy()
		n.UID = ""
		if _, err := controlplane.CreateNode(ctx, cp.Client, n); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		for _, n := range sc.nodes {
			err := cp.Client.CoreV1().Nodes().Delete(context.Background(), n.Name, metav1.DeleteOptions{})
			if err != nil && !apierrors.IsNotFound(err) {
				t.Errorf("deleting node %s: %v", n.Name, err)
			}
		}
	})
	createObjects(t, c, sc.objects)

	want := runOne(t, c, sc, kubeScheduler)
	got := runOne(t, c, sc, batchScheduler)

	missing := missingPlugins(sc.plugins)
	for _, p := range sc.pods {
		w, g := want[p.Name], got[p.Name]
		if w.key() != g.key() {
			note := ""
			if len(missing) > 0 {
				note = fmt.Sprintf(" (batch-scheduler's default profile lacks %s)", strings.Join(missing, ", "))
			}
			t.Errorf("pod %s: kube-scheduler: %s; batch-scheduler: %s%s", p.Name, w, g, note)
		} else {
			t.Logf("pod %s: both: %s (kube-scheduler: %s; batch-scheduler: %s)", p.Name, w.key(), w, g)
		}
	}
}

// missingPlugins returns the plugins of names that batch-scheduler's
// default profile does not run at any extension point.
func missingPlugins(names []string) []string {
	profile := plugins.DefaultProfile("batch-scheduler")
	var missing []string
	for _, n := range names {
		found := false
		for _, set := range profile.Plugins {
			if slices.ContainsFunc(set, func(r frameworkruntime.PluginRef) bool { return r.Name == n }) {
				found = true
			}
		}
		if !found {
			missing = append(missing, n)
		}
	}
	return missing
}

// runOne runs the pods of sc through one scheduler in a namespace of its
// own and returns the verdicts by pod name.
func runOne(t *testing.T, c client.Client, sc scenario, s schedulerUnderTest) map[string]verdict {
	t.Helper()
	ctx := t.Context()
	ns := createNamespace(t, s.name)
	var objs []client.Object
	if sc.phaseObjects != nil {
		objs = sc.phaseObjects(ns)
		for _, o := range objs {
			if namespaced, err := c.IsObjectNamespaced(o); err == nil && namespaced {
				o.SetNamespace(ns)
			}
		}
	}
	createObjects(t, c, objs)
	for _, p := range sc.existing {
		p = p.DeepCopy()
		if p.Spec.NodeName == "" {
			t.Fatalf("existing pod %s names no node (spec.nodeName)", p.Name)
		}
		p.Namespace, p.UID = ns, ""
		if p.Status.Phase == "" || p.Status.Phase == v1.PodPending {
			p.Status.Phase = v1.PodRunning
		}
		if _, err := controlplane.CreatePod(ctx, cp.Client, p); err != nil {
			t.Fatal(err)
		}
	}

	stop := s.start(t)
	verdicts := map[string]verdict{}
	var gated []string
	for _, p := range sc.pods {
		p = p.DeepCopy()
		p.Namespace, p.UID, p.Spec.SchedulerName = ns, "", s.schedulerName
		if _, err := controlplane.CreatePod(ctx, cp.Client, p); err != nil {
			t.Fatal(err)
		}
		if len(p.Spec.SchedulingGates) > 0 {
			gated = append(gated, p.Name)
			continue
		}
		verdicts[p.Name] = waitForVerdict(t, s.name, ns, p.Name)
	}
	for _, name := range gated {
		verdicts[name] = gatedVerdict(t, ns, name)
	}
	stop()

	// Leave nothing behind that the next run's scheduler would count.
	err := cp.Client.CoreV1().Pods(ns).DeleteCollection(ctx, *metav1.NewDeleteOptions(0), metav1.ListOptions{})
	if err != nil {
		t.Fatalf("deleting the pods of %s: %v", ns, err)
	}
	err = wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		list, err := cp.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		return err == nil && len(list.Items) == 0, nil
	})
	if err != nil {
		t.Fatalf("the pods of %s were not deleted: %v", ns, err)
	}
	deleteObjects(t, c, objs)
	return verdicts
}

// verdictTimeout bounds the wait for one pod's verdict; the first pod of a
// run also waits for the scheduler to start.
const verdictTimeout = 60 * time.Second

// waitForVerdict waits until pod ns/name is bound or has
// PodScheduled=False with reason Unschedulable.
func waitForVerdict(t *testing.T, scheduler, ns, name string) verdict {
	t.Helper()
	var v verdict
	var last *v1.Pod
	err := wait.PollUntilContextTimeout(t.Context(), 20*time.Millisecond, verdictTimeout, true, func(ctx context.Context) (bool, error) {
		p, err := cp.Client.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, fmt.Errorf("reading pod %s/%s: %w", ns, name, err)
		}
		last = p
		if p.Spec.NodeName != "" {
			v = verdict{placed: true, node: p.Spec.NodeName}
			return true, nil
		}
		if c := scheduledCondition(p); c != nil && c.Status == v1.ConditionFalse && c.Reason == v1.PodReasonUnschedulable {
			v = verdict{message: c.Message, reason: normalizeMessage(c.Message)}
			return true, nil
		}
		return false, nil
	})
	if err != nil {
		var conds []v1.PodCondition
		if last != nil {
			conds = last.Status.Conditions
		}
		t.Fatalf("%s: pod %s/%s got no verdict (bound, or PodScheduled=False Unschedulable): %v; conditions: %+v", scheduler, ns, name, err, conds)
	}
	return v
}

// gatedWindow is how long a gated pod must stay unbound, after the other
// pods of its run got their verdicts, to count as left alone.
const gatedWindow = time.Second

// gatedVerdict judges a pod created with scheduling gates: gated if it
// stays unbound for gatedWindow with the API server's SchedulingGated
// condition intact.
func gatedVerdict(t *testing.T, ns, name string) verdict {
	t.Helper()
	var p *v1.Pod
	err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, gatedWindow, true, func(ctx context.Context) (bool, error) {
		got, err := cp.Client.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			// Also the client's limiter giving up at the window's end.
			return false, nil
		}
		p = got
		return p.Spec.NodeName != "", nil
	})
	switch {
	case err == nil:
		return verdict{placed: true, node: p.Spec.NodeName}
	case p == nil:
		t.Fatalf("reading pod %s/%s: never answered within %s", ns, name, gatedWindow)
	}
	if c := scheduledCondition(p); c != nil && c.Reason != v1.PodReasonSchedulingGated {
		return verdict{message: c.Message, reason: c.Reason + ": " + normalizeMessage(c.Message)}
	}
	return verdict{gated: true}
}

func scheduledCondition(p *v1.Pod) *v1.PodCondition {
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == v1.PodScheduled {
			return &p.Status.Conditions[i]
		}
	}
	return nil
}

// createNamespace creates a namespace for one scheduler's run. The name
// is random: a deleted namespace lingers until the namespace controller
// has emptied it.
func createNamespace(t *testing.T, prefix string) string {
	t.Helper()
	name := prefix + "-" + utilrand.String(6)
	ns := &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if _, err := cp.Client.CoreV1().Namespaces().Create(t.Context(), ns, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating namespace %s: %v", name, err)
	}
	return name
}

// createObjects creates objs, in order, and then writes the status of
// those that have one to write (volumes and claims that are Bound).
func createObjects(t *testing.T, c client.Client, objs []client.Object) {
	t.Helper()
	for _, o := range objs {
		o = o.DeepCopyObject().(client.Object)
		var status func(client.Object)
		switch typed := o.(type) {
		case *v1.PersistentVolume:
			if s := typed.Status; s.Phase != "" {
				status = func(created client.Object) { created.(*v1.PersistentVolume).Status = s }
			}
		case *v1.PersistentVolumeClaim:
			if s := typed.Status; s.Phase != "" {
				status = func(created client.Object) { created.(*v1.PersistentVolumeClaim).Status = s }
			}
		}
		if err := c.Create(t.Context(), o); err != nil {
			t.Fatalf("creating %T %s: %v", o, client.ObjectKeyFromObject(o), err)
		}
		if status != nil {
			status(o)
			if err := c.Status().Update(t.Context(), o); err != nil {
				t.Fatalf("setting the status of %T %s: %v", o, client.ObjectKeyFromObject(o), err)
			}
		}
	}
	// Cluster-scoped objects outlive the test's namespaces.
	t.Cleanup(func() { deleteObjects(t, c, objs) })
}

// deleteObjects deletes objs and waits until they are gone, removing the
// finalizers that only controllers absent here would remove (the
// protection of volumes and claims).
func deleteObjects(t *testing.T, c client.Client, objs []client.Object) {
	t.Helper()
	ctx := context.Background()
	for _, o := range objs {
		o = o.DeepCopyObject().(client.Object)
		key := client.ObjectKeyFromObject(o)
		err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
			if err := c.Get(ctx, key, o); apierrors.IsNotFound(err) {
				return true, nil
			} else if err != nil {
				return false, nil
			}
			if len(o.GetFinalizers()) > 0 {
				o.SetFinalizers(nil)
				if err := c.Update(ctx, o); err != nil {
					return false, nil
				}
			}
			if err := c.Delete(ctx, o); err != nil && !apierrors.IsNotFound(err) {
				return false, nil
			}
			return false, nil
		})
		if err != nil {
			t.Errorf("deleting %T %s: %v", o, key, err)
		}
	}
}
