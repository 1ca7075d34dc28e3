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
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"

	st "github.com/batch-scheduler/batch-scheduler/pkg/testing"
)

// promptWake bounds how long a pod waiting for another pod may take to be
// bound once that pod appears: far below the unschedulable queue's
// 5-minute flush, which is all that would bring it back without the
// assigned-pod events.
const promptWake = 15 * time.Second

// affinityNodes creates two nodes of the test's pool with hostname labels
// and returns their names.
func affinityNodes(t *testing.T, prefix string) (string, string) {
	t.Helper()
	a, b := prefix+"-n1", prefix+"-n2"
	for _, name := range []string{a, b} {
		mustNode(t, poolNode(t, name, res{"cpu": "4", "memory": "8Gi", "pods": "10"}).Label(v1.LabelHostname, name).Obj())
	}
	return a, b
}

// withPodAffinity gives pod a required pod affinity to pods labelled
// app=db of its namespace, on the same node.
func withPodAffinity(pod *v1.Pod) *v1.Pod {
	pod.Spec.Affinity = &v1.Affinity{PodAffinity: &v1.PodAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: []v1.PodAffinityTerm{{
			LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}},
			TopologyKey:   v1.LabelHostname,
		}},
	}}
	return pod
}

// waitBoundPromptly waits up to promptWake from start for pod name of ns
// to be bound to node want.
func waitBoundPromptly(t *testing.T, ns, name, want string, start time.Time) {
	t.Helper()
	var got string
	err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, promptWake, true, func(context.Context) (bool, error) {
		got = podNodes(t, ns)[name]
		return got != "", nil
	})
	if err != nil {
		t.Fatalf("pod %s/%s not bound %v after its affinity target appeared (want < %v: it must not wait for the unschedulable flush): %v",
			ns, name, time.Since(start).Round(time.Millisecond), promptWake, err)
	}
	if got != want {
		t.Errorf("pod %s/%s bound to %s, want %s, the node of its affinity target", ns, name, got, want)
	}
	t.Logf("pod %s/%s bound %v after its affinity target appeared", ns, name, time.Since(start).Round(time.Millisecond))
}

// A pod whose required pod affinity has no target is unschedulable; when
// another party creates a pod with the target label already bound to a
// node, the waiting pod is retried at once (AssignedPodAdd) and lands on
// that node.
func TestPodAffinityTargetBoundByAnotherParty(t *testing.T) {
	ns := createNamespace(t)
	_, n2 := affinityNodes(t, "podadd")
	startPoolScheduler(t)

	mustPod(t, withPodAffinity(st.MakePod().Namespace(ns).Name("web").Label("app", "web").Req(res{"cpu": "1"}).Obj()))
	waitUnschedulable(t, ns, "web", "didn't match pod affinity rules")

	start := time.Now()
	mustPod(t, st.MakePod().Namespace(ns).Name("db").Label("app", "db").Scheduler(v1.DefaultSchedulerName).Node(n2).Req(res{"cpu": "1"}).Obj())
	waitBoundPromptly(t, ns, "web", n2, start)
}

// A pod whose required pod affinity has no target is unschedulable; when
// a pod already bound to a node is relabelled to match it, the waiting pod
// is retried at once (AssignedPodUpdate) and lands on that node.
func TestPodAffinityTargetRelabelled(t *testing.T) {
	ns := createNamespace(t)
	_, n2 := affinityNodes(t, "podlabel")
	startPoolScheduler(t)

	mustPod(t, st.MakePod().Namespace(ns).Name("db").Label("app", "cache").Scheduler(v1.DefaultSchedulerName).Node(n2).Req(res{"cpu": "1"}).Obj())
	mustPod(t, withPodAffinity(st.MakePod().Namespace(ns).Name("web").Label("app", "web").Req(res{"cpu": "1"}).Obj()))
	waitUnschedulable(t, ns, "web", "didn't match pod affinity rules")

	start := time.Now()
	pods := cp.Client.CoreV1().Pods(ns)
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		p, err := pods.Get(t.Context(), "db", metav1.GetOptions{})
		if err != nil {
			return err
		}
		p.Labels["app"] = "db"
		_, err = pods.Update(t.Context(), p, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatalf("relabelling pod %s/db: %v", ns, err)
	}
	waitBoundPromptly(t, ns, "web", n2, start)
}
