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

package workloads

import (
	"context"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"

	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
	"github.com/batch-scheduler/batch-scheduler/pkg/plugins/topologyaware"
	st "github.com/batch-scheduler/batch-scheduler/pkg/testing"
	"github.com/batch-scheduler/batch-scheduler/test/controlplane"
	"github.com/batch-scheduler/batch-scheduler/test/podwatch"
)

// The shape of the multi-level tests: replicas of a serving group (a
// leader and its workers, replicaSize pods of 1 CPU each), each a
// sub-gang within one rack, the set within one block.
const (
	replicas    = 3
	replicaSize = 4
	// replicaLabel keys a pod's replica in the StatefulSets below: the
	// label a LeaderWorkerSet sets on the pods of each of its groups.
	replicaLabel = framework.LeaderWorkerSetGroupIndexLabel
)

var lwsGVR = schema.GroupVersionResource{Group: "leaderworkerset.x-k8s.io", Version: "v1", Resource: "leaderworkersets"}

// addRackNodes adds KWOK nodes in rack of block, one per entry of cpus.
func addRackNodes(t *testing.T, ns, block, rack string, cpus ...string) {
	t.Helper()
	for i, cpu := range cpus {
		name := fmt.Sprintf("%s-%s-%d", ns, rack, i)
		n := st.MakeNode().Name(name).Label(topologyaware.BlockLabel, block).Label(topologyaware.RackLabel, rack).
			Label(topologyaware.HostnameLabel, name).Capacity(map[v1.ResourceName]string{"cpu": cpu, "memory": "8Gi", "pods": "110"}).Obj()
		if _, err := controlplane.CreateKwokNode(t.Context(), cp.Client, n); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cp.Client.CoreV1().Nodes().Delete(context.Background(), name, metav1.DeleteOptions{}) })
	}
}

// multiLevelCluster makes the nodes of the multi-level tests: block b1
// holds racks r1 and r2 of 4 CPUs and r3 of 3, block b2 one rack of 4.
// b1 has room for every pod but one; b2 for one replica.
func multiLevelCluster(t *testing.T, ns string) {
	addRackNodes(t, ns, "b1", "r1", "2", "2")
	addRackNodes(t, ns, "b1", "r2", "2", "2")
	addRackNodes(t, ns, "b1", "r3", "2", "1")
	addRackNodes(t, ns, "b2", "r4", "2", "2")
}

// replicaSet is the StatefulSet of replica r of group name: its pods
// carry labels and annotations (its controller, KCM's StatefulSet
// controller, creates them all at once).
func replicaSet(ns, name string, r int, labels, annotations map[string]string) *appsv1.StatefulSet {
	size := int32(replicaSize)
	lbls := map[string]string{"app": name, replicaLabel: fmt.Sprint(r)}
	for k, v := range labels {
		lbls[k] = v
	}
	return &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("%s-%d", name, r)},
		Spec: appsv1.StatefulSetSpec{
			Replicas:            &size,
			PodManagementPolicy: appsv1.ParallelPodManagement,
			Selector:            &metav1.LabelSelector{MatchLabels: map[string]string{"app": name, replicaLabel: fmt.Sprint(r)}},
			Template: v1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: lbls, Annotations: annotations},
				Spec: v1.PodSpec{
					SchedulerName: "batch-scheduler",
					Containers: []v1.Container{{Name: "main", Image: "server", Resources: v1.ResourceRequirements{
						Requests: v1.ResourceList{v1.ResourceCPU: mustQuantity("1")}}}},
				},
			},
		},
	}
}

// watchLevels starts two watchers of ns: one whose gangs are the
// replicas (quorum replicaSize each), one whose gang is the whole set
// (quorum wholeQuorum). Each reports a level running below its quorum for
// longer than its settle time when the test ends.
func watchLevels(t *testing.T, ns string, wholeQuorum int) {
	t.Helper()
	for _, gangOf := range []podwatch.GangOf{
		func(p *v1.Pod) (string, int) {
			if r, ok := p.Labels[replicaLabel]; ok {
				return "replica-" + r, replicaSize
			}
			return "", 0
		},
		func(p *v1.Pod) (string, int) {
			if _, ok := p.Labels[replicaLabel]; ok {
				return "whole", wholeQuorum
			}
			return "", 0
		},
	} {
		w := podwatch.New(cp.Client, ns, nil, nil)
		w.GangOf = gangOf
		w.Settle = 3 * time.Second
		if err := w.Start(t.Context()); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			for _, v := range w.Violations(nil) {
				t.Errorf("watcher: %s", v)
			}
		})
	}
}

// placementOf returns, per replica, the racks and blocks its running
// pods are on, and how many run.
type replicaPlacement struct {
	running int
	racks   map[string]bool
	blocks  map[string]bool
}

func placementOf(t *testing.T, ns string) map[string]*replicaPlacement {
	t.Helper()
	pods, err := cp.Client.CoreV1().Pods(ns).List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	nodes, err := cp.Client.CoreV1().Nodes().List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	labels := map[string]map[string]string{}
	for i := range nodes.Items {
		labels[nodes.Items[i].Name] = nodes.Items[i].Labels
	}
	out := map[string]*replicaPlacement{}
	for i := range pods.Items {
		p := &pods.Items[i]
		r, ok := p.Labels[replicaLabel]
		if !ok {
			continue
		}
		rp := out[r]
		if rp == nil {
			rp = &replicaPlacement{racks: map[string]bool{}, blocks: map[string]bool{}}
			out[r] = rp
		}
		if p.Spec.NodeName == "" || p.DeletionTimestamp != nil {
			continue
		}
		rp.running++
		rp.racks[labels[p.Spec.NodeName][topologyaware.RackLabel]] = true
		rp.blocks[labels[p.Spec.NodeName][topologyaware.BlockLabel]] = true
	}
	return out
}

// describePlacement renders placementOf for messages.
func describePlacement(pl map[string]*replicaPlacement) string {
	var out []string
	for r, p := range pl {
		out = append(out, fmt.Sprintf("replica %s: %d running in racks %v", r, p.running, keys(p.racks)))
	}
	sort.Strings(out)
	return strings.Join(out, "; ")
}

func keys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// waitPlacement waits until the replicas run as want says (pods running
// per replica, by replica index), and checks the topology: each running
// replica within one rack of its own, all within one block.
func waitPlacement(t *testing.T, ns string, want map[string]int) {
	t.Helper()
	var last map[string]*replicaPlacement
	err := wait.PollUntilContextTimeout(t.Context(), 200*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		last = placementOf(t, ns)
		for r, n := range want {
			if p := last[r]; p == nil || p.running != n {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		t.Fatalf("replicas never ran as %v: %s", want, describePlacement(last))
	}
	racks, blocks := map[string]string{}, map[string]bool{}
	for r, p := range last {
		if p.running == 0 {
			continue
		}
		if len(p.racks) != 1 {
			t.Errorf("replica %s runs in racks %v, want one", r, keys(p.racks))
		}
		for rack := range p.racks {
			if other, ok := racks[rack]; ok {
				t.Errorf("replicas %s and %s share rack %s", r, other, rack)
			}
			racks[rack] = r
		}
		for b := range p.blocks {
			blocks[b] = true
		}
	}
	if len(blocks) > 1 {
		t.Errorf("the replicas run in blocks %v, want one: %s", keys(blocks), describePlacement(last))
	}
}

// holdPlacement checks that the replicas keep running as want says for
// a few seconds: nothing else of them starts.
func holdPlacement(t *testing.T, ns string, want map[string]int) {
	t.Helper()
	deadline := time.Now().Add(3 * time.Second)
	for time.Now().Before(deadline) {
		pl := placementOf(t, ns)
		for r, n := range want {
			if p := pl[r]; p == nil || p.running != n {
				t.Fatalf("replica %s: want %d running, got %s", r, n, describePlacement(pl))
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// waitReplicaSays waits until every pending pod of replica r says each of
// parts.
func waitReplicaSays(t *testing.T, ns string, r int, parts ...string) {
	t.Helper()
	var last []string
	err := wait.PollUntilContextTimeout(t.Context(), 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		pods, err := cp.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: fmt.Sprintf("%s=%d", replicaLabel, r)})
		if err != nil || len(pods.Items) == 0 {
			return false, nil
		}
		last = last[:0]
		ok := true
		for i := range pods.Items {
			msg := message(&pods.Items[i])
			last = append(last, pods.Items[i].Name+": "+msg)
			for _, p := range parts {
				if !strings.Contains(msg, p) {
					ok = false
				}
			}
		}
		return ok, nil
	})
	if err != nil {
		t.Fatalf("the pods of replica %d never all said %q; they say:\n%s", r, parts, strings.Join(last, "\n"))
	}
}

// A serving set in the project's own annotations: three replicas of a
// leader and 3 workers, each replica a sub-gang of quorum 4 within one
// rack, the set within one block, and at least 2 replicas to start. The
// cluster has room in a block for all but one worker: two replicas run,
// each in a rack of its own; the third places none of its pods (never 3
// of 4) and its pods say why. When a node joins its rack it starts too.
// A high-priority pod that needs room in the set's racks then takes a
// whole replica, never some pods of one, and leaves the set at its
// quorum.
func TestMultiLevelGangOwnAnnotations(t *testing.T) {
	ns := setup(t, 0, "")
	multiLevelCluster(t, ns)
	watchLevels(t, ns, 2*replicaSize)
	startScheduler(t)
	ann := map[string]string{
		framework.GroupNameAnnotation:                "serve",
		framework.MinAvailableAnnotation:             fmt.Sprint(replicaSize),
		framework.MinSubGroupsAnnotation:             "2",
		framework.SubGroupMinAvailableAnnotation:     fmt.Sprint(replicaSize),
		framework.TopologyRequiredAnnotation:         topologyaware.BlockLabel,
		framework.SubGroupTopologyRequiredAnnotation: topologyaware.RackLabel,
	}
	for r := range replicas {
		a := map[string]string{framework.SubGroupAnnotation: fmt.Sprint(r)}
		for k, v := range ann {
			a[k] = v
		}
		createStatefulSet(t, replicaSet(ns, "serve", r, nil, a))
	}
	// Which replica waits depends on the order they are placed in:
	// replicas 0 and 1 take the two racks of 4 CPUs.
	waitPlacement(t, ns, map[string]int{"0": replicaSize, "1": replicaSize, "2": 0})
	waitReplicaSays(t, ns, 2, `sub-group "2" of gang `+ns+`/serve must run within one `+topologyaware.RackLabel+` domain`)
	holdPlacement(t, ns, map[string]int{"2": 0})

	addRackNodes(t, ns+"-late", "b1", "r3", "1")
	waitPlacement(t, ns, map[string]int{"0": replicaSize, "1": replicaSize, "2": replicaSize})

	// Preemption: a pod of high priority that needs 2 CPUs of rack r1 or
	// r2 evicts a whole replica; the set keeps two.
	createPriorityClass(t, ns, ns+"-high", 1000)
	pre := st.MakePod().Namespace(ns).Name("urgent").Scheduler("batch-scheduler").Req(map[v1.ResourceName]string{"cpu": "2"}).
		NodeAffinityIn(topologyaware.RackLabel, "r1", "r2").Obj()
	pre.ResourceVersion, pre.UID = "", ""
	pre.Spec.PriorityClassName = ns + "-high"
	pre.Spec.Priority = nil
	if _, err := cp.Client.CoreV1().Pods(ns).Create(t.Context(), pre, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	err := wait.PollUntilContextTimeout(t.Context(), 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		p, err := cp.Client.CoreV1().Pods(ns).Get(ctx, "urgent", metav1.GetOptions{})
		return err == nil && p.Spec.NodeName != "", nil
	})
	if err != nil {
		t.Fatalf("the high-priority pod never ran: %s", describePlacement(placementOf(t, ns)))
	}
	// The evicted replica's pods come back (its StatefulSet recreates
	// them) and wait: its rack has 2 CPUs left.
	time.Sleep(3 * time.Second)
	pl := placementOf(t, ns)
	full, empty := 0, 0
	for _, p := range pl {
		switch p.running {
		case replicaSize:
			full++
		case 0:
			empty++
		}
	}
	if full != 2 || empty != 1 {
		t.Errorf("after the preemption want two whole replicas running and one none, got %s", describePlacement(pl))
	}
}

// createStatefulSet creates sts.
func createStatefulSet(t *testing.T, sts *appsv1.StatefulSet) {
	t.Helper()
	if _, err := cp.Client.AppsV1().StatefulSets(sts.Namespace).Create(t.Context(), sts, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating StatefulSet %s/%s: %v", sts.Namespace, sts.Name, err)
	}
}

// createPriorityClass creates a PriorityClass of value, deleted when the
// test ends, and waits until pods of ns may name it: the API server's
// Priority admission reads classes from an informer, and a pod created
// right after its class was refused as naming none (a flake).
func createPriorityClass(t *testing.T, ns, name string, value int32) {
	t.Helper()
	pc := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Value: value}
	if _, err := cp.Client.SchedulingV1().PriorityClasses().Create(t.Context(), pc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cp.Client.SchedulingV1().PriorityClasses().Delete(context.Background(), name, metav1.DeleteOptions{})
	})
	probe := st.MakePod().Namespace(ns).Name("priority-probe").Obj()
	probe.ResourceVersion, probe.UID = "", ""
	probe.Spec.PriorityClassName, probe.Spec.Priority = name, nil
	var last error
	err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		_, last = cp.Client.CoreV1().Pods(ns).Create(ctx, probe, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return last == nil, nil
	})
	if err != nil {
		t.Fatalf("pods of %s may not name PriorityClass %s 30 s after it was created: %v", ns, name, last)
	}
}

// The same set as a LeaderWorkerSet: the gang is inferred from the
// LeaderWorkerSet (its groups are the sub-gangs, of its size, each within
// one rack by its exclusive-topology annotation), and the pods ask for
// all three replicas to start together within one block. With room in a
// block for all but one worker nothing starts, and the pods say what the
// three replicas need; once a node joins, all three run.
func TestMultiLevelGangLeaderWorkerSet(t *testing.T) {
	dyn, err := dynamic.NewForConfig(cp.Config)
	if err != nil {
		t.Fatal(err)
	}
	crd := filepath.Join("..", "..", "config", "crds", "third-party", "leaderworkerset.x-k8s.io_leaderworkersets.yaml")
	if err := controlplane.InstallCRDFile(t.Context(), dyn, crd); err != nil {
		t.Fatal(err)
	}
	ns := setup(t, 0, "")
	multiLevelCluster(t, ns)
	watchLevels(t, ns, replicas*replicaSize)
	lws := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "leaderworkerset.x-k8s.io/v1", "kind": "LeaderWorkerSet",
		"metadata": map[string]any{"name": "serve", "namespace": ns,
			"annotations": map[string]any{"leaderworkerset.sigs.k8s.io/exclusive-topology": topologyaware.RackLabel}},
		"spec": map[string]any{"replicas": int64(replicas), "leaderWorkerTemplate": map[string]any{"size": int64(replicaSize)}},
	}}
	if _, err := dyn.Resource(lwsGVR).Namespace(ns).Create(t.Context(), lws, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating LeaderWorkerSet: %v", err)
	}
	startScheduler(t)
	ann := map[string]string{
		framework.MinSubGroupsAnnotation:     fmt.Sprint(replicas),
		framework.TopologyRequiredAnnotation: topologyaware.BlockLabel,
	}
	for r := range replicas {
		createStatefulSet(t, replicaSet(ns, "serve", r, map[string]string{framework.LeaderWorkerSetNameLabel: "serve"}, ann))
	}
	// No block holds the 12 pods the three replicas need.
	waitReplicaSays(t, ns, 0, "must run within one "+topologyaware.BlockLabel+" domain", "its quorum needs cpu 12")
	holdPlacement(t, ns, map[string]int{"0": 0, "1": 0, "2": 0})

	addRackNodes(t, ns+"-late", "b1", "r3", "1")
	waitPlacement(t, ns, map[string]int{"0": replicaSize, "1": replicaSize, "2": replicaSize})
}
