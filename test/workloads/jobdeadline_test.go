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

	batchv1 "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
	"github.com/batch-scheduler/batch-scheduler/test/controlplane"
)

// singleJob is a Job of one pod requesting cpu that runs for runFor,
// failed by the Job controller deadline seconds after it starts (0: no
// deadline). Nothing on its pod says how long it runs.
func singleJob(ns, name, cpu, runFor string, deadline int64) *batchv1.Job {
	j := gangJob(ns, name, 1, cpu, map[string]string{controlplane.RunForAnnotation: runFor})
	delete(j.Spec.Template.Annotations, "batch-scheduler.io/job-gang")
	if deadline > 0 {
		j.Spec.ActiveDeadlineSeconds = &deadline
	}
	return j
}

// Runtime estimates from what users write on their Jobs, with no
// annotation on any pod: two nodes of 2 CPUs each run a one-CPU single
// whose Job's activeDeadlineSeconds (40 s) bounds it, so a gang of two
// 2-CPU pods reserves both nodes with a known start. A single whose Job
// says nothing may not take the reserved room; one whose Job's deadline
// (6 s) ends before the reservation's start backfills at once. The gang
// starts once the singles it waited for end (after 20 s).
func TestJobDeadlineBackfillsAroundAReservation(t *testing.T) {
	ns := setup(t, 2, "2")
	watch(t, ns, func(job string) int {
		if job == "big" {
			return 2
		}
		return 1
	})
	startScheduler(t, "--config-path="+reservationConfig(t))
	for _, name := range []string{"run-0", "run-1"} {
		createJob(t, singleJob(ns, name, "1", "20s", 40))
	}
	for _, name := range []string{"run-0", "run-1"} {
		waitRunning(t, ns, name, 1, 20*time.Second)
	}
	createJob(t, gangJob(ns, "big", 2, "2", map[string]string{controlplane.RunForAnnotation: "2s"}))
	time.Sleep(2 * time.Second)

	createJob(t, singleJob(ns, "silent", "1", "2s", 0))
	time.Sleep(4 * time.Second)
	if pods := podsOf(t, ns, "silent"); len(pods) != 1 || pods[0].Spec.NodeName != "" {
		t.Fatalf("the single whose Job says nothing took reserved room: %s", describe(pods))
	}
	created := time.Now()
	createJob(t, singleJob(ns, "quick", "1", "2s", 6))
	err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, 8*time.Second, true, func(context.Context) (bool, error) {
		pods := podsOf(t, ns, "quick")
		return len(pods) == 1 && pods[0].Spec.NodeName != "", nil
	})
	if err != nil {
		t.Fatalf("the single whose Job's 6 s deadline ends before the reservation did not backfill: %s; the gang: %s",
			describe(podsOf(t, ns, "quick")), describe(podsOf(t, ns, "big")))
	}
	t.Logf("the single with a Job deadline backfilled %s after its creation", time.Since(created).Round(100*time.Millisecond))
	// Its binding said whose room it took, and until when: the gang's,
	// which waits for the 20 s singles, ending after the 6 s deadline.
	quick := podsOf(t, ns, "quick")[0]
	into, deadline := quick.Annotations[framework.BackfilledIntoAnnotation], quick.Annotations[framework.BackfillDeadlineAnnotation]
	until, perr := time.Parse(time.RFC3339Nano, deadline)
	if jobName(into) != "big" || perr != nil || until.Before(created.Add(6*time.Second)) {
		t.Errorf("the backfilled single says it backfilled into %q until %q (%v), want the Job big's reservation until at least its 6 s deadline after %s",
			into, deadline, perr, created.Format(time.RFC3339Nano))
	}
	if pods := podsOf(t, ns, "silent"); len(pods) == 1 && pods[0].Spec.NodeName != "" && podsOf(t, ns, "big")[0].Spec.NodeName == "" {
		t.Errorf("the single whose Job says nothing took reserved room: %s", describe(pods))
	}
	waitRunning(t, ns, "big", 2, 40*time.Second)
	for _, p := range podsOf(t, ns, "run-0") {
		for _, c := range p.Status.Conditions {
			if c.Type == v1.DisruptionTarget && c.Status == v1.ConditionTrue {
				t.Errorf("pod %s was evicted (%s): waiting for it should have been enough", p.Name, c.Reason)
			}
		}
	}
}
