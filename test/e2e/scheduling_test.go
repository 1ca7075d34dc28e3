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
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	st "github.com/batch-scheduler/batch-scheduler/pkg/testing"
)

// poolLabel marks the nodes of one test; its scheduler is started with
// --node-selector on it, so tests never see each other's nodes.
const poolLabel = "e2e-pool"

func pool(t *testing.T) string {
	return strings.ToLower(strings.NewReplacer("/", "-", "_", "-").Replace(t.Name()))
}

// poolNode is a node of the test's pool with the given capacity.
func poolNode(t *testing.T, name string, capacity res) *st.NodeWrapper {
	return st.MakeNode().Name(name).Capacity(capacity).Label(poolLabel, pool(t))
}

// startPoolScheduler starts a scheduler that only uses this test's nodes.
func startPoolScheduler(t *testing.T, args ...string) *scheduler {
	return startScheduler(t, cp.KubeconfigPath, append([]string{"--node-selector", poolLabel + "=" + pool(t)}, args...)...)
}

// podNodes returns where each pod of ns is bound ("" for pending).
func podNodes(t *testing.T, ns string) map[string]string {
	t.Helper()
	list, err := cp.Client.CoreV1().Pods(ns).List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, p := range list.Items {
		out[p.Name] = p.Spec.NodeName
	}
	return out
}

// waitForPods polls until cond holds for the placement of ns's pods.
func waitForPods(t *testing.T, ns, what string, cond func(nodes map[string]string) bool) map[string]string {
	t.Helper()
	var last map[string]string
	err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, 60*time.Second, true, func(context.Context) (bool, error) {
		last = podNodes(t, ns)
		return cond(last), nil
	})
	if err != nil {
		t.Fatalf("waiting for %s: %v; placements: %v", what, err, last)
	}
	return last
}

// waitUnschedulable polls until the pod has PodScheduled=False/Unschedulable
// with a message containing every want, and returns the message.
func waitUnschedulable(t *testing.T, ns, name string, want ...string) string {
	t.Helper()
	var msg string
	err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, 60*time.Second, true, func(context.Context) (bool, error) {
		p, err := cp.Client.CoreV1().Pods(ns).Get(t.Context(), name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, c := range p.Status.Conditions {
			if c.Type != v1.PodScheduled || c.Status != v1.ConditionFalse || c.Reason != v1.PodReasonUnschedulable {
				continue
			}
			msg = c.Message
			for _, w := range want {
				if !strings.Contains(msg, w) {
					return false, nil
				}
			}
			return true, nil
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("pod %s/%s: waiting for an Unschedulable condition containing %q: last message %q (%v)", ns, name, want, msg, err)
	}
	return msg
}

// waitEvent polls until pod has an event with reason whose note contains
// want.
func waitEvent(t *testing.T, ns, pod, reason, want string) {
	t.Helper()
	var notes []string
	err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		list, err := cp.Client.EventsV1().Events(ns).List(t.Context(), metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		notes = nil
		for _, e := range list.Items {
			if e.Regarding.Name == pod && e.Reason == reason {
				notes = append(notes, e.Note)
				if strings.Contains(e.Note, want) {
					return true, nil
				}
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("no %s event for %s/%s containing %q; got %q", reason, ns, pod, want, notes)
	}
}

// Single pods land on a node they fit on and nowhere else; a pod that fits
// nowhere says why, in its condition and in an event.
func TestSinglePodsLandWhereTheyFit(t *testing.T) {
	ns := createNamespace(t)
	mustNode(t, poolNode(t, "fit-small", res{"cpu": "1", "memory": "2Gi", "pods": "10"}).Obj())
	mustNode(t, poolNode(t, "fit-large", res{"cpu": "4", "memory": "8Gi", "pods": "10"}).Obj())
	startPoolScheduler(t)
	mustPod(t, st.MakePod().Namespace(ns).Name("big").Req(res{"cpu": "3"}).Obj())
	mustPod(t, st.MakePod().Namespace(ns).Name("huge").Req(res{"cpu": "8"}).Obj())
	mustPod(t, st.MakePod().Namespace(ns).Name("tiny").Req(res{"cpu": "500m"}).Obj())

	got := waitForPods(t, ns, "big and tiny bound", func(n map[string]string) bool { return n["big"] != "" && n["tiny"] != "" })
	if got["big"] != "fit-large" {
		t.Errorf("big (3 cpu) landed on %q, want fit-large", got["big"])
	}
	if got["huge"] != "" {
		t.Errorf("huge (8 cpu) was bound to %q; it fits nowhere", got["huge"])
	}
	waitUnschedulable(t, ns, "huge", "0/2 nodes are available", "2 Insufficient cpu")
	waitEvent(t, ns, "huge", "FailedScheduling", "Insufficient cpu")
	waitEvent(t, ns, "big", "Scheduled", "Successfully assigned "+ns+"/big to fit-large")
}

// Node selectors, required node affinity, taints and unschedulable nodes
// are respected.
func TestSelectorAffinityAndTaints(t *testing.T) {
	ns := createNamespace(t)
	big := res{"cpu": "8", "memory": "16Gi", "pods": "20"}
	mustNode(t, poolNode(t, "sat-a", big).Label("zone", "a").Obj())
	mustNode(t, poolNode(t, "sat-b", big).Label("zone", "b").Taint("dedicated", "gpu", v1.TaintEffectNoSchedule).Obj())
	mustNode(t, poolNode(t, "sat-c", big).Label("zone", "c").Unschedulable(true).Obj())
	startPoolScheduler(t)

	mustPod(t, st.MakePod().Namespace(ns).Name("to-b").NodeSelector(map[string]string{"zone": "b"}).Toleration("dedicated", "gpu", v1.TaintEffectNoSchedule).Obj())
	mustPod(t, st.MakePod().Namespace(ns).Name("b-no-toleration").NodeSelector(map[string]string{"zone": "b"}).Obj())
	mustPod(t, st.MakePod().Namespace(ns).Name("affinity-a").NodeAffinityIn("zone", "a", "c").Obj())
	mustPod(t, st.MakePod().Namespace(ns).Name("only-c").NodeSelector(map[string]string{"zone": "c"}).Obj())
	for i := 0; i < 4; i++ {
		mustPod(t, st.MakePod().Namespace(ns).Name(fmt.Sprintf("any-%d", i)).Obj())
	}
	got := waitForPods(t, ns, "placeable pods bound", func(n map[string]string) bool {
		return n["to-b"] != "" && n["affinity-a"] != "" && n["any-0"] != "" && n["any-1"] != "" && n["any-2"] != "" && n["any-3"] != ""
	})
	if got["to-b"] != "sat-b" || got["affinity-a"] != "sat-a" {
		t.Errorf("to-b on %q (want sat-b), affinity-a on %q (want sat-a)", got["to-b"], got["affinity-a"])
	}
	for i := 0; i < 4; i++ {
		if n := got[fmt.Sprintf("any-%d", i)]; n != "sat-a" {
			t.Errorf("any-%d landed on %q; only sat-a is free of taints and schedulable", i, n)
		}
	}
	waitUnschedulable(t, ns, "b-no-toleration", "0/3 nodes are available", "untolerated taint(s)", "didn't match Pod's node affinity/selector")
	waitUnschedulable(t, ns, "only-c", "node(s) were unschedulable")
	if n := podNodes(t, ns); n["b-no-toleration"] != "" || n["only-c"] != "" {
		t.Errorf("unplaceable pods were bound: %v", n)
	}
}

// Of two jobs waiting for the same room, the higher priority one gets it.
func TestPriorityOrder(t *testing.T) {
	ns := createNamespace(t)
	for _, pc := range []struct {
		name  string
		value int32
	}{{"e2e-low", 10}, {"e2e-high", 1000}} {
		obj := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: pc.name}, Value: pc.value}
		if _, err := cp.Client.SchedulingV1().PriorityClasses().Create(t.Context(), obj, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = cp.Client.SchedulingV1().PriorityClasses().Delete(context.Background(), pc.name, metav1.DeleteOptions{})
		})
	}
	mustNode(t, poolNode(t, "prio-one", res{"cpu": "1", "memory": "2Gi", "pods": "10"}).Obj())
	// Both wait before the scheduler starts; low was created first.
	low := st.MakePod().Namespace(ns).Name("low").Req(res{"cpu": "1"}).Obj()
	low.Spec.PriorityClassName = "e2e-low"
	mustPod(t, low)
	high := st.MakePod().Namespace(ns).Name("high").Req(res{"cpu": "1"}).Obj()
	high.Spec.PriorityClassName = "e2e-high"
	mustPod(t, high)

	startPoolScheduler(t)
	got := waitForPods(t, ns, "high bound", func(n map[string]string) bool { return n["high"] != "" })
	if got["low"] != "" {
		t.Errorf("low was bound to %q before high", got["low"])
	}
	waitUnschedulable(t, ns, "low", "Insufficient cpu")
}

// A gang of 4 that only 3 nodes can hold binds nothing and says why; a
// fourth node lets all 4 bind.
func TestGangAllOrNothing(t *testing.T) {
	ns := createNamespace(t)
	one := res{"cpu": "1", "memory": "2Gi", "pods": "10"}
	for i := 0; i < 3; i++ {
		mustNode(t, poolNode(t, fmt.Sprintf("gang-%d", i), one).Obj())
	}
	startPoolScheduler(t)
	for i := 0; i < 4; i++ {
		mustPod(t, st.MakePod().Namespace(ns).Name(fmt.Sprintf("w-%d", i)).Group("train").MinAvailable("4").Req(res{"cpu": "1"}).Obj())
	}
	waitUnschedulable(t, ns, "w-0", "gang "+ns+"/train can never start: its quorum (min-available 4) needs cpu 4 but this scheduler could use cpu 3")
	// The verdict is final for this state: nothing was bound on the way.
	for name, node := range podNodes(t, ns) {
		if node != "" {
			t.Fatalf("%s was bound to %s although the gang cannot start", name, node)
		}
	}
	mustNode(t, poolNode(t, "gang-3", one).Obj())
	got := waitForPods(t, ns, "the whole gang bound", func(n map[string]string) bool {
		for i := 0; i < 4; i++ {
			if n[fmt.Sprintf("w-%d", i)] == "" {
				return false
			}
		}
		return true
	})
	seen := map[string]bool{}
	for _, node := range got {
		if seen[node] {
			t.Errorf("two gang members share node %s, which holds one: %v", node, got)
		}
		seen[node] = true
	}
}

// A gang whose tasks arrive over time waits, holding nothing, until enough
// exist.
func TestGangWaitsForItsTasks(t *testing.T) {
	ns := createNamespace(t)
	mustNode(t, poolNode(t, "arrive-a", res{"cpu": "4", "memory": "8Gi", "pods": "10"}).Obj())
	startPoolScheduler(t)
	mustPod(t, st.MakePod().Namespace(ns).Name("t-0").Group("late").MinAvailable("3").Req(res{"cpu": "1"}).Obj())
	mustPod(t, st.MakePod().Namespace(ns).Name("t-1").Group("late").MinAvailable("3").Req(res{"cpu": "1"}).Obj())
	waitUnschedulable(t, ns, "t-0", "waiting for tasks: 2 of min-available 3 exist")
	// Holding nothing: a single pod can use the whole node meanwhile.
	mustPod(t, st.MakePod().Namespace(ns).Name("solo").Req(res{"cpu": "1500m"}).Obj())
	waitForPods(t, ns, "solo bound", func(n map[string]string) bool { return n["solo"] == "arrive-a" })
	mustPod(t, st.MakePod().Namespace(ns).Name("t-2").Group("late").MinAvailable("3").Req(res{"cpu": "500m"}).Obj())
	waitForPods(t, ns, "the gang bound", func(n map[string]string) bool { return n["t-0"] != "" && n["t-1"] != "" && n["t-2"] != "" })
}
