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
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/batch-scheduler/batch-scheduler/test/controlplane"
)

// A node of a running gang Job dies: the node lifecycle controller taints
// it, its pod is evicted, the Job controller replaces the pod, and
// batch-scheduler places the replacement on the spare node, next to the
// rest of the gang that kept running. This needs a control plane of its
// own, with the node lifecycle controllers.
func TestNodeLossReplacesGangMember(t *testing.T) {
	own, err := controlplane.Start(controlplane.WithNodeLifecycle(8 * time.Second))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = own.Stop() })
	saved := cp
	cp = own
	t.Cleanup(func() { cp = saved })

	ns := setup(t, 5, "1")
	w := watch(t, ns, func(string) int { return 4 })
	startScheduler(t)
	job := gangJob(ns, "train", 4, "1", nil)
	// Evicted 1 s after its node becomes unreachable, not the default 5 m.
	job.Spec.Template.Spec.Tolerations = []v1.Toleration{{Key: v1.TaintNodeUnreachable, Operator: v1.TolerationOpExists,
		Effect: v1.TaintEffectNoExecute, TolerationSeconds: new(int64(1))}}
	createJob(t, job)
	err = wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		return w.Gangs()["train"].Running == 4, nil
	})
	if err != nil {
		t.Fatalf("Job train never ran whole: %+v", w.Gangs()["train"])
	}
	lost := podsOf(t, ns, "train")[0]
	if err := controlplane.LoseNode(t.Context(), cp.Client, lost.Spec.NodeName); err != nil {
		t.Fatal(err)
	}
	var spare string
	nodes, err := cp.Client.CoreV1().Nodes().List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	used := map[string]bool{}
	for _, p := range podsOf(t, ns, "train") {
		used[p.Spec.NodeName] = true
	}
	for _, n := range nodes.Items {
		if !used[n.Name] && n.Labels[controlplane.KwokNodeLabel] != "" {
			spare = n.Name
		}
	}
	// The replacement runs on the spare node, beside the three others.
	var last string
	err = wait.PollUntilContextTimeout(t.Context(), 200*time.Millisecond, 2*time.Minute, true, func(context.Context) (bool, error) {
		running := 0
		onSpare := false
		for _, p := range podsOf(t, ns, "train") {
			if p.Status.Phase == v1.PodRunning && p.DeletionTimestamp == nil {
				running++
				onSpare = onSpare || p.Spec.NodeName == spare
			}
		}
		last = describe(podsOf(t, ns, "train"))
		return running == 4 && onSpare, nil
	})
	if err != nil {
		t.Fatalf("after node %s was lost, the gang never ran 4 pods again with one on the spare node %s: %s", lost.Spec.NodeName, spare, last)
	}
	n, err := cp.Client.CoreV1().Nodes().Get(t.Context(), lost.Spec.NodeName, metav1.GetOptions{})
	if err != nil || !hasTaint(n, v1.TaintNodeUnreachable) {
		t.Errorf("lost node %s: want it tainted %s; got %v, %v", lost.Spec.NodeName, v1.TaintNodeUnreachable, n.Spec.Taints, err)
	}
}

func hasTaint(n *v1.Node, key string) bool {
	for _, t := range n.Spec.Taints {
		if t.Key == key {
			return true
		}
	}
	return false
}
