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

package scheduler

import (
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
	st "github.com/batch-scheduler/batch-scheduler/pkg/testing"
)

// jobPod returns a pod of the batch Job job requesting cpu, bound to node
// and started started ago when node is set.
func jobPod(name, job, node, cpu string, started time.Duration) *v1.Pod {
	w := st.MakePod().Name(name).UID(name).Req(res{v1.ResourceCPU: cpu}).ControlledBy("batch/v1", "Job", job, job+"-uid")
	if node == "" {
		return w.Obj()
	}
	pod := w.Node(node).Phase(v1.PodRunning).Obj()
	start := metav1.NewTime(time.Now().Add(-started))
	pod.CreationTimestamp, pod.Status.StartTime = start, &start
	return pod
}

// Runtime estimates come from the pods' Jobs too, without an annotation
// on any pod: the running pods of a Job with a deadline give a
// reservation its start, and a pending pod whose Job's deadline ends
// before it backfills, while one whose Job says nothing does not.
func TestJobDeadlinesReserveAndBackfill(t *testing.T) {
	h := newHarnessWith(t, harnessConfig{postFilter: reservationPostFilter})
	for _, n := range []string{"n1", "n2", "n3"} {
		h.addNode(n, "2")
	}
	// n1 runs a Job that says nothing; n2 and n3 a Job started a minute
	// ago that fails 3 minutes after its start.
	started := time.Now().Add(-time.Minute)
	h.cache.SetRuntimeBound("default", "ending", &framework.RuntimeBound{Source: "Job default/ending", UID: "ending-uid",
		Limit: 3 * time.Minute, Start: started})
	running := []*v1.Pod{jobPod("n1-a", "endless", "n1", "2", time.Minute)}
	for _, n := range []string{"n2", "n3"} {
		running = append(running, jobPod(n+"-a", "ending", n, "1", time.Minute), jobPod(n+"-b", "ending", n, "1", time.Minute))
	}
	for _, p := range running {
		h.addPod(p)
	}
	gang := gangPods("big", 2, "2", 0, "2")
	for _, p := range gang {
		h.addPod(p)
	}
	h.cycle()
	cond := podScheduledCondition(h.apiPod(gang[0]))
	if cond == nil || !strings.Contains(cond.Message, "reservation: room held on n2, n3 until 4 running pods end; expected to start in") {
		t.Fatalf("gang's condition %+v, want the reservation of n2 and n3, whose Job's deadline gives an end", cond)
	}

	// n2-a ends: its CPU is reserved for the gang, expected in 2 minutes.
	h.cache.DeletePod(running[1])
	h.addPod(jobPod("silent-0", "silent", "", "1", 0))
	h.cycle()
	if got := h.boundTo()["silent-0"]; got != "" {
		t.Fatalf("the pod of a Job that says nothing bound to %s: the reservation gave its room away", got)
	}
	// A Job whose deadline ends before the reservation backfills; its
	// pod says nothing itself.
	h.cache.SetRuntimeBound("default", "quick", &framework.RuntimeBound{Source: "Job default/quick", UID: "quick-uid", Limit: 30 * time.Second})
	h.addPod(jobPod("quick-0", "quick", "", "1", 0))
	h.cycle()
	if got := h.boundTo()["quick-0"]; got != "n2" {
		t.Fatalf("the pod of a Job with a 30s deadline bound to %q, want n2, the reserved room it ends before", got)
	}
}
