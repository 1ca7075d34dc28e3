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

package standing

import (
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
	"github.com/batch-scheduler/batch-scheduler/pkg/resources"
	st "github.com/batch-scheduler/batch-scheduler/pkg/testing"
)

var now = time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)

// running is a pod of queue bound to node, requesting cpu, started now,
// expected to run for runtime ("" for no estimate).
func running(name, node, queue, cpu, runtime string) *v1.Pod {
	w := st.MakePod().Namespace("ns").Name(name).UID(name).Node(node).Phase(v1.PodRunning).
		Req(map[v1.ResourceName]string{v1.ResourceCPU: cpu}).Label(framework.QueueLabel, queue)
	if runtime != "" {
		w = w.Annotation(framework.ExpectedRuntimeAnnotation, runtime)
	}
	pod := w.Obj()
	started := metav1.NewTime(now)
	pod.Status.StartTime = &started
	return pod
}

func node(name, cpu string, pods ...*v1.Pod) *framework.NodeInfo {
	return framework.NewNodeInfo(st.MakeNode().Name(name).Allocatable(map[v1.ResourceName]string{v1.ResourceCPU: cpu, v1.ResourcePods: "110"}).Obj(), pods...)
}

func cpu(milli int64, pods int64) resources.Resource {
	return resources.Resource{MilliCPU: milli, Pods: pods}
}

func queueOfLabel(t *framework.TaskInfo) string { return t.GetLabels()[framework.QueueLabel] }

func TestTimelineStart(t *testing.T) {
	// n1: 4 cpus, a (queue a) 2 cpus ends in 1m, b (queue b) 1 cpu in 2m:
	// 1 idle. n2: 4 cpus, c (queue b) 2 cpus ends in 30s, d (queue a) 2
	// cpus gives no runtime. n3 is cordoned: its 4 idle cpus do not count.
	cordoned := framework.NewNodeInfo(st.MakeNode().Name("n3").Allocatable(map[v1.ResourceName]string{v1.ResourceCPU: "4", v1.ResourcePods: "110"}).Unschedulable(true).Obj())
	tl := NewTimeline([]*framework.NodeInfo{
		node("n1", "4", running("a", "n1", "a", "2", "1m"), running("b", "n1", "b", "1", "2m")),
		node("n2", "4", running("c", "n2", "b", "2", "30s"), running("d", "n2", "a", "2", "")),
		cordoned,
	}, now, queueOfLabel)
	share := func(milli int64) *resources.Resource { r := cpu(milli, 0); return &r }
	tests := []struct {
		name   string
		need   Need
		want   time.Duration
		wantOK bool
	}{
		{name: "fits the idle room", need: Need{Request: cpu(1000, 1)}, want: 0, wantOK: true},
		{name: "waits for the first end", need: Need{Request: cpu(3000, 2)}, want: 30 * time.Second, wantOK: true},
		{name: "waits for two ends", need: Need{Request: cpu(5000, 2)}, want: time.Minute, wantOK: true},
		{name: "waits for every estimated end", need: Need{Request: cpu(6000, 2)}, want: 2 * time.Minute, wantOK: true},
		{name: "needs the room of a pod without runtime", need: Need{Request: cpu(7000, 2)}},
		{name: "more than the cluster", need: Need{Request: cpu(9000, 2)}},
		// Queue a holds 4 cpus (a and d) of a share of 5: 1 cpu of room
		// until its own pod a ends at 1m, although the cluster has 3
		// idle cpus at 30s.
		{name: "bounded by the share", need: Need{Request: cpu(3000, 1), Queue: "a", Share: share(5000), Held: share(4000)}, want: time.Minute, wantOK: true},
		{name: "within the share", need: Need{Request: cpu(1000, 1), Queue: "a", Share: share(5000), Held: share(4000)}, want: 0, wantOK: true},
		// Queue b's own ends raise its room, others' do not.
		{name: "only its own ends raise its room", need: Need{Request: cpu(3000, 1), Queue: "b", Share: share(3000), Held: share(3000)}, want: 2 * time.Minute, wantOK: true},
		{name: "a share too small", need: Need{Request: cpu(3000, 1), Queue: "b", Share: share(2000), Held: share(3000)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := tl.Start(tt.need)
			if ok != tt.wantOK || ok && !got.Equal(now.Add(tt.want)) {
				t.Errorf("Start = %v, %v; want now+%v, %v", got, ok, tt.want, tt.wantOK)
			}
		})
	}
	if tl.Unestimated() != 1 {
		t.Errorf("Unestimated = %d, want 1 (pod d)", tl.Unestimated())
	}
	if idle := tl.Idle(); idle.MilliCPU != 1000 {
		t.Errorf("Idle cpu = %dm, want 1000m (the cordoned node left out)", idle.MilliCPU)
	}
}

func TestTimelineOverrunPodStartsNow(t *testing.T) {
	late := running("late", "n1", "a", "2", "1m")
	started := metav1.NewTime(now.Add(-5 * time.Minute))
	late.Status.StartTime = &started
	tl := NewTimeline([]*framework.NodeInfo{node("n1", "2", late)}, now, nil)
	if got, ok := tl.Start(Need{Request: cpu(2000, 1)}); !ok || !got.Equal(now) {
		t.Errorf("Start = %v, %v; a pod past its expected end counts as ending now", got, ok)
	}
}

func TestClause(t *testing.T) {
	at := now.Add(90 * time.Second)
	tests := []struct {
		place string
		est   Estimate
		want  string
	}{
		{Place("team-a", 2, 5), Estimate{Basis: BasisCapacity, Start: at, Known: true, Made: now}, "2nd of 5 jobs waiting in queue team-a; expected to start at 2026-12-02T12:01:30Z (capacity estimate)"},
		{Place("", 11, 12), Estimate{Basis: BasisReservation, Why: "no runtime", Made: now}, "11th of 12 jobs waiting in queue default"},
		{Place("q", 23, 30), Estimate{Basis: BasisCapacity, Start: now, Known: true, Made: now}, "23rd of 30 jobs waiting in queue q; expected to start as soon as room is found (capacity estimate)"},
		{Place("q", 0, 0), Estimate{}, "queue q"},
		{Place("q", 1, 1), Estimate{}, "the only job waiting in queue q"},
		{"", Estimate{Basis: BasisReservation, Start: at, Known: true, Made: now}, "expected to start at 2026-12-02T12:01:30Z (reservation estimate)"},
		{"", Estimate{Basis: BasisCapacity, Why: "no runtime", Made: now}, ""},
	}
	for _, tt := range tests {
		if got := Clause(tt.place, tt.est); got != tt.want {
			t.Errorf("Clause(%q, %+v) = %q, want %q", tt.place, tt.est, got, tt.want)
		}
	}
}
