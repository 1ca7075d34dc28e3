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

package cache

import (
	"testing"
	"time"

	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
	"github.com/batch-scheduler/batch-scheduler/pkg/schedulingqueue"
	st "github.com/batch-scheduler/batch-scheduler/pkg/testing"
)

// A Job's pending pods that waited for room are retried when the Job's
// runtime bound changes what they are expected to run (they may now
// backfill), whether their gang is inferred from the Job or named by its
// opt-in annotation; a bound that changes nothing retries nothing.
func TestRuntimeBoundRetriesTheJobsPendingPods(t *testing.T) {
	for _, tc := range []struct {
		name   string
		optIn  bool
		owners framework.OwnerKinds
	}{
		{name: "gang inferred from the Job", owners: framework.AllOwnerKinds()},
		{name: "gang the Job's pods opt in to", optIn: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, _ := newTestCache(t, Options{})
			mustNoErr(t, "SetOwnerGangs", c.SetOwnerGangs(tc.owners))
			w := st.MakePod().Namespace("ns").Name("train-0").UID("train-0").Scheduler("batch").
				ControlledBy("batch/v1", "Job", "train", "job-uid").Req(res{"cpu": "1"})
			if tc.optIn {
				w = w.Annotation(framework.JobGangAnnotation, "true")
			}
			mustNoErr(t, "AddPendingPod", c.AddPendingPod(w.Obj()))
			q := c.Queue()
			park := func() {
				t.Helper()
				qj, err := q.Pop(t.Context())
				mustNoErr(t, "Pop", err)
				mustNoErr(t, "AddUnschedulable", q.AddUnschedulable(qj, schedulingqueue.Attempt{Reason: "no room"}))
				if n := q.Lengths().Unschedulable; n != 1 {
					t.Fatalf("%d jobs unschedulable, want 1", n)
				}
			}
			park()
			bound := &framework.RuntimeBound{Source: "Job ns/train", UID: "job-uid", Limit: time.Minute}
			c.SetRuntimeBound("ns", "train", bound)
			if l := q.Lengths(); l.Unschedulable != 0 {
				t.Fatalf("after the Job's bound arrived: %+v, want the job retried", l)
			}
			park()
			c.SetRuntimeBound("ns", "train", &framework.RuntimeBound{Source: "Job ns/train", UID: "job-uid", Limit: time.Minute})
			c.SetRuntimeBound("ns", "other", bound)
			if l := q.Lengths(); l.Unschedulable != 1 {
				t.Fatalf("after bounds that change nothing of the pod's: %+v, want the job still waiting", l)
			}
			c.SetRuntimeBound("ns", "train", &framework.RuntimeBound{Source: "Job ns/train", UID: "job-uid", Limit: time.Minute,
				Start: epoch})
			if l := q.Lengths(); l.Unschedulable != 0 {
				t.Fatalf("after the Job started: %+v, want the job retried", l)
			}
		})
	}
}
