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

package benchmark

import (
	"strconv"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// newBareTraceTracker is a traceTracker without an informer: the test
// feeds it pod events.
func newBareTraceTracker(settle time.Duration) *traceTracker {
	return &traceTracker{settle: settle, pods: map[string]*tracePod{}, jobs: map[string]*traceJobState{}}
}

// tracePodOf is pod index of Job job in the state given.
func tracePodOf(job string, index int, node string, phase v1.PodPhase, deleting bool) *v1.Pod {
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{
		Name:        job + "-" + strconv.Itoa(index),
		Labels:      map[string]string{batchv1.JobNameLabel: job},
		Annotations: map[string]string{batchv1.JobCompletionIndexAnnotation: strconv.Itoa(index)},
	}, Spec: v1.PodSpec{NodeName: node}, Status: v1.PodStatus{Phase: phase}}
	if deleting {
		p.DeletionTimestamp = &metav1.Time{Time: time.Now()}
	}
	return p
}

// A gang bound whole, run and finished is no violation, waits until its
// last index is bound, counts in the allocation while live, and is done
// when every index succeeded.
func TestTraceTrackerWholeGang(t *testing.T) {
	tr := newBareTraceTracker(time.Hour)
	start := time.Now()
	tr.begin(start)
	tr.expect("g", 2, classOf(2), start)
	for i := range 2 {
		tr.observe(tracePodOf("g", i, "", v1.PodPending, false), false)
	}
	for i := range 2 {
		tr.observe(tracePodOf("g", i, "n", v1.PodRunning, false), false)
	}
	if tr.live != 2 {
		t.Fatalf("%d live pods, want 2", tr.live)
	}
	time.Sleep(20 * time.Millisecond)
	for i := range 2 {
		tr.observe(tracePodOf("g", i, "n", v1.PodSucceeded, false), false)
	}
	r := tr.result("s", 4, time.Now())
	if r.unfinished != 0 || r.unbound != 0 || len(r.violations) != 0 || r.victims != 0 {
		t.Fatalf("result %+v; want the Job done, bound, no violation, no victim", r)
	}
	if w := r.waits[classOf(2)]; len(w) != 1 || w[0] < 0 || w[0] > r.makespan {
		t.Errorf("waits %v, want one within the makespan %s", w, r.makespan)
	}
	// Two of four slots for the whole makespan, give or take the time
	// between the events.
	if r.allocation < 0.3 || r.allocation > 0.5 {
		t.Errorf("allocation %.3f, want about 0.5", r.allocation)
	}
}

// A Job with some but fewer than its size of pods live for longer than
// settle ran below its quorum; one that loses a live pod counts a victim.
func TestTraceTrackerBelowQuorum(t *testing.T) {
	tr := newBareTraceTracker(10 * time.Millisecond)
	tr.begin(time.Now())
	tr.expect("partial", 3, classOf(3), time.Now())
	tr.observe(tracePodOf("partial", 0, "n", v1.PodRunning, false), false)
	tr.observe(tracePodOf("partial", 1, "n", v1.PodRunning, false), false)
	tr.observe(tracePodOf("partial", 2, "", v1.PodPending, false), false)
	time.Sleep(30 * time.Millisecond)
	tr.observe(tracePodOf("partial", 1, "n", v1.PodRunning, true), false)
	r := tr.result("s", 8, time.Now())
	if len(r.violations) != 1 {
		t.Errorf("violations %q, want one", r.violations)
	}
	if r.victims != 1 || r.unfinished != 1 || r.waiting != 1 || r.unbound != 1 {
		t.Errorf("victims %d, unfinished %d, waiting %d, unbound %d; want 1 each", r.victims, r.unfinished, r.waiting, r.unbound)
	}
}

// A Job winding down (a pod succeeded) is not judged, however long the
// rest takes.
func TestTraceTrackerWindingDown(t *testing.T) {
	tr := newBareTraceTracker(10 * time.Millisecond)
	tr.begin(time.Now())
	tr.expect("w", 2, classOf(2), time.Now())
	tr.observe(tracePodOf("w", 0, "n", v1.PodRunning, false), false)
	tr.observe(tracePodOf("w", 1, "n", v1.PodRunning, false), false)
	tr.observe(tracePodOf("w", 0, "n", v1.PodSucceeded, false), false)
	time.Sleep(30 * time.Millisecond)
	tr.observe(tracePodOf("w", 1, "n", v1.PodSucceeded, false), false)
	if r := tr.result("s", 8, time.Now()); len(r.violations) != 0 || r.unfinished != 0 {
		t.Errorf("violations %q, unfinished %d; want none", r.violations, r.unfinished)
	}
}
