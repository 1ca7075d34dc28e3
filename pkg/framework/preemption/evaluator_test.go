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

package preemption

import (
	"context"
	"errors"
	"testing"

	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
)

// recordingRoom answers out, err and records how it was asked.
type recordingRoom struct {
	out      framework.RoomOutcome
	err      error
	sample   framework.CandidateSample
	sampled  bool
	budget   framework.VictimBudget
	budgeted bool
	calls    int
}

func (r *recordingRoom) MakeRoom(context.Context, framework.VictimPolicy) (framework.RoomOutcome, error) {
	r.calls++
	return r.out, r.err
}

func (r *recordingRoom) MakeRoomWithin(_ context.Context, _ framework.VictimPolicy, b framework.VictimBudget) (framework.RoomOutcome, error) {
	r.calls++
	r.budget, r.budgeted = b, true
	return r.out, r.err
}

func (r *recordingRoom) Job(framework.JobID) (*framework.JobInfo, bool) { return nil, false }

func (r *recordingRoom) WithSample(s framework.CandidateSample) framework.RoomMaker {
	r.sample, r.sampled = s, true
	return r
}

// Reserve reserves nothing: the plugins under test do not reserve.
func (r *recordingRoom) Reserve(context.Context, framework.ReservePolicy) (framework.Reservation, error) {
	return framework.Reservation{}, nil
}

// Release has nothing to release.
func (r *recordingRoom) Release(context.Context, framework.JobID) {}

// fixedPolicy returns bounds and decline, with fixed messages.
type fixedPolicy struct {
	bounds  SearchBounds
	decline *framework.Status
}

func (p fixedPolicy) Bounds(context.Context, *framework.Job, framework.RoomMaker) (SearchBounds, *framework.Status) {
	return p.bounds, p.decline
}

func (fixedPolicy) Messages(*framework.Job) Messages {
	return Messages{Action: "test", Waiting: "test: waiting for %d", Unhelpful: "nothing helps", Evicting: "test: evicting %d"}
}

type noBudget struct{}

func (noBudget) Group(*framework.TaskInfo) string              { return "" }
func (noBudget) Allows(string, framework.ResourceAmounts) bool { return true }

// The Evaluator asks the room the way the policy's bounds say and words
// every outcome the same way for every policy.
func TestEvaluator(t *testing.T) {
	anyPod := func(*framework.TaskInfo) bool { return true }
	job := &framework.Job{ID: framework.JobID{Namespace: "default", Name: "j"}}
	tests := []struct {
		name    string
		policy  fixedPolicy
		out     framework.RoomOutcome
		err     error
		wantMsg string
		// wantCode is the status code; -1 for success.
		wantCode framework.Code
		wantCall bool
	}{
		{name: "declined", policy: fixedPolicy{decline: framework.NewStatus(framework.UnschedulableAndUnresolvable, "never")},
			wantCode: framework.UnschedulableAndUnresolvable},
		{name: "evicting", policy: fixedPolicy{bounds: SearchBounds{Victims: anyPod}}, out: framework.RoomOutcome{Fits: true, Victims: 3},
			wantMsg: "test: evicting 3", wantCode: -1, wantCall: true},
		{name: "waiting", policy: fixedPolicy{bounds: SearchBounds{Victims: anyPod}}, out: framework.RoomOutcome{Waiting: 2},
			wantMsg: "test: waiting for 2", wantCode: -1, wantCall: true},
		{name: "fits elsewhere", policy: fixedPolicy{bounds: SearchBounds{Victims: anyPod}}, out: framework.RoomOutcome{Fits: true},
			wantCode: -1, wantCall: true},
		{name: "unhelpful", policy: fixedPolicy{bounds: SearchBounds{Victims: anyPod}},
			wantMsg: "nothing helps", wantCode: framework.Unschedulable, wantCall: true},
		{name: "error", policy: fixedPolicy{bounds: SearchBounds{Victims: anyPod}}, err: errors.New("boom"),
			wantMsg: "test for job default/pod:j: boom", wantCode: framework.Error, wantCall: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			room := &recordingRoom{out: tt.out, err: tt.err}
			res, st := Evaluator{Policy: tt.policy}.PostFilter(context.Background(), framework.NewCycleState(), job, room)
			if (room.calls > 0) != tt.wantCall {
				t.Errorf("room asked %d times, want asked: %v", room.calls, tt.wantCall)
			}
			msg := ""
			if res != nil {
				msg = res.Message
			}
			if tt.wantCode == -1 {
				if !st.IsSuccess() || msg != tt.wantMsg {
					t.Errorf("PostFilter = %q, %v, want success with %q", msg, st, tt.wantMsg)
				}
				return
			}
			if st.Code() != tt.wantCode {
				t.Errorf("status %v, want code %v", st, tt.wantCode)
			}
			if tt.wantMsg != "" && st.Message() != tt.wantMsg && (st.AsError() == nil || st.AsError().Error() != tt.wantMsg) {
				t.Errorf("status %v, want message %q", st, tt.wantMsg)
			}
		})
	}

	t.Run("a sample goes through WithSample, a budget through MakeRoomWithin", func(t *testing.T) {
		room := &recordingRoom{out: framework.RoomOutcome{Fits: true, Victims: 1}}
		sample := framework.CandidateSample{Percentage: 10, Absolute: 5}
		Evaluator{Policy: fixedPolicy{bounds: SearchBounds{Victims: anyPod, Sample: sample}}}.PostFilter(context.Background(), nil, job, room)
		if !room.sampled || room.sample != sample || room.budgeted {
			t.Errorf("sampled %v with %+v, budget asked %v; want the sample and MakeRoom", room.sampled, room.sample, room.budgeted)
		}
		room = &recordingRoom{out: framework.RoomOutcome{Fits: true, Victims: 1}}
		Evaluator{Policy: fixedPolicy{bounds: SearchBounds{Victims: anyPod, Budget: noBudget{}}}}.PostFilter(context.Background(), nil, job, room)
		if room.sampled || !room.budgeted || room.budget == nil {
			t.Errorf("sampled %v, budget asked %v with %v; want MakeRoomWithin with the budget and no sample", room.sampled, room.budgeted, room.budget)
		}
	})
}
