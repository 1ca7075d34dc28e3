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

package e2e

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"

	st "github.com/batch-scheduler/batch-scheduler/pkg/testing"
	"github.com/batch-scheduler/batch-scheduler/test/controlplane"
)

// Preemption on the real API server. No kubelet runs here, so a victim
// evicted with the default grace period would stay Terminating for ever:
// every victim sets terminationGracePeriodSeconds 0, so that the Eviction
// API deletes it at once, as a kubelet would once its containers stopped.
// Victims are created bound (spec.nodeName) and Running: the Eviction API
// ignores PodDisruptionBudgets for Pending pods.

// priorityClasses creates the classes low (10), mid (50), high (1000),
// top (2000) and polite (1000, preemptionPolicy Never), named after the
// test, and returns their names by role.
func priorityClasses(t *testing.T) map[string]string {
	t.Helper()
	never := v1.PreemptNever
	names := map[string]string{}
	for _, pc := range []struct {
		role   string
		value  int32
		policy *v1.PreemptionPolicy
	}{{"low", 10, nil}, {"mid", 50, nil}, {"high", 1000, nil}, {"top", 2000, nil}, {"polite", 1000, &never}} {
		name := pool(t) + "-" + pc.role
		obj := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Value: pc.value, PreemptionPolicy: pc.policy}
		if _, err := cp.Client.SchedulingV1().PriorityClasses().Create(t.Context(), obj, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = cp.Client.SchedulingV1().PriorityClasses().Delete(context.Background(), name, metav1.DeleteOptions{})
		})
		names[pc.role] = name
	}
	return names
}

// victim returns a Running pod bound to node, of priority class class,
// that goes at once when evicted.
func victim(ns, name, node, class, cpu string) *st.PodWrapper {
	p := st.MakePod().Namespace(ns).Name(name).Node(node).Phase(v1.PodRunning).Req(res{"cpu": cpu})
	p.Spec.PriorityClassName = class
	p.Spec.TerminationGracePeriodSeconds = new(int64)
	return p
}

// preemptor returns a pending pod of priority class class.
func preemptor(ns, name, class, cpu string) *st.PodWrapper {
	p := st.MakePod().Namespace(ns).Name(name).Req(res{"cpu": cpu})
	p.Spec.PriorityClassName = class
	return p
}

// preemptionNodes creates n nodes of the test's pool with cpu each, named
// <prefix>-1 ... <prefix>-n.
func preemptionNodes(t *testing.T, prefix string, n int, cpu string) []string {
	t.Helper()
	var names []string
	for i := 1; i <= n; i++ {
		name := fmt.Sprintf("%s-%d", prefix, i)
		mustNode(t, poolNode(t, name, res{"cpu": cpu, "memory": "8Gi", "pods": "20"}).Obj())
		names = append(names, name)
	}
	return names
}

// checkQuorums fails the test for each partial gang the watcher saw.
func checkQuorums(t *testing.T, w *quorumWatcher) map[string]int {
	t.Helper()
	violations, maxBound := w.result()
	for _, v := range violations {
		t.Error(v)
	}
	return maxBound
}

// present returns the names of ns's pods that exist and are not
// terminating, sorted.
func present(t *testing.T, ns string) []string {
	t.Helper()
	list, err := cp.Client.CoreV1().Pods(ns).List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, p := range list.Items {
		if p.DeletionTimestamp == nil {
			out = append(out, p.Name)
		}
	}
	sort.Strings(out)
	return out
}

// A high-priority gang of 4 preempts exactly the low-priority pods it
// needs and lands, whole, where preemption made room; no gang ever runs
// below its quorum.
func TestPreemptionGangOfFour(t *testing.T) {
	ns := createNamespace(t)
	pc := priorityClasses(t)
	nodes := preemptionNodes(t, "pre4", 4, "2")
	w := watchQuorums(t, ns, 5*time.Second)
	// Room for one pod on nodes 3 and 4; node 1 holds the two cheapest
	// victims, node 2 a victim of higher priority; node 4's pod may not
	// be preempted at all.
	mustPod(t, victim(ns, "low-a", nodes[0], pc["low"], "1").Obj())
	mustPod(t, victim(ns, "low-b", nodes[0], pc["low"], "1").Obj())
	mustPod(t, victim(ns, "mid", nodes[1], pc["mid"], "2").Obj())
	mustPod(t, victim(ns, "fill-3", nodes[2], pc["top"], "1").Obj())
	mustPod(t, victim(ns, "fill-4", nodes[3], pc["top"], "1").Obj())
	s := startPoolScheduler(t)
	for i := range 4 {
		mustPod(t, preemptor(ns, fmt.Sprintf("high-%d", i), pc["high"], "1").Group("high").MinAvailable("4").Obj())
	}
	got := waitForPods(t, ns, "the gang bound", func(n map[string]string) bool {
		for i := range 4 {
			if n[fmt.Sprintf("high-%d", i)] == "" {
				return false
			}
		}
		return true
	})
	perNode := map[string]int{}
	for i := range 4 {
		perNode[got[fmt.Sprintf("high-%d", i)]]++
	}
	if perNode[nodes[0]] != 2 || perNode[nodes[2]] != 1 || perNode[nodes[3]] != 1 {
		t.Errorf("gang placed %v, want two pods on %s and one each on %s and %s", got, nodes[0], nodes[2], nodes[3])
	}
	want := []string{"fill-3", "fill-4", "high-0", "high-1", "high-2", "high-3", "mid"}
	if p := present(t, ns); !slices.Equal(p, want) {
		t.Errorf("pods left %v, want %v (exactly low-a and low-b preempted)", p, want)
	}
	waitEvent(t, ns, "low-a", "Preempted", "Preempted by pod ")
	if v := metricValue(t, s, `batch_scheduler_preemption_victims_total{plugin="DefaultPreemption"}`); v != 2 {
		t.Errorf("preemption_victims_total = %v, want 2", v)
	}
	if maxBound := checkQuorums(t, w); maxBound["high"] != 4 {
		t.Errorf("gang high had at most %d pods bound, want 4 (the watcher must see binds)", maxBound["high"])
	}
}

// A victim that belongs to a gang takes its whole gang when the rest would
// be below its quorum.
func TestPreemptionRemovesAVictimGangWhole(t *testing.T) {
	ns := createNamespace(t)
	pc := priorityClasses(t)
	nodes := preemptionNodes(t, "prewhole", 3, "1")
	w := watchQuorums(t, ns, 5*time.Second)
	for i, node := range nodes {
		mustPod(t, victim(ns, fmt.Sprintf("vg-%d", i), node, pc["low"], "1").Group("vg").MinAvailable("3").Obj())
	}
	startPoolScheduler(t)
	for i := range 2 {
		mustPod(t, preemptor(ns, fmt.Sprintf("pg-%d", i), pc["high"], "1").Group("pg").MinAvailable("2").Obj())
	}
	waitForPods(t, ns, "gang pg bound", func(n map[string]string) bool { return n["pg-0"] != "" && n["pg-1"] != "" })
	// Two victims would do, but the third alone would be below the quorum.
	// The evictions are separate calls, and pg may land in the room of the
	// first two before the third is through: wait for it.
	var left []string
	err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		left = present(t, ns)
		return slices.Equal(left, []string{"pg-0", "pg-1"}), nil
	})
	if err != nil {
		t.Errorf("pods left %v, want only the preemptor gang (vg evicted whole)", left)
	}
	maxBound := checkQuorums(t, w)
	if maxBound["pg"] != 2 || maxBound["vg"] != 3 {
		t.Errorf("most pods bound at once: %v, want pg 2 and vg 3", maxBound)
	}
}

// A gang that cannot fit even after preemption preempts nothing, and
// neither does a pod whose preemptionPolicy is Never.
func TestPreemptionThatCannotHelp(t *testing.T) {
	ns := createNamespace(t)
	pc := priorityClasses(t)
	nodes := preemptionNodes(t, "prenone", 2, "2")
	w := watchQuorums(t, ns, 5*time.Second, "big")
	for i, node := range nodes {
		mustPod(t, victim(ns, fmt.Sprintf("low-%d", i), node, pc["low"], "2").Obj())
	}
	s := startPoolScheduler(t)
	// 3.6 CPUs of the 4 the nodes have, but one pod per node: the gang
	// could start with every other pod gone (so it is not refused at
	// once), and preempting cannot make room for it.
	for i := range 3 {
		mustPod(t, preemptor(ns, fmt.Sprintf("big-%d", i), pc["high"], "1200m").Group("big").MinAvailable("3").Obj())
	}
	waitUnschedulable(t, ns, "big-0", "0 of 3 tasks could be placed, min-available 3")
	mustPod(t, preemptor(ns, "polite", pc["polite"], "1").Obj())
	waitUnschedulable(t, ns, "polite", "Insufficient cpu")
	// The attempt is counted before the pods are parked, and an eviction
	// would have been asked for with it.
	if v := metricValue(t, s, `batch_scheduler_preemption_attempts_total{result="unhelpful"}`); v < 1 {
		t.Errorf(`preemption_attempts_total{result="unhelpful"} = %v, want at least 1`, v)
	}
	for _, result := range []string{"preempted", "failed"} {
		if v := metricValue(t, s, fmt.Sprintf(`batch_scheduler_preemption_attempts_total{result=%q}`, result)); v != 0 {
			t.Errorf("preemption_attempts_total{result=%q} = %v, want 0", result, v)
		}
	}
	want := []string{"big-0", "big-1", "big-2", "low-0", "low-1", "polite"}
	if p := present(t, ns); !slices.Equal(p, want) {
		t.Errorf("pods left %v, want %v", p, want)
	}
	for _, name := range []string{"big-0", "polite"} {
		p, err := cp.Client.CoreV1().Pods(ns).Get(t.Context(), name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if p.Status.NominatedNodeName != "" {
			t.Errorf("%s nominated to %s", name, p.Status.NominatedNodeName)
		}
	}
	checkQuorums(t, w)
}

// protectDB creates a PodDisruptionBudget in ns that allows no disruption
// of the pods labelled app=db, and waits until the disruption controller
// agrees: the db pod (on a node of the simulated kubelets, so it runs and
// is Ready) is healthy, and none may go.
func protectDB(t *testing.T, ns string) {
	t.Helper()
	one := intstr.FromInt32(1)
	_, err := cp.Client.PolicyV1().PodDisruptionBudgets(ns).Create(t.Context(), &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: "db"},
		Spec:       policyv1.PodDisruptionBudgetSpec{MinAvailable: &one, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var last policyv1.PodDisruptionBudgetStatus
	err = wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		pdb, err := cp.Client.PolicyV1().PodDisruptionBudgets(ns).Get(ctx, "db", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		last = pdb.Status
		return pdb.Status.ObservedGeneration == pdb.Generation && pdb.Status.CurrentHealthy == 1 && pdb.Status.DisruptionsAllowed == 0, nil
	})
	if err != nil {
		t.Fatalf("the disruption controller never said that budget db has 1 healthy pod and allows no disruption: last status %+v", last)
	}
}

// kwokPreemptionNodes is preemptionNodes on nodes of the simulated
// kubelets: the pods bound there run and become Ready.
func kwokPreemptionNodes(t *testing.T, prefix string, n int, cpu string) []string {
	t.Helper()
	var names []string
	for i := 1; i <= n; i++ {
		name := fmt.Sprintf("%s-%d", prefix, i)
		if _, err := controlplane.CreateKwokNode(t.Context(), cp.Client, poolNode(t, name, res{"cpu": cpu, "memory": "8Gi", "pods": "20"}).Obj()); err != nil {
			t.Fatal(err)
		}
		deleteNodesAfter(t, name)
		names = append(names, name)
	}
	return names
}

// kwokVictim is victim for a kwok node: the simulated kubelet sets its
// phase.
func kwokVictim(ns, name, node, class, cpu string) *st.PodWrapper {
	return victim(ns, name, node, class, cpu).Phase("")
}

// Pods a PodDisruptionBudget protects are avoided when another choice
// exists, even when they would be the cheaper victims.
func TestPreemptionAvoidsPDBProtectedPods(t *testing.T) {
	ns := createNamespace(t)
	pc := priorityClasses(t)
	nodes := kwokPreemptionNodes(t, "prepdb", 2, "1")
	// db is the cheaper victim by priority; web is the one without a budget.
	mustPod(t, kwokVictim(ns, "db", nodes[0], pc["low"], "1").Label("app", "db").Obj())
	mustPod(t, kwokVictim(ns, "web", nodes[1], pc["mid"], "1").Label("app", "web").Obj())
	protectDB(t, ns)
	startPoolScheduler(t)
	mustPod(t, preemptor(ns, "high", pc["high"], "1").Obj())
	got := waitForPods(t, ns, "high bound", func(n map[string]string) bool { return n["high"] != "" })
	if got["high"] != nodes[1] {
		t.Errorf("high bound to %s, want %s (web's node)", got["high"], nodes[1])
	}
	if p := present(t, ns); !slices.Equal(p, []string{"db", "high"}) {
		t.Errorf("pods left %v, want db and high", p)
	}
	waitEvent(t, ns, "high", "Preempting", ns+"/web")
}

// When the only victim is protected by a PodDisruptionBudget, the Eviction
// API refuses it (429): the preemption fails, says so, and holds no room.
func TestPreemptionRefusedByAPDB(t *testing.T) {
	ns := createNamespace(t)
	pc := priorityClasses(t)
	kwokPreemptionNodes(t, "prerefused", 1, "1")
	mustPod(t, kwokVictim(ns, "db", "prerefused-1", pc["low"], "1").Label("app", "db").Obj())
	protectDB(t, ns)
	s := startPoolScheduler(t)
	mustPod(t, preemptor(ns, "high", pc["high"], "1").Obj())
	waitEvent(t, ns, "high", "FailedPreemption", "allows no disruption")
	if v := metricValue(t, s, `batch_scheduler_preemption_attempts_total{result="failed"}`); v < 1 {
		t.Errorf(`preemption_attempts_total{result="failed"} = %v, want at least 1`, v)
	}
	if v := metricValue(t, s, `batch_scheduler_preemption_victims_total{plugin="DefaultPreemption"}`); v != 0 {
		t.Errorf("preemption_victims_total = %v, want 0", v)
	}
	if p := present(t, ns); !slices.Equal(p, []string{"db", "high"}) {
		t.Errorf("pods left %v, want db and high", p)
	}
	// The nomination written before the eviction is cleared after the
	// refusal.
	err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		p, err := cp.Client.CoreV1().Pods(ns).Get(ctx, "high", metav1.GetOptions{})
		return err == nil && p.Status.NominatedNodeName == "" && p.Spec.NodeName == "", err
	})
	if err != nil {
		t.Errorf("high keeps a nominated node, or was bound, after the refused preemption: %v", err)
	}
}
