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

package twolevel

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/util/wait"

	st "github.com/batch-scheduler/batch-scheduler/pkg/testing"
	"github.com/batch-scheduler/batch-scheduler/test/controlplane"
)

type res = map[v1.ResourceName]string

// poolLabel marks the nodes of one test; its schedulers run with
// --node-selector on it.
const poolLabel = "twolevel-pool"

// nodeLabel carries each node's name, for pods that must go to one node.
const nodeLabel = "twolevel-node"

// deleteNow deletes at once, as a kubelet would after the containers
// stopped (no kubelet runs here).
var deleteNow = metav1.DeleteOptions{GracePeriodSeconds: new(int64)}

// poolName is the pool of the test: its name, lowercased.
func poolName(t *testing.T) string {
	name := strings.ToLower(strings.NewReplacer("/", "-", "_", "-").Replace(t.Name()))
	if len(name) > 50 {
		name = name[:50]
	}
	return name
}

// createNodes creates Ready nodes prefix-0..n-1 in the test's pool with
// cpu cores, 32Gi of memory and 110 pods each; they are deleted when the
// test ends.
func createNodes(t *testing.T, prefix string, n int, cpu string) []string {
	t.Helper()
	return createNodesWith(t, prefix, n, cpu, nil)
}

// createNodesWith is createNodes with more labels on the nodes.
func createNodesWith(t *testing.T, prefix string, n int, cpu string, labels map[string]string) []string {
	t.Helper()
	var names []string
	for i := range n {
		name := fmt.Sprintf("%s-%d", prefix, i)
		w := st.MakeNode().Name(name).Capacity(res{"cpu": cpu, "memory": "32Gi", "pods": "110"}).Label(poolLabel, poolName(t)).Label(nodeLabel, name)
		for k, v := range labels {
			w = w.Label(k, v)
		}
		node := w.Obj()
		if _, err := controlplane.CreateNode(t.Context(), cp.Client, node); err != nil {
			t.Fatal(err)
		}
		names = append(names, name)
		t.Cleanup(func() { _ = cp.Client.CoreV1().Nodes().Delete(context.Background(), name, deleteNow) })
	}
	return names
}

// createNamespace creates a namespace for the test; its pods are deleted
// when the test ends.
func createNamespace(t *testing.T) string {
	t.Helper()
	name := "tl-" + poolName(t) + "-" + utilrand.String(5)
	ns := &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if _, err := cp.Client.CoreV1().Namespaces().Create(t.Context(), ns, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating namespace %s: %v", name, err)
	}
	t.Cleanup(func() {
		ctx := context.Background()
		_ = cp.Client.CoreV1().Pods(name).DeleteCollection(ctx, deleteNow, metav1.ListOptions{})
		_ = cp.Client.CoreV1().Namespaces().Delete(ctx, name, metav1.DeleteOptions{})
	})
	return name
}

// pod is a pending pod of scheduler requesting cpu and 100Mi of memory.
func pod(ns, name, scheduler, cpu string) *st.PodWrapper {
	return st.MakePod().Namespace(ns).Name(name).Scheduler(scheduler).Req(res{"cpu": cpu, "memory": "100Mi"})
}

// mustCreate creates the pods.
func mustCreate(t *testing.T, pods ...*st.PodWrapper) {
	t.Helper()
	for _, p := range pods {
		if _, err := controlplane.CreatePod(t.Context(), cp.Client, p.Obj()); err != nil {
			t.Fatal(err)
		}
	}
}

// listPods lists the pods of ns.
func listPods(t *testing.T, ns string) []v1.Pod {
	t.Helper()
	l, err := cp.Client.CoreV1().Pods(ns).List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatalf("listing the pods of %s: %v", ns, err)
	}
	return l.Items
}

// podCPU is the cpu (milli) a pod requests: its containers' requests (the
// pods here have no init containers or overhead).
func podCPU(p *v1.Pod) int64 {
	var m int64
	for _, c := range p.Spec.Containers {
		m += c.Resources.Requests.Cpu().MilliValue()
	}
	return m
}

// boundCPU sums the cpu (milli) of the bound pods per node, for the pods
// of scheduler (every scheduler when empty).
func boundCPU(pods []v1.Pod, scheduler string) map[string]int64 {
	out := map[string]int64{}
	for i := range pods {
		p := &pods[i]
		if p.Spec.NodeName == "" || (scheduler != "" && p.Spec.SchedulerName != scheduler) {
			continue
		}
		out[p.Spec.NodeName] += podCPU(p)
	}
	return out
}

// placements describes where each pod is, sorted, for failure messages.
func placements(pods []v1.Pod) string {
	var lines []string
	for _, p := range pods {
		where := p.Spec.NodeName
		if where == "" {
			where = "pending"
		}
		lines = append(lines, fmt.Sprintf("%s(%dm)=%s", p.Name, podCPU(&p), where))
	}
	sort.Strings(lines)
	return strings.Join(lines, " ")
}

// waitPods polls the pods of ns until cond holds.
func waitPods(t *testing.T, ns, what string, timeout time.Duration, cond func([]v1.Pod) bool) []v1.Pod {
	t.Helper()
	var last []v1.Pod
	err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		l, err := cp.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil
		}
		last = l.Items
		return cond(last), nil
	})
	if err != nil {
		t.Fatalf("waiting for %s: %v; pods: %s", what, err, placements(last))
	}
	return last
}

// countBound counts the bound pods.
func countBound(pods []v1.Pod) int {
	n := 0
	for _, p := range pods {
		if p.Spec.NodeName != "" {
			n++
		}
	}
	return n
}

// unschedulableMessage is the message of the pod's PodScheduled=False
// condition, "" if it has none.
func unschedulableMessage(p *v1.Pod) string {
	for _, c := range p.Status.Conditions {
		if c.Type == v1.PodScheduled && c.Status == v1.ConditionFalse {
			return c.Message
		}
	}
	return ""
}

// waitUnschedulable waits until the pod is pending with a PodScheduled
// condition whose message contains one of want, and returns the message.
func waitUnschedulable(t *testing.T, ns, name string, want ...string) string {
	t.Helper()
	var msg, node string
	err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		p, err := cp.Client.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		node = p.Spec.NodeName
		if node != "" {
			return false, fmt.Errorf("pod %s/%s was bound to %s", ns, name, node)
		}
		msg = unschedulableMessage(p)
		for _, w := range want {
			if strings.Contains(msg, w) {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("pod %s/%s: waiting for an unschedulable condition mentioning one of %q: %v; last message %q", ns, name, want, err, msg)
	}
	return msg
}

// waitEvent waits for an event of reason about pod whose note contains
// one of want, and returns the note.
func waitEvent(t *testing.T, ns, pod, reason string, want ...string) string {
	t.Helper()
	var notes []string
	var found string
	err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		list, err := cp.Client.EventsV1().Events(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil
		}
		notes = nil
		for _, e := range list.Items {
			if e.Regarding.Name != pod || e.Reason != reason {
				continue
			}
			notes = append(notes, e.Note)
			for _, w := range want {
				if strings.Contains(e.Note, w) {
					found = e.Note
					return true, nil
				}
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("no %s event for %s/%s mentioning one of %q; events: %q", reason, ns, pod, want, notes)
	}
	return found
}
