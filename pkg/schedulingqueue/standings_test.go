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

package schedulingqueue

import (
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/batch-scheduler/batch-scheduler/pkg/dialects"
	st "github.com/batch-scheduler/batch-scheduler/pkg/testing"
)

func TestPlaces(t *testing.T) {
	q, _ := newTestQueue(t, nil)
	at := func(s int) metav1.Time { return metav1.NewTime(epoch.Add(time.Duration(s) * time.Second)) }
	pod := func(name, group string, created int, prio int32, cpu string) *v1.Pod {
		w := st.MakePod().Namespace("ns").Name(name).UID(name).Created(at(created)).Priority(prio).
			Req(map[v1.ResourceName]string{v1.ResourceCPU: cpu})
		if group != "" {
			w = w.Group(group).MinAvailable("2")
		}
		return w.Obj()
	}
	// Queue a: the gang g (2 pods of 2 cpus, oldest), single s1 (1 cpu,
	// newer but of higher priority), single s2 (1 cpu, newest). Queue b:
	// single s3. The default queue: single s4.
	pods := []*v1.Pod{pod("g-0", "g", 1, 0, "2"), pod("g-1", "g", 1, 0, "2"), pod("s1", "", 2, 10, "1"), pod("s2", "", 3, 0, "1"),
		pod("s3", "", 4, 0, "3"), pod("s4", "", 5, 0, "500m")}
	add(q, pods...)
	for _, p := range pods[:4] {
		q.SetJobTenantQueue(dialects.Resolver().JobID(p), "a")
	}
	q.SetJobTenantQueue(dialects.Resolver().JobID(pods[4]), "b")
	// s1 is in a cycle: it still waits.
	mustPop(t, q, "ns/pod:s1")

	places := q.Places()
	want := map[string]Place{
		"ns/pod:s1": {Queue: "a", Position: 1, Length: 3, Priority: 10, PendingPods: 1},
		"ns/g":      {Queue: "a", Position: 2, Length: 3, PendingPods: 2},
		"ns/pod:s2": {Queue: "a", Position: 3, Length: 3, PendingPods: 1},
		"ns/pod:s3": {Queue: "b", Position: 1, Length: 1, PendingPods: 1},
		"ns/pod:s4": {Queue: "", Position: 1, Length: 1, PendingPods: 1},
	}
	wantAhead := map[string]int64{"ns/pod:s1": 1000, "ns/g": 5000, "ns/pod:s2": 6000, "ns/pod:s3": 3000, "ns/pod:s4": 500}
	if len(places) != len(want) {
		t.Errorf("Places has %d jobs, want %d: %v", len(places), len(want), places)
	}
	for id, p := range places {
		w, ok := want[id.String()]
		if !ok {
			t.Errorf("unexpected job %s", id)
			continue
		}
		ahead := p.Ahead.MilliCPU
		if p.Queue != w.Queue || p.Position != w.Position || p.Length != w.Length || p.Priority != w.Priority || p.PendingPods != w.PendingPods {
			t.Errorf("%s: place %+v, want %+v", id, p, w)
		}
		if ahead != wantAhead[id.String()] {
			t.Errorf("%s: ahead %dm cpu, want %dm (its pods and those of the jobs before it in its queue)", id, ahead, wantAhead[id.String()])
		}
	}
}
