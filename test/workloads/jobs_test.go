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
	"sort"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	st "github.com/batch-scheduler/batch-scheduler/pkg/testing"
	"github.com/batch-scheduler/batch-scheduler/test/controlplane"
)

func mustQuantity(s string) resource.Quantity { return resource.MustParse(s) }

// span is when the pods of a Job ran: the first start and the last finish
// the kubelet (KWOK) reported, to the second.
type span struct{ start, finish time.Time }

func spanOf(t *testing.T, ns, job string) span {
	t.Helper()
	var s span
	for _, p := range podsOf(t, ns, job) {
		if p.Status.StartTime != nil && (s.start.IsZero() || p.Status.StartTime.Time.Before(s.start)) {
			s.start = p.Status.StartTime.Time
		}
		for _, c := range p.Status.ContainerStatuses {
			if c.State.Terminated != nil && c.State.Terminated.FinishedAt.Time.After(s.finish) {
				s.finish = c.State.Terminated.FinishedAt.Time
			}
		}
	}
	return s
}

// Two gang Jobs of 4 on 4 one-CPU nodes: each runs whole, one after the
// other, and completes; the second starts on the capacity the first
// freed.
func TestGangJobsRunWholeAndReuseCapacity(t *testing.T) {
	ns := setup(t, 4, "1")
	w := watch(t, ns, func(string) int { return 4 })
	startScheduler(t)
	runFor := map[string]string{controlplane.RunForAnnotation: "3s"}
	createJob(t, gangJob(ns, "first", 4, "1", runFor))
	createJob(t, gangJob(ns, "second", 4, "1", runFor))
	for _, name := range []string{"first", "second"} {
		j := waitJob(t, ns, name, batchv1.JobComplete, 2*time.Minute)
		if j.Status.Succeeded != 4 || j.Status.Failed != 0 {
			t.Errorf("Job %s: %s; want 4 succeeded, none failed", name, jobStatus(j))
		}
	}
	gangs := w.Gangs()
	for _, name := range []string{"first", "second"} {
		if g := gangs[name]; g.Peak != 4 {
			t.Errorf("Job %s ran at most %d pods at once, want 4 (%+v)", name, g.Peak, g)
		}
	}
	a, b := spanOf(t, ns, "first"), spanOf(t, ns, "second")
	if b.start.Before(a.start) {
		a, b = b, a
	}
	// Both cannot run at once: 4 CPUs in all. Times are to the second.
	if b.start.Before(a.finish) {
		t.Errorf("the later Job started at %s, before the earlier one finished at %s", b.start.Format(time.TimeOnly), a.finish.Format(time.TimeOnly))
	}
	t.Logf("first ran %s to %s, second %s to %s", a.start.Format(time.TimeOnly), a.finish.Format(time.TimeOnly), b.start.Format(time.TimeOnly), b.finish.Format(time.TimeOnly))
}

// A gang Job of 4 where only 3 fit binds none of its pods, and says why;
// a fourth node lets it run whole to completion.
func TestGangJobWaitsWholeForRoom(t *testing.T) {
	ns := setup(t, 3, "1")
	w := watch(t, ns, func(string) int { return 4 })
	startScheduler(t)
	createJob(t, gangJob(ns, "big", 4, "1", map[string]string{controlplane.RunForAnnotation: "2s"}))
	// All four pods exist and each says why it waits.
	err := wait.PollUntilContextTimeout(t.Context(), 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		pods := podsOf(t, ns, "big")
		if len(pods) != 4 {
			return false, nil
		}
		for _, p := range pods {
			if !unschedulable(&p) {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		t.Fatalf("the pods of Job big never all said why they wait: %v", describe(podsOf(t, ns, "big")))
	}
	if g := w.Gangs()["big"]; g.Peak != 0 {
		t.Fatalf("Job big had %d pods running on room for 3, want none", g.Peak)
	}
	addNode(t, ns+"-extra", "1")
	j := waitJob(t, ns, "big", batchv1.JobComplete, 2*time.Minute)
	if j.Status.Succeeded != 4 {
		t.Errorf("Job big: %s; want 4 succeeded", jobStatus(j))
	}
	if g := w.Gangs()["big"]; g.Peak != 4 {
		t.Errorf("Job big ran at most %d pods at once, want 4", g.Peak)
	}
}

// A gang Job whose pods fail is retried by its controller, and each try
// starts whole: the retry waits, none of its pods bound, while a single
// pod holds one of the three slots, and starts once it is gone.
func TestFailingGangJobRetriesWhole(t *testing.T) {
	ns := setup(t, 3, "1")
	w := watch(t, ns, func(job string) int {
		if job == "flaky" {
			return 3
		}
		return 1
	})
	startScheduler(t)
	flaky := gangJob(ns, "flaky", 3, "1", map[string]string{controlplane.FailAfterAnnotation: "2s"})
	nonIndexed := batchv1.NonIndexedCompletion
	flaky.Spec.CompletionMode = &nonIndexed
	flaky.Spec.BackoffLimit = new(int32(3))
	createJob(t, flaky)
	// Once the first try runs, a single pod queues for a slot and takes
	// one when the try fails; it holds it for longer than the Job
	// controller waits before it retries (10 s).
	err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		return w.Gangs()["flaky"].Running == 3, nil
	})
	if err != nil {
		t.Fatalf("the first try of Job flaky never ran whole: %v", w.Gangs()["flaky"])
	}
	filler := gangJob(ns, "filler", 1, "1", map[string]string{controlplane.RunForAnnotation: "20s"})
	delete(filler.Spec.Template.Annotations, "batch-scheduler.io/job-gang")
	createJob(t, filler)

	j := waitJob(t, ns, "flaky", batchv1.JobFailed, 3*time.Minute)
	if j.Status.Failed != 6 {
		t.Errorf("Job flaky: %s; want 6 failed pods (two tries of 3)", jobStatus(j))
	}
	waitJob(t, ns, "filler", batchv1.JobComplete, time.Minute)
	// The second try started after the filler finished.
	var tries []time.Time
	for _, p := range podsOf(t, ns, "flaky") {
		if p.Status.StartTime != nil {
			tries = append(tries, p.Status.StartTime.Time)
		}
	}
	sort.Slice(tries, func(i, k int) bool { return tries[i].Before(tries[k]) })
	fill := spanOf(t, ns, "filler")
	if len(tries) != 6 || tries[3].Before(fill.finish) {
		t.Errorf("flaky's pods started at %v; want 6, the last 3 not before the filler finished at %s", tries, fill.finish.Format(time.TimeOnly))
	}
	if g := w.Gangs()["flaky"]; g.Peak != 3 {
		t.Errorf("Job flaky ran at most %d pods at once, want 3", g.Peak)
	}
}

// A Job that does not opt in is a gang of its parallelism all the same
// (the gang is inferred from the owner): with room for 2 of its 3 pods
// none runs, and each pod names the Job and the quorum; meanwhile a Job
// that runs one pod at a time is no gang and runs to completion on the
// same room. A third node lets the first run whole.
func TestJobInferredGangWithoutOptIn(t *testing.T) {
	ns := setup(t, 2, "1")
	w := watch(t, ns, func(job string) int {
		if job == "wide" {
			return 3
		}
		return 1
	})
	startScheduler(t)
	runFor := map[string]string{controlplane.RunForAnnotation: "2s"}
	wide := gangJob(ns, "wide", 3, "1", runFor)
	delete(wide.Spec.Template.Annotations, "batch-scheduler.io/job-gang")
	createJob(t, wide)
	err := wait.PollUntilContextTimeout(t.Context(), 200*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		pods := podsOf(t, ns, "wide")
		if len(pods) != 3 {
			return false, nil
		}
		for _, p := range pods {
			if !unschedulable(&p) || !strings.Contains(message(&p), "Job.batch:wide") || !strings.Contains(message(&p), "min-available 3") {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		t.Fatalf("the pods of Job wide never all waited as a gang of 3: %v", describe(podsOf(t, ns, "wide")))
	}
	single := gangJob(ns, "single", 1, "1", runFor)
	delete(single.Spec.Template.Annotations, "batch-scheduler.io/job-gang")
	two := int32(2)
	single.Spec.Completions = &two
	createJob(t, single)
	if j := waitJob(t, ns, "single", batchv1.JobComplete, time.Minute); j.Status.Succeeded != 2 {
		t.Errorf("Job single: %s; want 2 succeeded", jobStatus(j))
	}
	if g := w.Gangs()["wide"]; g.Peak != 0 {
		t.Fatalf("Job wide had %d pods running on room for 2, want none", g.Peak)
	}
	addNode(t, ns+"-extra", "1")
	if j := waitJob(t, ns, "wide", batchv1.JobComplete, 2*time.Minute); j.Status.Succeeded != 3 {
		t.Errorf("Job wide: %s; want 3 succeeded", jobStatus(j))
	}
	if g := w.Gangs()["wide"]; g.Peak != 3 {
		t.Errorf("Job wide ran at most %d pods at once, want 3", g.Peak)
	}
}

// addNode adds a node of the simulated kubelets with cpu CPUs until the
// test ends.
func addNode(t *testing.T, name, cpu string) {
	t.Helper()
	n := st.MakeNode().Name(name).Capacity(map[v1.ResourceName]string{"cpu": cpu, "memory": "8Gi", "pods": "110"}).Obj()
	if _, err := controlplane.CreateKwokNode(t.Context(), cp.Client, n); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cp.Client.CoreV1().Nodes().Delete(context.Background(), name, metav1.DeleteOptions{}) })
}

// message is the message of the pod's PodScheduled condition.
func message(p *v1.Pod) string {
	for _, c := range p.Status.Conditions {
		if c.Type == v1.PodScheduled {
			return c.Message
		}
	}
	return ""
}

func unschedulable(p *v1.Pod) bool {
	if p.Spec.NodeName != "" {
		return false
	}
	for _, c := range p.Status.Conditions {
		if c.Type == v1.PodScheduled && c.Status == v1.ConditionFalse && c.Message != "" {
			return true
		}
	}
	return false
}

func describe(pods []v1.Pod) string {
	var out []string
	for _, p := range pods {
		out = append(out, fmt.Sprintf("%s node=%q phase=%s %q", p.Name, p.Spec.NodeName, p.Status.Phase, message(&p)))
	}
	return strings.Join(out, "; ")
}
