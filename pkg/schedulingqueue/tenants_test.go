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

	"github.com/batch-scheduler/batch-scheduler/pkg/dialects"
	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
	st "github.com/batch-scheduler/batch-scheduler/pkg/testing"
)

// With nothing active, Pop takes the backing-off job of the neediest
// tenant queue (the lowest rank) before one of another queue whose
// backoff ends sooner; within a rank, the job that entered the queue
// first, however long its backoff; of those equal, the sooner backoff.
func TestIdlePopTakesTheNeediestQueueFirst(t *testing.T) {
	type job struct {
		name, queue string
		// enters is when it enters the queue (s after the start), backoff
		// how long it backs off after its attempt.
		enters  int
		backoff time.Duration
	}
	for _, tc := range []struct {
		name  string
		jobs  []job
		ranks map[string]int
		want  []string
	}{{
		name: "no ranks: sooner backoff first",
		jobs: []job{{"soon", "a", 0, time.Second}, {"needy", "b", 0, 5 * time.Second}},
		want: []string{"soon", "needy"},
	}, {
		name:  "the needier queue first",
		jobs:  []job{{"soon", "a", 0, time.Second}, {"needy", "b", 0, 5 * time.Second}},
		ranks: map[string]int{"a": 1, "b": 0},
		want:  []string{"needy", "soon"},
	}, {
		name:  "equal ranks: sooner backoff first",
		jobs:  []job{{"soon", "a", 0, time.Second}, {"needy", "b", 0, 5 * time.Second}},
		ranks: map[string]int{"a": 1, "b": 1},
		want:  []string{"soon", "needy"},
	}, {
		name: "within a rank the oldest first, however long its backoff",
		jobs: []job{{"new", "a", 2, time.Second}, {"old", "a", 0, 10 * time.Second},
			{"other", "b", 1, time.Second}},
		ranks: map[string]int{"a": 0, "b": 1},
		want:  []string{"old", "new", "other"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			q, clk := newTestQueue(t, nil)
			start := clk.Now()
			q.SetTenantQueueRanks(tc.ranks)
			for _, j := range tc.jobs {
				clk.SetTime(start.Add(time.Duration(j.enters) * time.Second))
				pod := st.MakePod().Name(j.name).Obj()
				q.SetJobTenantQueue(dialects.Resolver().JobID(pod), j.queue)
				add(q, pod)
				qj := mustPop(t, q, "default/pod:"+j.name)
				// An event during the cycle sends it to the backoff queue.
				q.MoveAllToActiveOrBackoffQueue(framework.EventNodeAdd, nil, nil)
				mustNoErr(t, "AddUnschedulable", q.AddUnschedulable(qj, Attempt{AnyEvent: true, ForRoom: true}))
				q.jobs[qj.ID].backoffExpiry = clk.Now().Add(j.backoff)
			}
			if l := q.Lengths(); l.Active != 0 || l.Backoff != len(tc.jobs) {
				t.Fatalf("lengths = %+v, want %d jobs backing off", l, len(tc.jobs))
			}
			for _, want := range tc.want {
				qj, err := q.Pop(t.Context())
				mustNoErr(t, "Pop", err)
				if qj.ID.String() != "default/pod:"+want {
					t.Fatalf("Pop = %s, want default/pod:%s", qj.ID, want)
				}
			}
		})
	}
}
