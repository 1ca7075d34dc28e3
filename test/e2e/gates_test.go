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

	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
	st "github.com/batch-scheduler/batch-scheduler/pkg/testing"
)

// gatedWindow is how long a gated pod is watched to stay unbound after the
// scheduler has bound everything it could.
const gatedWindow = 3 * time.Second

// gated adds scheduling gates to a pod.
func gated(w *st.PodWrapper, gates ...string) *v1.Pod {
	p := w.Obj()
	for _, g := range gates {
		p.Spec.SchedulingGates = append(p.Spec.SchedulingGates, v1.PodSchedulingGate{Name: g})
	}
	return p
}

// ungate removes all scheduling gates of a pod.
func ungate(t *testing.T, ns, name string) {
	t.Helper()
	pods := cp.Client.CoreV1().Pods(ns)
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		p, err := pods.Get(t.Context(), name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		p.Spec.SchedulingGates = nil
		_, err = pods.Update(t.Context(), p, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatalf("removing the scheduling gates of %s/%s: %v", ns, name, err)
	}
}

// assertStaysUnbound checks, for gatedWindow, that none of the pods of ns
// named gets a node.
func assertStaysUnbound(t *testing.T, ns string, names ...string) {
	t.Helper()
	err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, gatedWindow, true, func(context.Context) (bool, error) {
		nodes := podNodes(t, ns)
		for _, n := range names {
			if nodes[n] != "" {
				return true, nil
			}
		}
		return false, nil
	})
	if err == nil {
		t.Fatalf("a pod of %v was bound: %v", names, podNodes(t, ns))
	}
}

// assertSchedulingGated checks that the scheduler left alone the condition
// the API server gives a gated pod: PodScheduled=False, SchedulingGated.
func assertSchedulingGated(t *testing.T, ns, name string) {
	t.Helper()
	p, err := cp.Client.CoreV1().Pods(ns).Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range p.Status.Conditions {
		if c.Type == v1.PodScheduled && c.Reason != v1.PodReasonSchedulingGated {
			t.Errorf("gated pod %s has condition PodScheduled=%s reason %q (%s); want reason %s",
				name, c.Status, c.Reason, c.Message, v1.PodReasonSchedulingGated)
		}
	}
}

// A gated pod is never tried while an identical ungated one binds, and
// binds promptly once its gate is removed.
func TestGatedPodBindsOnceUngated(t *testing.T) {
	ns := createNamespace(t)
	mustNode(t, poolNode(t, "gate-n1", res{"cpu": "4", "memory": "8Gi", "pods": "10"}).Obj())
	s := startPoolScheduler(t)
	pod := func(name string) *st.PodWrapper {
		return st.MakePod().Namespace(ns).Name(name).Req(res{"cpu": "1"})
	}
	mustPod(t, gated(pod("gated"), "example.com/quota"))
	mustPod(t, pod("open").Obj())

	waitForPods(t, ns, "the ungated pod bound", func(n map[string]string) bool { return n["open"] != "" })
	assertStaysUnbound(t, ns, "gated")
	assertSchedulingGated(t, ns, "gated")
	d := s.dump(t)
	if j := job(d, framework.JobID{Namespace: ns, Name: "open"}.String()); j == nil {
		t.Errorf("the scheduler's cache has no job for the bound pod; jobs: %+v", d.Jobs)
	}
	if j := job(d, framework.JobID{Namespace: ns, Name: "gated"}.String()); j != nil {
		t.Errorf("the scheduler's cache has a job for the gated pod: %+v", j)
	}

	ungate(t, ns, "gated")
	start := time.Now()
	waitForPods(t, ns, "the ungated pod bound", func(n map[string]string) bool { return n["gated"] == "gate-n1" })
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("the pod bound %v after its gate was removed; want it scheduled promptly", took)
	}
}

// A gang with a gated member binds nothing until the gate is removed, then
// all of it.
func TestGangWithGatedMemberBindsOnceUngated(t *testing.T) {
	ns := createNamespace(t)
	mustNode(t, poolNode(t, "gate-gang-n1", res{"cpu": "4", "memory": "8Gi", "pods": "10"}).Obj())
	startPoolScheduler(t)
	member := func(name string) *st.PodWrapper {
		return st.MakePod().Namespace(ns).Name(name).Group("g").MinAvailable("2").Req(res{"cpu": "1"})
	}
	mustPod(t, member("g-0").Obj())
	mustPod(t, gated(member("g-1"), "example.com/quota"))
	// The gang is tried (and rejected as short of its quorum) before the
	// gate goes, so ungating must bring a waiting gang back.
	waitUnschedulable(t, ns, "g-0", "waiting for tasks: 1 of min-available 2 exist")
	assertStaysUnbound(t, ns, "g-0", "g-1")
	assertSchedulingGated(t, ns, "g-1")

	ungate(t, ns, "g-1")
	start := time.Now()
	waitForPods(t, ns, "the whole gang bound", func(n map[string]string) bool { return n["g-0"] != "" && n["g-1"] != "" })
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("the gang bound %v after its member's gate was removed; want it scheduled promptly", took)
	}
}
