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

package capacity

import (
	"context"
	"errors"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	configapi "github.com/batch-scheduler/batch-scheduler/pkg/apis/config"
	"github.com/batch-scheduler/batch-scheduler/pkg/dialects"
	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
	st "github.com/batch-scheduler/batch-scheduler/pkg/testing"
)

// fakeRoom records the policy it was asked with and answers out, err; it
// knows the jobs in jobs.
type fakeRoom struct {
	calls  int
	policy framework.VictimPolicy
	budget framework.VictimBudget
	out    framework.RoomOutcome
	err    error
	jobs   map[framework.JobID]*framework.JobInfo
}

func (r *fakeRoom) MakeRoom(ctx context.Context, policy framework.VictimPolicy) (framework.RoomOutcome, error) {
	return r.MakeRoomWithin(ctx, policy, nil)
}

func (r *fakeRoom) MakeRoomWithin(_ context.Context, policy framework.VictimPolicy, budget framework.VictimBudget) (framework.RoomOutcome, error) {
	r.calls++
	r.policy, r.budget = policy, budget
	return r.out, r.err
}

// WithSample fails the test's expectations: Reclaim searches every node.
func (r *fakeRoom) WithSample(framework.CandidateSample) framework.RoomMaker {
	panic("Reclaim asked for a candidate sample")
}

// Reserve reserves nothing: the plugins under test do not reserve.
func (r *fakeRoom) Reserve(context.Context, framework.ReservePolicy) (framework.Reservation, error) {
	return framework.Reservation{}, nil
}

// Release has nothing to release.
func (r *fakeRoom) Release(context.Context, framework.JobID) {}

func (r *fakeRoom) Job(id framework.JobID) (*framework.JobInfo, bool) {
	j, ok := r.jobs[id]
	return j, ok
}

func TestReclaimPostFilter(t *testing.T) {
	fits := fakeRoom{out: framework.RoomOutcome{Fits: true, Victims: 3}}
	tests := []struct {
		name          string
		guaranteeOnly bool
		job           *framework.Job
		room          fakeRoom
		wantCalls     int
		wantCode      framework.Code
		wantMsg       string // of the status, or of the result on success
	}{
		{
			name:     "no queues",
			job:      job(framework.DefaultQueue, nil, 1, cpuPod("p", "1")),
			room:     fits,
			wantCode: framework.UnschedulableAndUnresolvable,
		},
		{
			name: "a job with a validation error",
			job: func() *framework.Job {
				j := job("a", snapshot(cores(8), queue("a", "")), 1, cpuPod("p", "1"))
				j.Err = errors.New("bad min-available")
				return j
			}(),
			room:     fits,
			wantCode: framework.UnschedulableAndUnresolvable,
		},
		{
			name:     "nothing pending",
			job:      job("a", snapshot(cores(8), queue("a", "")), 1),
			room:     fits,
			wantCode: framework.UnschedulableAndUnresolvable,
		},
		{
			name:     "a queue that does not exist",
			job:      job("team-x", snapshot(cores(8), queue("a", "")), 1, cpuPod("p", "1")),
			room:     fits,
			wantCode: framework.UnschedulableAndUnresolvable,
		},
		{
			name: "the reclaimer would exceed its fair share",
			job: job("a", snapshot(cores(8), queue("a", "", fairShare(cores(4)), allocated(cores(3)))), 2,
				cpuPod("p0", "1"), cpuPod("p1", "1")),
			room:     fits,
			wantCode: framework.Unschedulable,
			wantMsg:  "queue a would exceed its fair share (cpu 5/4): nothing to reclaim",
		},
		{
			name: "an ancestor of the reclaimer would exceed its fair share",
			job: job("x", snapshot(cores(8),
				queue("org", "", fairShare(cores(4)), allocated(cores(4))),
				queue("x", "org", fairShare(cores(4)))), 1, cpuPod("p0", "2")),
			room:     fits,
			wantCode: framework.Unschedulable,
			wantMsg:  "queue org would exceed its fair share (cpu 6/4): nothing to reclaim",
		},
		{
			name: "a resource without a fair share is bounded at zero",
			job: job("a", snapshot(cores(8), queue("a", "", fairShare(cores(4)))), 1,
				pod("p0", map[v1.ResourceName]string{gpu: "1"})),
			room:     fits,
			wantCode: framework.Unschedulable,
			wantMsg:  "queue a would exceed its fair share (nvidia.com/gpu 1/0): nothing to reclaim",
		},
		{
			name: "within the fair share, above the guarantee",
			job: job("a", snapshot(cores(8), queue("a", "", fairShare(cores(10)), guaranteed(cores(2)), allocated(cores(1)))), 1,
				cpuPod("p0", "2")),
			room:      fits,
			wantCalls: 1,
			wantCode:  framework.Success,
			wantMsg:   "reclaim: queue a takes back 3 pods from queues above their fair share",
		},
		{
			name:          "below: Guarantee, the reclaimer would exceed its guarantee",
			guaranteeOnly: true,
			job: job("a", snapshot(cores(8), queue("a", "", fairShare(cores(10)), guaranteed(cores(2)), allocated(cores(1)))), 1,
				cpuPod("p0", "2")),
			room:     fits,
			wantCode: framework.Unschedulable,
			wantMsg:  "queue a would exceed its guarantee (cpu 3/2): nothing to reclaim",
		},
		{
			name:          "below: Guarantee, within the guarantee",
			guaranteeOnly: true,
			job: job("a", snapshot(cores(8), queue("a", "", fairShare(cores(10)), guaranteed(cores(2)))), 1,
				cpuPod("p0", "2")),
			room:      fits,
			wantCalls: 1,
			wantCode:  framework.Success,
			wantMsg:   "reclaim: queue a takes back 3 pods from queues above their fair share",
		},
		{
			name:      "waiting for earlier victims",
			job:       job("a", snapshot(cores(8), queue("a", "", fairShare(cores(4)))), 1, cpuPod("p0", "1")),
			room:      fakeRoom{out: framework.RoomOutcome{Waiting: 2}},
			wantCalls: 1,
			wantCode:  framework.Success,
			wantMsg:   "reclaim: waiting for 2 reclaimed pods to terminate",
		},
		{
			name:      "nothing to reclaim makes room",
			job:       job("a", snapshot(cores(8), queue("a", "", fairShare(cores(4)))), 1, cpuPod("p0", "1")),
			wantCalls: 1,
			wantCode:  framework.Unschedulable,
			wantMsg:   "no queue above its fair share whose pods' eviction makes room",
		},
		{
			name:      "fits without victims",
			job:       job("a", snapshot(cores(8), queue("a", "", fairShare(cores(4)))), 1, cpuPod("p0", "1")),
			room:      fakeRoom{out: framework.RoomOutcome{Fits: true}},
			wantCalls: 1,
			wantCode:  framework.Success,
		},
		{
			name:      "an error",
			job:       job("a", snapshot(cores(8), queue("a", "", fairShare(cores(4)))), 1, cpuPod("p0", "1")),
			room:      fakeRoom{err: errors.New("boom")},
			wantCalls: 1,
			wantCode:  framework.Error,
			wantMsg:   "reclaim for job default/train: boom",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			room := tt.room
			res, s := (&Reclaim{guaranteeOnly: tt.guaranteeOnly}).PostFilter(context.Background(), framework.NewCycleState(), tt.job, &room)
			if room.calls != tt.wantCalls {
				t.Errorf("MakeRoom called %d times, want %d", room.calls, tt.wantCalls)
			}
			msg := s.Message()
			if res != nil {
				msg = res.Message
			}
			if s.Code() != tt.wantCode || msg != tt.wantMsg {
				t.Errorf("PostFilter = %+v, %v, want %v: %q", res, s, tt.wantCode, tt.wantMsg)
			}
			if s.IsSuccess() && res == nil {
				t.Error("success without a result")
			}
		})
	}
}

// victimJob is a running job accounted to queue q.
func victimJob(name, q string) *framework.JobInfo {
	j := framework.NewJobInfo(framework.JobID{Namespace: "other", Name: name, Gang: true})
	j.QueueAccount = q
	return j
}

// victim is a running pod of j.
func victim(j *framework.JobInfo) *framework.TaskInfo {
	return &framework.TaskInfo{Pod: st.MakePod().Namespace("other").Name(j.ID.Name + "-0").Node("node-1").Obj(),
		Job: j.ID, Status: framework.TaskBound, NodeName: "node-1", Counted: true, Own: true}
}

// The victim policy Reclaim hands to MakeRoom allows the pods of the
// queues that compete with the reclaimer's and use more than their fair
// share of what the job needs, and that may be reclaimed.
func TestReclaimVictimPolicy(t *testing.T) {
	gi := int64(1 << 30)
	flat := snapshot(cores(16),
		queue("a", "", fairShare(cores(4))),
		queue("over", "", fairShare(cores(4)), allocated(cores(6))),
		queue("at", "", fairShare(cores(4)), allocated(cores(4))),
		queue("below", "", fairShare(cores(4)), allocated(cores(1))),
		queue("kept", "", notReclaimable, fairShare(cores(4)), allocated(cores(6))),
		queue("memory", "", fairShare(framework.ResourceAmounts{v1.ResourceCPU: 4000, v1.ResourceMemory: gi}),
			allocated(framework.ResourceAmounts{v1.ResourceCPU: 1000, v1.ResourceMemory: 4 * gi})),
	)
	tests := []struct {
		name  string
		queue string
		want  bool
	}{
		{name: "a sibling over its fair share", queue: "over", want: true},
		{name: "the reclaimer's own queue", queue: "a", want: false},
		{name: "a sibling at its fair share", queue: "at", want: false},
		{name: "a sibling below its fair share", queue: "below", want: false},
		{name: "a sibling over its fair share that is not reclaimable", queue: "kept", want: false},
		{name: "a sibling over its fair share of a resource the job does not need", queue: "memory", want: false},
		{name: "a queue that does not exist", queue: "gone", want: false},
	}
	room := &fakeRoom{out: framework.RoomOutcome{Fits: true, Victims: 1}, jobs: map[framework.JobID]*framework.JobInfo{}}
	for _, tt := range tests {
		j := victimJob("in-"+tt.queue, tt.queue)
		room.jobs[j.ID] = j
	}
	if _, s := (&Reclaim{}).PostFilter(context.Background(), framework.NewCycleState(),
		job("a", flat, 1, cpuPod("p0", "2")), room); !s.IsSuccess() || room.policy == nil {
		t.Fatalf("PostFilter = %v with MakeRoom called %d times, want success after MakeRoom", s, room.calls)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := room.policy(victim(room.jobs[framework.JobID{Namespace: "other", Name: "in-" + tt.queue, Gang: true}])); got != tt.want {
				t.Errorf("a pod of queue %s may be evicted: %v, want %v", tt.queue, got, tt.want)
			}
		})
	}
	t.Run("a job the RoomMaker does not know", func(t *testing.T) {
		unknown := victimJob("unknown", "over")
		if room.policy(victim(unknown)) {
			t.Error("a pod of an unknown job may be evicted")
		}
	})
	t.Run("a job whose queue its pods name", func(t *testing.T) {
		// Not yet accounted by the cache: its queue is the one its pods
		// name.
		j := framework.NewJobInfo(framework.JobID{Namespace: "other", Name: "labelled", Gang: true})
		j.SetTask(framework.NewTaskInfo(st.MakePod().Namespace("other").Name("labelled-0").Group("labelled").
			Label(framework.QueueLabel, "over").Node("node-1").Obj(), dialects.Resolver()))
		room.jobs[j.ID] = j
		if !room.policy(victim(j)) {
			t.Error("a pod of a job of queue over, named by its pods, may not be evicted")
		}
	})
}

// Between subtrees, it is the competing ancestors that are compared: the
// children of the first queue where the reclaimer's path and the
// victim's part.
func TestReclaimVictimPolicyHierarchy(t *testing.T) {
	// a/x reclaims; b/y runs.
	tests := []struct {
		name string
		a, b []queueOpt
		x, y []queueOpt
		want bool
	}{
		{
			name: "the competing ancestor over its share, the victim's queue within",
			b:    []queueOpt{fairShare(cores(4)), allocated(cores(6))},
			y:    []queueOpt{fairShare(cores(6)), allocated(cores(6))},
			want: true,
		},
		{
			name: "the competing ancestor within its share, the victim's queue over",
			b:    []queueOpt{fairShare(cores(8)), allocated(cores(6))},
			y:    []queueOpt{fairShare(cores(2)), allocated(cores(6))},
			want: false,
		},
		{
			name: "the competing ancestor over its share but not reclaimable",
			b:    []queueOpt{notReclaimable, fairShare(cores(4)), allocated(cores(6))},
			y:    []queueOpt{fairShare(cores(6)), allocated(cores(6))},
			want: false,
		},
		{
			name: "the competing ancestor over its share, the victim's queue not reclaimable",
			b:    []queueOpt{fairShare(cores(4)), allocated(cores(6))},
			y:    []queueOpt{notReclaimable, fairShare(cores(6)), allocated(cores(6))},
			want: false,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			qs := snapshot(cores(16),
				queue("a", "", append([]queueOpt{fairShare(cores(8))}, tt.a...)...),
				queue("x", "a", append([]queueOpt{fairShare(cores(8))}, tt.x...)...),
				queue("b", "", tt.b...),
				queue("y", "b", tt.y...),
			)
			v := victimJob("v", "y")
			room := &fakeRoom{out: framework.RoomOutcome{Fits: true, Victims: 1}, jobs: map[framework.JobID]*framework.JobInfo{v.ID: v}}
			if _, s := (&Reclaim{}).PostFilter(context.Background(), framework.NewCycleState(), job("x", qs, 1, cpuPod("p0", "2")), room); !s.IsSuccess() || room.policy == nil {
				t.Fatalf("PostFilter = %v with MakeRoom called %d times, want success after MakeRoom", s, room.calls)
			}
			if got := room.policy(victim(v)); got != tt.want {
				t.Errorf("a pod of b/y may be evicted for a/x: %v, want %v", got, tt.want)
			}
		})
	}
	// Within one parent, the siblings compete themselves.
	t.Run("siblings under one parent", func(t *testing.T) {
		qs := snapshot(cores(16),
			queue("a", "", fairShare(cores(16)), allocated(cores(8))),
			queue("x", "a", fairShare(cores(8))),
			queue("w", "a", fairShare(cores(4)), allocated(cores(6))),
			queue("z", "a", fairShare(cores(4)), allocated(cores(2))),
		)
		w, z := victimJob("w", "w"), victimJob("z", "z")
		room := &fakeRoom{out: framework.RoomOutcome{Fits: true, Victims: 1}, jobs: map[framework.JobID]*framework.JobInfo{w.ID: w, z.ID: z}}
		if _, s := (&Reclaim{}).PostFilter(context.Background(), framework.NewCycleState(), job("x", qs, 1, cpuPod("p0", "2")), room); !s.IsSuccess() {
			t.Fatalf("PostFilter = %v, want success", s)
		}
		if !room.policy(victim(w)) {
			t.Error("a pod of a/w, over its share, may not be evicted for a/x")
		}
		if room.policy(victim(z)) {
			t.Error("a pod of a/z, within its share, may be evicted for a/x")
		}
	})
}

func TestNewReclaim(t *testing.T) {
	tests := []struct {
		name              string
		args              string
		wantGuaranteeOnly bool
		wantErr           []string
	}{
		{name: "no args"},
		{name: "FairShare", args: "below: FairShare"},
		{name: "Guarantee", args: "below: Guarantee", wantGuaranteeOnly: true},
		{name: "an unknown below", args: "below: Sometimes", wantErr: []string{"Reclaim args", `"Sometimes"`, "FairShare, Guarantee"}},
		{name: "an unknown field", args: "bellow: Guarantee", wantErr: []string{"Reclaim args", "bellow"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var args runtime.Object
			if tt.args != "" {
				args = configapi.NewRawArgs("", []byte(tt.args))
			}
			p, err := NewReclaim(context.Background(), args, nil)
			if len(tt.wantErr) > 0 {
				if err == nil {
					t.Fatalf("NewReclaim(%q) = %v, want an error", tt.args, p)
				}
				for _, w := range tt.wantErr {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error %q does not contain %q", err, w)
					}
				}
				return
			}
			if err != nil {
				t.Fatalf("NewReclaim(%q): %v", tt.args, err)
			}
			if r := p.(*Reclaim); r.guaranteeOnly != tt.wantGuaranteeOnly || r.Name() != ReclaimName {
				t.Errorf("NewReclaim(%q) = %+v named %s, want guaranteeOnly %v named %s", tt.args, r, r.Name(), tt.wantGuaranteeOnly, ReclaimName)
			}
		})
	}
}

// Reclaim's victim budget groups a victim by the queue that competes with
// the reclaimer's, and lets that queue lose pods while, without what it is
// giving back (terminating pods) and what the victims chosen so far take,
// it is still above its fair share of what the job needs.
func TestReclaimVictimBudget(t *testing.T) {
	qs := snapshot(cores(16),
		queue("a", "", fairShare(cores(4))),
		queue("b", "", fairShare(cores(8)), allocated(cores(12))),
		queue("y", "b", fairShare(cores(8)), allocated(cores(12))),
		queue("c", "", fairShare(cores(4)), allocated(cores(6)), releasing(cores(2))),
	)
	y, c := victimJob("y", "y"), victimJob("c", "c")
	room := &fakeRoom{out: framework.RoomOutcome{Fits: true, Victims: 1}, jobs: map[framework.JobID]*framework.JobInfo{y.ID: y, c.ID: c}}
	if _, s := (&Reclaim{}).PostFilter(context.Background(), framework.NewCycleState(), job("a", qs, 1, cpuPod("p0", "2")), room); !s.IsSuccess() || room.budget == nil {
		t.Fatalf("PostFilter = %v with budget %v, want success after MakeRoomWithin with a budget", s, room.budget)
	}
	if g := room.budget.Group(victim(y)); g != "b" {
		t.Errorf("a pod of b/y counts against %q, want b (the queue that competes with a)", g)
	}
	for _, tt := range []struct {
		taken int64
		want  bool
	}{{0, true}, {3, true}, {4, false}, {5, false}} {
		if got := room.budget.Allows("b", cores(tt.taken)); got != tt.want {
			t.Errorf("b (12 cores of a fair share of 8) having lost %d cores may lose more: %v, want %v", tt.taken, got, tt.want)
		}
	}
	// c uses 6 of a fair share of 4 but gives 2 back already.
	if room.budget.Allows("c", nil) {
		t.Error("c, at its fair share once its terminating pods are gone, may lose more")
	}
	if room.policy(victim(c)) {
		t.Error("a pod of c, at its fair share once its terminating pods are gone, may be evicted")
	}
	if room.budget.Allows("gone", nil) {
		t.Error("a queue not in the snapshot may lose pods")
	}
}
