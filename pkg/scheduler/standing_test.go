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

	"github.com/batch-scheduler/batch-scheduler/pkg/metrics/metricstest"
	"github.com/batch-scheduler/batch-scheduler/pkg/standing"
	st "github.com/batch-scheduler/batch-scheduler/pkg/testing"
)

// A pending job learns its place in its queue and when it is expected to
// start, from the running pods' expected ends and the jobs ahead of it;
// the same is served by Standing, and its start is measured against the
// estimate.
func TestStandingOfWaitingJobs(t *testing.T) {
	h := newHarness(t)
	h.addNode("n1", "2")
	h.addNode("n2", "2")
	// n1's pod ends in 1 minute; on n2 one ends in 9 minutes, the other
	// gives no runtime.
	a := runningFor("a", "n1", "2", time.Minute, "2m")
	for _, p := range []*v1.Pod{a, runningFor("b", "n2", "1", time.Minute, "10m"),
		runningFor("c", "n2", "1", time.Minute, "")} {
		h.addPod(p)
	}
	created := metav1.NewTime(time.Now().Add(-time.Minute))
	first := st.MakePod().Name("first").Req(res{v1.ResourceCPU: "2"}).Created(created).Obj()
	second := st.MakePod().Name("second").Req(res{v1.ResourceCPU: "1"}).Created(metav1.NewTime(created.Add(time.Second))).Obj()
	third := st.MakePod().Name("third").Req(res{v1.ResourceCPU: "1"}).Created(metav1.NewTime(created.Add(2 * time.Second))).Obj()
	for _, p := range []*v1.Pod{first, second, third} {
		h.addPod(p)
	}
	now := time.Now()
	for range 3 {
		h.cycle()
	}
	// first (2 cpus) fits once a ends (1m); second, after first, needs 3
	// cpus in all: b's end (9m) too; third needs 4: c's room, which has
	// no end.
	want := map[string]struct {
		clause string
		in     time.Duration
		known  bool
	}{
		"first":  {"Expected to start at ", time.Minute, true},
		"second": {"Expected to start at ", 9 * time.Minute, true},
		"third":  {"Insufficient cpu.", 0, false},
	}
	for _, p := range []*v1.Pod{first, second, third} {
		cond := podScheduledCondition(h.apiPod(p))
		if cond == nil || !strings.Contains(cond.Message, want[p.Name].clause) {
			t.Errorf("%s: condition %+v, want its standing %q", p.Name, cond, want[p.Name].clause)
		}
		if cond != nil && !want[p.Name].known && strings.Contains(cond.Message, "xpected to start") {
			t.Errorf("%s: condition %q tells a start it does not know", p.Name, cond.Message)
		}
	}
	rep := h.sched.Standing()
	if len(rep.Jobs) != 3 {
		t.Fatalf("Standing lists %d jobs, want 3: %+v", len(rep.Jobs), rep.Jobs)
	}
	for i, j := range rep.Jobs {
		name := strings.TrimPrefix(j.Job, "default/pod:")
		w := want[name]
		if j.Position != i+1 || j.QueueLength != 3 || j.Queue != "" || j.EstimateBasis != standing.BasisCapacity {
			t.Errorf("%s: %+v; want position %d of 3 in the default queue, a capacity estimate", j.Job, j, i+1)
		}
		switch {
		case w.known && j.EstimatedStart == nil:
			t.Errorf("%s: no estimated start, want about now + %s", j.Job, w.in)
		case w.known && (j.EstimatedStart.Before(now.Add(w.in-2*time.Second)) || j.EstimatedStart.After(now.Add(w.in+2*time.Second))):
			t.Errorf("%s: estimated start %s, want about %s", j.Job, j.EstimatedStart, now.Add(w.in))
		case !w.known && (j.EstimatedStart != nil || j.StartUnknown == ""):
			t.Errorf("%s: estimated start %v (%q), want none and why", j.Job, j.EstimatedStart, j.StartUnknown)
		}
	}

	// a ends early: first starts ahead of its estimate, and that is
	// measured.
	h.cache.DeletePod(a)
	h.requeueAll()
	h.cycle()
	if got := h.boundTo(); got["first"] != "n1" {
		t.Fatalf("first bound to %q, want n1", got["first"])
	}
	if n := metricstest.HistogramCount(t, h.metrics.StartEstimateError.WithLabelValues(standing.BasisCapacity, "early")); n != 1 {
		t.Errorf("start estimate errors observed (capacity, early): %d, want 1", n)
	}
	if n := metricstest.HistogramCount(t, h.metrics.StartEstimateError.WithLabelValues(standing.BasisCapacity, "late")); n != 0 {
		t.Errorf("start estimate errors observed (capacity, late): %d, want 0", n)
	}
}
