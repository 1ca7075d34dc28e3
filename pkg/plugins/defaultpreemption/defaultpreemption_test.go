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

package defaultpreemption

import (
	"context"
	"errors"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/batch-scheduler/batch-scheduler/pkg/apis/config"
	"github.com/batch-scheduler/batch-scheduler/pkg/dialects"
	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
	st "github.com/batch-scheduler/batch-scheduler/pkg/testing"
)

// fakeRoom records the policy it was asked with and answers out, err.
type fakeRoom struct {
	calls  int
	policy framework.VictimPolicy
	out    framework.RoomOutcome
	err    error
	jobs   map[framework.JobID]*framework.JobInfo
	sample framework.CandidateSample
	// groupDisruption records WithGroupDisruption.
	groupDisruption bool
}

// WithGroupDisruption records that the plugin follows victim gangs'
// disruption modes.
func (r *fakeRoom) WithGroupDisruption() framework.RoomMaker {
	r.groupDisruption = true
	return r
}

// WithSample records the sample the plugin asked for.
func (r *fakeRoom) WithSample(s framework.CandidateSample) framework.RoomMaker {
	r.sample = s
	return r
}

// Reserve reserves nothing: the plugins under test do not reserve.
func (r *fakeRoom) Reserve(context.Context, framework.ReservePolicy) (framework.Reservation, error) {
	return framework.Reservation{}, nil
}

// Release has nothing to release.
func (r *fakeRoom) Release(context.Context, framework.JobID) {}

func (r *fakeRoom) MakeRoom(_ context.Context, policy framework.VictimPolicy) (framework.RoomOutcome, error) {
	r.calls++
	r.policy = policy
	return r.out, r.err
}

// MakeRoomWithin fails the test's expectations: preemption has no budget.
func (r *fakeRoom) MakeRoomWithin(context.Context, framework.VictimPolicy, framework.VictimBudget) (framework.RoomOutcome, error) {
	return framework.RoomOutcome{}, errors.New("DefaultPreemption asked for a victim budget")
}

// Job answers from jobs.
func (r *fakeRoom) Job(id framework.JobID) (*framework.JobInfo, bool) {
	j, ok := r.jobs[id]
	return j, ok
}

func job(pods ...*v1.Pod) *framework.Job {
	return &framework.Job{ID: framework.JobID{Namespace: "default", Name: "j", Gang: true}, MinAvailable: int32(len(pods)), Pending: pods}
}

func task(priority int32) *framework.TaskInfo {
	return &framework.TaskInfo{Pod: st.MakePod().Name("victim").Priority(priority).Obj()}
}

// The victim policy allows exactly the pods of strictly lower priority
// than the job's highest-priority pending pod.
func TestPolicyIsLowerPriority(t *testing.T) {
	room := &fakeRoom{out: framework.RoomOutcome{Fits: true, Victims: 2}}
	j := job(st.MakePod().Name("a").Priority(50).Obj(), st.MakePod().Name("b").Priority(100).Obj())
	res, s := (&DefaultPreemption{}).PostFilter(context.Background(), framework.NewCycleState(), j, room)
	if !s.IsSuccess() || res == nil || res.Message != "preemption: preempting 2 pods of lower priority" {
		t.Fatalf("PostFilter = %+v, %v", res, s)
	}
	for prio, want := range map[int32]bool{99: true, -5: true, 100: false, 101: false} {
		if got := room.policy(task(prio)); got != want {
			t.Errorf("a victim of priority %d allowed: %v, want %v", prio, got, want)
		}
	}
	// A pod without a priority counts as 0.
	if !room.policy(&framework.TaskInfo{Pod: st.MakePod().Name("none").Obj()}) {
		t.Error("a pod without priority is no victim of a job of priority 100")
	}
}

func TestOutcomes(t *testing.T) {
	never := v1.PreemptNever
	polite := st.MakePod().Name("polite").Priority(100).Obj()
	polite.Spec.PreemptionPolicy = &never
	for _, tt := range []struct {
		name      string
		job       *framework.Job
		room      fakeRoom
		wantCalls int
		wantCode  framework.Code
		wantMsg   string
	}{
		{name: "victims", job: job(st.MakePod().Name("a").Obj()), room: fakeRoom{out: framework.RoomOutcome{Fits: true, Victims: 3}},
			wantCalls: 1, wantCode: framework.Success, wantMsg: "preemption: preempting 3 pods of lower priority"},
		{name: "fits when placed differently", job: job(st.MakePod().Name("a").Obj()), room: fakeRoom{out: framework.RoomOutcome{Fits: true}},
			wantCalls: 1, wantCode: framework.Success},
		{name: "waiting", job: job(st.MakePod().Name("a").Obj()), room: fakeRoom{out: framework.RoomOutcome{Waiting: 2}},
			wantCalls: 1, wantCode: framework.Success, wantMsg: "preemption: waiting for 2 preempted pods to terminate"},
		{name: "cannot help", job: job(st.MakePod().Name("a").Obj()),
			wantCalls: 1, wantCode: framework.Unschedulable},
		{name: "error", job: job(st.MakePod().Name("a").Obj()), room: fakeRoom{err: errors.New("boom")},
			wantCalls: 1, wantCode: framework.Error},
		{name: "preemptionPolicy Never on one pod keeps the gang from preempting",
			job:      job(st.MakePod().Name("a").Priority(100).Obj(), polite),
			wantCode: framework.UnschedulableAndUnresolvable},
		{name: "a job with a validation error", job: func() *framework.Job {
			j := job(st.MakePod().Name("a").Obj())
			j.Err = errors.New("bad min-available")
			return j
		}(), wantCode: framework.UnschedulableAndUnresolvable},
	} {
		t.Run(tt.name, func(t *testing.T) {
			room := tt.room
			res, s := (&DefaultPreemption{}).PostFilter(context.Background(), framework.NewCycleState(), tt.job, &room)
			if room.calls != tt.wantCalls {
				t.Errorf("MakeRoom called %d times, want %d", room.calls, tt.wantCalls)
			}
			if s.Code() != tt.wantCode {
				t.Errorf("status %v, want code %v", s, tt.wantCode)
			}
			msg := ""
			if res != nil {
				msg = res.Message
			}
			if msg != tt.wantMsg {
				t.Errorf("message %q, want %q", msg, tt.wantMsg)
			}
			if tt.wantCode == framework.Error && !strings.Contains(s.Message(), "default/j") {
				t.Errorf("error %q does not name the job", s.Message())
			}
		})
	}
}

func TestArgs(t *testing.T) {
	for _, tt := range []struct {
		name    string
		args    string
		want    framework.CandidateSample
		wantErr string
		// groupDisruption is whether the search follows victim gangs'
		// disruption modes.
		groupDisruption bool
	}{
		{name: "none: kube-scheduler's defaults", want: framework.CandidateSample{Percentage: 10, Absolute: 100}},
		{name: "kube-scheduler's dumped args", args: "apiVersion: kubescheduler.config.k8s.io/v1\nkind: DefaultPreemptionArgs\nminCandidateNodesPercentage: 10\nminCandidateNodesAbsolute: 100\n",
			want: framework.CandidateSample{Percentage: 10, Absolute: 100}},
		{name: "every node", args: "minCandidateNodesPercentage: 100\n", want: framework.CandidateSample{Percentage: 100, Absolute: 100}},
		{name: "absolute only", args: "minCandidateNodesPercentage: 0\nminCandidateNodesAbsolute: 5\n", want: framework.CandidateSample{Absolute: 5}},
		{name: "both zero", args: "minCandidateNodesPercentage: 0\nminCandidateNodesAbsolute: 0\n", wantErr: "cannot both be 0"},
		{name: "percentage above 100", args: "minCandidateNodesPercentage: 101\n", wantErr: "minCandidateNodesPercentage: 101"},
		{name: "disruption modes honoured", args: "honorPodGroupDisruptionMode: true\n", want: framework.CandidateSample{Percentage: 10, Absolute: 100}, groupDisruption: true},
		{name: "disruption modes not honoured", args: "honorPodGroupDisruptionMode: false\n", want: framework.CandidateSample{Percentage: 10, Absolute: 100}},
		{name: "disruption mode as a string", args: "honorPodGroupDisruptionMode: single\n", wantErr: "honorPodGroupDisruptionMode"},
		{name: "negative absolute", args: "minCandidateNodesAbsolute: -1\n", wantErr: "minCandidateNodesAbsolute: -1"},
		{name: "an unknown field", args: "priorityThreshold: 5\n", wantErr: "priorityThreshold"},
		{name: "another plugin's kind", args: "apiVersion: kubescheduler.config.k8s.io/v1\nkind: NodeResourcesFitArgs\n", wantErr: "NodeResourcesFitArgs"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var r runtime.Object
			if tt.args != "" {
				r = config.NewRawArgs("sched.yaml", []byte(tt.args))
			}
			p, err := New(context.Background(), r, nil)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !strings.Contains(err.Error(), Name) {
					t.Fatalf("New = %v, want an error naming %s and %q", err, Name, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("New: %v", err)
			}
			if got := p.(*DefaultPreemption).sample; got != tt.want {
				t.Errorf("sample = %+v, want %+v", got, tt.want)
			}
			// The plugin hands its sample to the victim search.
			room := &fakeRoom{out: framework.RoomOutcome{Fits: true, Victims: 1}}
			if _, s := p.(*DefaultPreemption).PostFilter(context.Background(), framework.NewCycleState(), job(st.MakePod().Name("a").Priority(5).Obj()), room); !s.IsSuccess() {
				t.Fatalf("PostFilter: %v", s)
			}
			if room.sample != tt.want {
				t.Errorf("the room was asked with sample %+v, want %+v", room.sample, tt.want)
			}
			if room.groupDisruption != tt.groupDisruption {
				t.Errorf("the room followed victim gangs' disruption modes: %v, want %v", room.groupDisruption, tt.groupDisruption)
			}
		})
	}
}

func TestCandidateSampleLimit(t *testing.T) {
	for _, tt := range []struct {
		s     framework.CandidateSample
		nodes int
		want  int
	}{
		{framework.CandidateSample{}, 5000, 5000},
		{framework.CandidateSample{Percentage: 10, Absolute: 100}, 5000, 500},
		{framework.CandidateSample{Percentage: 10, Absolute: 100}, 500, 100},
		{framework.CandidateSample{Percentage: 10, Absolute: 100}, 40, 40},
		{framework.CandidateSample{Percentage: 100, Absolute: 1}, 7, 7},
		{framework.CandidateSample{Absolute: 3}, 7, 3},
		{framework.CandidateSample{Percentage: 10, Absolute: 100}, 0, 0},
	} {
		if got := tt.s.Limit(tt.nodes); got != tt.want {
			t.Errorf("%+v.Limit(%d) = %d, want %d", tt.s, tt.nodes, got, tt.want)
		}
	}
}

// With queues, priority counts within a queue: a lower-priority pod of
// another queue is Reclaim's to take, by its rule, not preemption's.
func TestPolicyKeepsToTheJobsQueue(t *testing.T) {
	running := func(name, queue string) *framework.JobInfo {
		j := framework.NewJobInfo(framework.JobID{Namespace: "default", Name: name, Gang: true})
		j.QueueAccount = queue
		return j
	}
	same, other := running("same", "team-a"), running("other", "team-b")
	// Not yet accounted by the cache: its pods name its queue.
	labelled := framework.NewJobInfo(framework.JobID{Namespace: "default", Name: "labelled", Gang: true})
	labelled.SetTask(framework.NewTaskInfo(st.MakePod().Name("labelled-0").Group("labelled").
		Label(framework.QueueLabel, "team-a").Node("node-1").Obj(), dialects.Resolver()))
	unknown := running("unknown", "team-a")
	room := &fakeRoom{out: framework.RoomOutcome{Fits: true, Victims: 1},
		jobs: map[framework.JobID]*framework.JobInfo{same.ID: same, other.ID: other, labelled.ID: labelled}}
	j := job(st.MakePod().Name("a").Priority(100).Obj())
	j.Queue = "team-a"
	j.Queues = &framework.QueueSnapshot{Queues: map[string]*framework.QueueState{}}
	if _, s := (&DefaultPreemption{}).PostFilter(context.Background(), framework.NewCycleState(), j, room); !s.IsSuccess() {
		t.Fatalf("PostFilter = %v, want success", s)
	}
	victimOf := func(job *framework.JobInfo, priority int32) *framework.TaskInfo {
		return &framework.TaskInfo{Pod: st.MakePod().Name(job.ID.Name + "-0").Priority(priority).Obj(), Job: job.ID}
	}
	for _, tt := range []struct {
		name     string
		job      *framework.JobInfo
		priority int32
		want     bool
	}{
		{name: "lower priority, same queue", job: same, priority: 10, want: true},
		{name: "lower priority, same queue named by its pods", job: labelled, priority: 10, want: true},
		{name: "lower priority, another queue", job: other, priority: 10, want: false},
		{name: "same priority, same queue", job: same, priority: 100, want: false},
		{name: "lower priority, a job the RoomMaker does not know", job: unknown, priority: 10, want: false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := room.policy(victimOf(tt.job, tt.priority)); got != tt.want {
				t.Errorf("victim allowed: %v, want %v", got, tt.want)
			}
		})
	}
	// Without queues the queue is not looked at.
	j.Queues = nil
	room = &fakeRoom{out: framework.RoomOutcome{Fits: true, Victims: 1}}
	(&DefaultPreemption{}).PostFilter(context.Background(), framework.NewCycleState(), j, room)
	if !room.policy(victimOf(other, 10)) {
		t.Error("without queues, a lower-priority victim the RoomMaker does not know is refused")
	}
}
