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

package defaultpreemption_test

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"

	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
	"github.com/batch-scheduler/batch-scheduler/pkg/framework/preemption"
	st "github.com/batch-scheduler/batch-scheduler/pkg/testing"
)

// TakeBack is a second PostFilter plugin of the kind docs/scheduling.md
// describes: it makes room by evicting pods another team borrowed,
// whatever their priority. Like DefaultPreemption and Reclaim, it brings
// a preemption.Policy and lets the preemption library's Evaluator run
// it through the RoomMaker the scheduler hands it.
type TakeBack struct{}

func (TakeBack) Name() string { return "TakeBack" }

func (p TakeBack) PostFilter(ctx context.Context, state *framework.CycleState, job *framework.Job, room framework.RoomMaker) (*framework.PostFilterResult, *framework.Status) {
	return preemption.Evaluator{Policy: p}.PostFilter(ctx, state, job, room)
}

// Bounds lets any borrowed pod go, on every node, without a budget.
func (TakeBack) Bounds(context.Context, *framework.Job, framework.RoomMaker) (preemption.SearchBounds, *framework.Status) {
	return preemption.SearchBounds{Victims: func(t *framework.TaskInfo) bool {
		return t.GetLabels()["acme.example/borrowed"] == "true"
	}}, nil
}

func (TakeBack) Messages(*framework.Job) preemption.Messages {
	return preemption.Messages{
		Action:    "take-back",
		Waiting:   "take-back: waiting for %d evicted pods to go",
		Unhelpful: "nothing borrowed to take back",
		Evicting:  "take-back: evicting %d borrowed pods",
	}
}

// room stands in for the preemption engine's RoomMaker: it counts the running
// pods the policy lets go.
type room struct{ running []*framework.TaskInfo }

func (r room) MakeRoom(_ context.Context, policy framework.VictimPolicy) (framework.RoomOutcome, error) {
	n := 0
	for _, t := range r.running {
		if policy(t) {
			n++
		}
	}
	return framework.RoomOutcome{Fits: n > 0, Victims: n}, nil
}

// MakeRoomWithin ignores the budget: the example sets none.
func (r room) MakeRoomWithin(ctx context.Context, policy framework.VictimPolicy, _ framework.VictimBudget) (framework.RoomOutcome, error) {
	return r.MakeRoom(ctx, policy)
}

// WithSample is the room itself: the example has no nodes to sample.
func (r room) WithSample(framework.CandidateSample) framework.RoomMaker { return r }

// Reserve reserves nothing: the plugins under test do not reserve.
func (r room) Reserve(context.Context, framework.ReservePolicy) (framework.Reservation, error) {
	return framework.Reservation{}, nil
}

// Release has nothing to release.
func (r room) Release(context.Context, framework.JobID) {}

// Job knows no jobs: the example's policy looks at pods only.
func (r room) Job(framework.JobID) (*framework.JobInfo, bool) { return nil, false }

func Example_aSecondPostFilterPlugin() {
	running := []*framework.TaskInfo{
		{Pod: st.MakePod().Name("lent").Label("acme.example/borrowed", "true").Obj()},
		{Pod: st.MakePod().Name("own").Obj()},
	}
	job := &framework.Job{ID: framework.JobID{Namespace: "team-a", Name: "train", Gang: true}, MinAvailable: 1,
		Pending: []*v1.Pod{st.MakePod().Name("train-0").Obj()}}
	res, status := TakeBack{}.PostFilter(context.Background(), framework.NewCycleState(), job, room{running: running})
	fmt.Println(status.IsSuccess(), res.Message)
	// Output: true take-back: evicting 1 borrowed pods
}
