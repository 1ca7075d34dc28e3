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
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	configapi "github.com/batch-scheduler/batch-scheduler/pkg/apis/config"
	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
	st "github.com/batch-scheduler/batch-scheduler/pkg/testing"
)

const gpu v1.ResourceName = "nvidia.com/gpu"

// cores is an amount of CPU alone, in whole cores.
func cores(n int64) framework.ResourceAmounts {
	return framework.ResourceAmounts{v1.ResourceCPU: n * 1000}
}

// queueOpt sets a field of a hand-built queue.
type queueOpt func(*framework.QueueState)

func limit(a framework.ResourceAmounts) queueOpt {
	return func(q *framework.QueueState) { q.Limit = a }
}

func allocated(a framework.ResourceAmounts) queueOpt {
	return func(q *framework.QueueState) { q.Allocated = a }
}

func releasing(a framework.ResourceAmounts) queueOpt {
	return func(q *framework.QueueState) { q.Releasing = a }
}

func fairShare(a framework.ResourceAmounts) queueOpt {
	return func(q *framework.QueueState) { q.FairShare = a }
}

func guaranteed(a framework.ResourceAmounts) queueOpt {
	return func(q *framework.QueueState) { q.Guaranteed = a }
}

func entitlement(a framework.ResourceAmounts) queueOpt {
	return func(q *framework.QueueState) { q.Entitlement = a }
}

func noBorrow(q *framework.QueueState) { q.Borrow = false }

func notReclaimable(q *framework.QueueState) { q.Reclaimable = false }

// queue is a queue named name under parent ("" for the root) with the
// defaults of a Queue object: weight 1, may borrow, lend and be reclaimed.
func queue(name, parent string, opts ...queueOpt) *framework.QueueState {
	q := &framework.QueueState{QueueSpec: framework.QueueSpec{Name: name, Parent: parent, Weight: 1,
		Borrow: true, Lend: true, Reclaimable: true, Source: "Queue " + name}}
	for _, o := range opts {
		o(q)
	}
	return q
}

// snapshot holds queues with their Depth and Children filled in from their
// parents, as the cache would compute them.
func snapshot(capacity framework.ResourceAmounts, queues ...*framework.QueueState) *framework.QueueSnapshot {
	s := &framework.QueueSnapshot{Capacity: capacity, Queues: map[string]*framework.QueueState{}, Invalid: map[string]error{}}
	for _, q := range queues {
		s.Queues[q.Name] = q
	}
	for _, q := range queues {
		q.Depth = 1
		for p := q.Parent; p != ""; p = s.Queues[p].Parent {
			q.Depth++
		}
		if q.Parent != "" {
			parent := s.Queues[q.Parent]
			parent.Children = append(parent.Children, q.Name)
			slices.Sort(parent.Children)
		}
	}
	return s
}

// pod is a pending pod of the job requesting req.
func pod(name string, req map[v1.ResourceName]string) *v1.Pod {
	return st.MakePod().Name(name).Req(req).Obj()
}

func cpuPod(name, cpu string) *v1.Pod {
	return pod(name, map[v1.ResourceName]string{v1.ResourceCPU: cpu})
}

// job is a gang of queue q needing minAvailable of pods.
func job(q string, qs *framework.QueueSnapshot, minAvailable int32, pods ...*v1.Pod) *framework.Job {
	return &framework.Job{ID: framework.JobID{Namespace: "default", Name: "train", Gang: true},
		MinAvailable: minAvailable, Pending: pods, Queue: q, Queues: qs}
}

func TestPreFilter(t *testing.T) {
	tree := func() *framework.QueueSnapshot {
		return snapshot(cores(100),
			queue("org", "", limit(cores(4))),
			queue("a", "org"),
			queue("b", "org"),
		)
	}
	tests := []struct {
		name     string
		job      *framework.Job
		wantCode framework.Code
		wantMsg  string
	}{
		{
			name:     "no queues",
			job:      job(framework.DefaultQueue, nil, 1, cpuPod("p", "1000")),
			wantCode: framework.Success,
		},
		{
			name: "no queues: a gang larger than all the capacity can never start",
			job: func() *framework.Job {
				j := job(framework.DefaultQueue, nil, 2, cpuPod("p0", "3"), cpuPod("p1", "3"))
				j.Ceiling = cores(4)
				return j
			}(),
			wantCode: framework.UnschedulableAndUnresolvable,
			wantMsg:  "gang default/train can never start: its quorum (min-available 2) needs cpu 6 but this scheduler could use cpu 4 with every other pod gone",
		},
		{
			name: "no queues: a gang within the capacity",
			job: func() *framework.Job {
				j := job(framework.DefaultQueue, nil, 2, cpuPod("p0", "2"), cpuPod("p1", "2"))
				j.Ceiling = cores(4)
				return j
			}(),
			wantCode: framework.Success,
		},
		{
			name: "with queues: a single pod larger than the ceiling can never start",
			job: func() *framework.Job {
				j := job("a", snapshot(cores(100), queue("a", "")), 1, cpuPod("p0", "6"))
				j.ID = framework.JobID{Namespace: "default", Name: "pod:p0"}
				j.Ceiling = cores(4)
				return j
			}(),
			wantCode: framework.UnschedulableAndUnresolvable,
			wantMsg:  "the job can never start: it needs cpu 6 but this scheduler could use cpu 4 with every other pod gone",
		},
		{
			name: "no queues: a single pod keeps kube-scheduler's verdict",
			job: func() *framework.Job {
				j := job(framework.DefaultQueue, nil, 1, cpuPod("p0", "6"))
				j.Ceiling = cores(4)
				return j
			}(),
			wantCode: framework.Success,
		},
		{
			name: "unknown queue, named by a label",
			job: func() *framework.Job {
				j := job("team-x", tree(), 1, cpuPod("p", "1"))
				j.QueueVia = "label " + framework.QueueLabel
				return j
			}(),
			wantCode: framework.UnschedulableAndUnresolvable,
			wantMsg:  `queue "team-x" (named by label batch-scheduler.io/queue) does not exist`,
		},
		{
			name:     "unknown default queue, named by nothing",
			job:      job(framework.DefaultQueue, tree(), 1, cpuPod("p", "1")),
			wantCode: framework.UnschedulableAndUnresolvable,
			wantMsg:  `queue "default" does not exist`,
		},
		{
			name: "invalid queue",
			job: func() *framework.Job {
				qs := tree()
				qs.Invalid["team-x"] = errors.New(`parent "nope" does not exist`)
				j := job("team-x", qs, 1, cpuPod("p", "1"))
				j.QueueVia = "annotation " + framework.VolcanoQueueAnnotation
				return j
			}(),
			wantCode: framework.UnschedulableAndUnresolvable,
			wantMsg:  `queue "team-x" (named by annotation scheduling.volcano.sh/queue-name) is unusable: parent "nope" does not exist`,
		},
		{
			name:     "a queue with children takes no jobs",
			job:      job("org", tree(), 1, cpuPod("p", "1")),
			wantCode: framework.UnschedulableAndUnresolvable,
			wantMsg:  `queue "org" has child queues (a, b); jobs go in leaf queues`,
		},
		{
			name:     "fits the ancestor's limit",
			job:      job("a", tree(), 2, cpuPod("p0", "2"), cpuPod("p1", "2")),
			wantCode: framework.Success,
		},
		{
			name:     "can never start: the quorum exceeds the limit of an ancestor",
			job:      job("a", tree(), 3, cpuPod("p0", "2"), cpuPod("p1", "2"), cpuPod("p2", "2")),
			wantCode: framework.UnschedulableAndUnresolvable,
			wantMsg:  `the job can never start: it needs cpu 6 but queue "org" is limited to cpu 4`,
		},
		{
			name: "can never start: the quorum exceeds the queue's own limit",
			job: job("a", snapshot(cores(100), queue("a", "", limit(cores(1)))), 1,
				cpuPod("p0", "1500m")),
			wantCode: framework.UnschedulableAndUnresolvable,
			wantMsg:  `the job can never start: it needs cpu 1500m but queue "a" is limited to cpu 1`,
		},
		{
			name: "the quorum is the smallest pending pods",
			job: job("a", tree(), 2,
				cpuPod("big", "8"), cpuPod("p0", "2"), cpuPod("p1", "2")),
			wantCode: framework.Success,
		},
		{
			name: "a job whose quorum runs needs nothing more",
			job: func() *framework.Job {
				j := job("a", tree(), 2, cpuPod("big", "8"))
				j.Bound = 2
				return j
			}(),
			wantCode: framework.Success,
		},
		{
			name: "a limit that does not name the resource does not bound it",
			job: job("a", snapshot(cores(100), queue("a", "", limit(framework.ResourceAmounts{v1.ResourceMemory: 1 << 30}))), 1,
				cpuPod("p0", "50")),
			wantCode: framework.Success,
		},
		{
			name: "can never start: the quorum exceeds what the scheduler could use",
			job: func() *framework.Job {
				j := job("a", snapshot(cores(4), queue("a", "")), 3, cpuPod("p0", "2"), cpuPod("p1", "2"), cpuPod("p2", "2"))
				j.Ceiling = cores(4)
				return j
			}(),
			wantCode: framework.UnschedulableAndUnresolvable,
			wantMsg:  `gang default/train can never start: its quorum (min-available 3) needs cpu 6 but this scheduler could use cpu 4 with every other pod gone`,
		},
		{
			// Capacity is what is free for us; the job's own running pods
			// hold part of what it will use, so the comparison says nothing.
			name: "not against the capacity once some of the job runs",
			job: func() *framework.Job {
				j := job("a", snapshot(cores(4), queue("a", "")), 4, cpuPod("p0", "2"), cpuPod("p1", "2"), cpuPod("p2", "2"))
				j.Bound = 1
				j.Ceiling = cores(4)
				return j
			}(),
			wantCode: framework.Success,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := (&Capacity{}).PreFilter(context.Background(), framework.NewCycleState(), tt.job)
			if s.Code() != tt.wantCode || s.Message() != tt.wantMsg {
				t.Errorf("PreFilter = %v, want %v: %q", s, tt.wantCode, tt.wantMsg)
			}
		})
	}
}

// preFilterPod runs PreFilter for j (whatever it says: it records the job
// for the per-pod checks) and then PreFilterPod for p.
func preFilterPod(state *framework.CycleState, j *framework.Job, p *v1.Pod) *framework.Status {
	pl := &Capacity{}
	pl.PreFilter(context.Background(), state, j)
	return pl.PreFilterPod(context.Background(), state, p, nil)
}

func TestPreFilterPod(t *testing.T) {
	gi := int64(1 << 30)
	tests := []struct {
		name     string
		queues   *framework.QueueSnapshot
		queue    string
		pod      *v1.Pod
		wantCode framework.Code
		wantMsg  string
	}{
		{
			name:     "no queues",
			pod:      cpuPod("p", "1"),
			wantCode: framework.Skip,
		},
		{
			name:     "a queue that does not exist (PreFilter rejected the job)",
			queues:   snapshot(cores(8), queue("a", "")),
			queue:    "team-x",
			pod:      cpuPod("p", "1"),
			wantCode: framework.Skip,
		},
		{
			name:     "within the limit",
			queues:   snapshot(cores(8), queue("a", "", limit(cores(2)), allocated(cores(1)))),
			queue:    "a",
			pod:      cpuPod("p", "1"),
			wantCode: framework.Success,
		},
		{
			name:     "at the queue's limit",
			queues:   snapshot(cores(8), queue("a", "", limit(cores(2)), allocated(cores(2)))),
			queue:    "a",
			pod:      cpuPod("p", "1"),
			wantCode: framework.Unschedulable,
			wantMsg:  "queue a at its limit: cpu 2/2",
		},
		{
			name: "at an ancestor's limit",
			queues: snapshot(cores(8),
				queue("org", "", limit(cores(4)), allocated(cores(4))),
				queue("a", "org", allocated(cores(1))),
				queue("b", "org", allocated(cores(3))),
			),
			queue:    "a",
			pod:      cpuPod("p", "500m"),
			wantCode: framework.Unschedulable,
			wantMsg:  "queue org at its limit: cpu 4/4",
		},
		{
			name:     "a resource limited at zero",
			queues:   snapshot(cores(8), queue("a", "", limit(framework.ResourceAmounts{gpu: 0}))),
			queue:    "a",
			pod:      pod("p", map[v1.ResourceName]string{gpu: "1"}),
			wantCode: framework.Unschedulable,
			wantMsg:  "queue a at its limit: nvidia.com/gpu 0/0",
		},
		{
			// The limit was lowered below what runs; a pod that asks for
			// no memory takes none of it.
			name: "a resource the pod does not request is no reason",
			queues: snapshot(cores(8), queue("a", "",
				limit(framework.ResourceAmounts{v1.ResourceCPU: 4000, v1.ResourceMemory: gi}),
				allocated(framework.ResourceAmounts{v1.ResourceCPU: 1000, v1.ResourceMemory: 2 * gi}))),
			queue:    "a",
			pod:      cpuPod("p", "1"),
			wantCode: framework.Success,
		},
		{
			// cpu sorts before memory: the cpu over the limit, which the
			// pod does not ask for, must not hide the memory it does.
			name: "a resource the pod requests is checked past one it does not",
			queues: snapshot(cores(8), queue("a", "",
				limit(framework.ResourceAmounts{v1.ResourceCPU: 4000, v1.ResourceMemory: gi}),
				allocated(framework.ResourceAmounts{v1.ResourceCPU: 6000, v1.ResourceMemory: gi}))),
			queue:    "a",
			pod:      pod("p", map[v1.ResourceName]string{v1.ResourceMemory: "512Mi"}),
			wantCode: framework.Unschedulable,
			wantMsg:  "queue a at its limit: memory 1Gi/1Gi",
		},
		{
			name: "may borrow: above the entitlement",
			queues: snapshot(cores(8), queue("a", "",
				entitlement(cores(1)), guaranteed(cores(1)), allocated(cores(5)))),
			queue:    "a",
			pod:      cpuPod("p", "1"),
			wantCode: framework.Success,
		},
		{
			name: "may not borrow: within the entitlement, above the guarantee",
			queues: snapshot(cores(8), queue("a", "", noBorrow,
				entitlement(cores(3)), guaranteed(cores(1)), allocated(cores(2)))),
			queue:    "a",
			pod:      cpuPod("p", "1"),
			wantCode: framework.Success,
		},
		{
			name: "may not borrow: beyond the entitlement",
			queues: snapshot(cores(8), queue("a", "", noBorrow,
				entitlement(cores(3)), guaranteed(cores(1)), allocated(cores(2)))),
			queue:    "a",
			pod:      cpuPod("p", "2"),
			wantCode: framework.Unschedulable,
			wantMsg:  "queue a may not borrow beyond its share: cpu 2/3",
		},
		{
			name: "may not borrow: within the guarantee, above the entitlement",
			queues: snapshot(cores(8), queue("a", "", noBorrow,
				entitlement(cores(1)), guaranteed(cores(3)), allocated(cores(2)))),
			queue:    "a",
			pod:      cpuPod("p", "1"),
			wantCode: framework.Success,
		},
		{
			name: "may not borrow: beyond the guarantee",
			queues: snapshot(cores(8), queue("a", "", noBorrow,
				entitlement(cores(1)), guaranteed(cores(3)), allocated(cores(2)))),
			queue:    "a",
			pod:      cpuPod("p", "1500m"),
			wantCode: framework.Unschedulable,
			wantMsg:  "queue a may not borrow beyond its share: cpu 2/3",
		},
		{
			name: "may not borrow: a resource the pod does not request is no reason",
			queues: snapshot(cores(8), queue("a", "", noBorrow,
				entitlement(framework.ResourceAmounts{v1.ResourceCPU: 3000, v1.ResourceMemory: gi}),
				allocated(framework.ResourceAmounts{v1.ResourceCPU: 1000, v1.ResourceMemory: 4 * gi}))),
			queue:    "a",
			pod:      cpuPod("p", "1"),
			wantCode: framework.Success,
		},
		{
			name: "an ancestor that may not borrow",
			queues: snapshot(cores(8),
				queue("org", "", noBorrow, entitlement(cores(2)), allocated(cores(2))),
				queue("a", "org", allocated(cores(2))),
			),
			queue:    "a",
			pod:      cpuPod("p", "1"),
			wantCode: framework.Unschedulable,
			wantMsg:  "queue org may not borrow beyond its share: cpu 2/2",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			j := job(tt.queue, tt.queues, 1, tt.pod)
			s := preFilterPod(framework.NewCycleState(), j, tt.pod)
			if s.Code() != tt.wantCode || s.Message() != tt.wantMsg {
				t.Errorf("PreFilterPod = %v, want %v: %q", s, tt.wantCode, tt.wantMsg)
			}
		})
	}
}

// The pods the cycle reserved count against the queue's limit, until they
// are unreserved.
func TestPreFilterPodCountsReservedPods(t *testing.T) {
	ctx := context.Background()
	p0, p1, p2 := cpuPod("p0", "1"), cpuPod("p1", "1"), cpuPod("p2", "1")
	j := job("a", snapshot(cores(8), queue("a", "", limit(cores(2)))), 2, p0, p1, p2)
	pl := &Capacity{}
	state := framework.NewCycleState()
	if s := pl.PreFilter(ctx, state, j); !s.IsSuccess() {
		t.Fatalf("PreFilter = %v, want success", s)
	}
	for _, p := range []*v1.Pod{p0, p1} {
		if s := pl.PreFilterPod(ctx, state, p, nil); !s.IsSuccess() {
			t.Fatalf("PreFilterPod(%s) = %v, want success", p.Name, s)
		}
		if s := pl.Reserve(ctx, state, p, "node-1"); !s.IsSuccess() {
			t.Fatalf("Reserve(%s) = %v", p.Name, s)
		}
	}
	s := pl.PreFilterPod(ctx, state, p2, nil)
	if want := "queue a at its limit: cpu 2/2"; s.Code() != framework.Unschedulable || s.Message() != want {
		t.Errorf("PreFilterPod(p2) with p0 and p1 reserved = %v, want Unschedulable: %q", s, want)
	}
	pl.Unreserve(ctx, state, p1, "node-1")
	if s := pl.PreFilterPod(ctx, state, p2, nil); !s.IsSuccess() {
		t.Errorf("PreFilterPod(p2) after p1 was unreserved = %v, want success", s)
	}
	// A new cycle starts from nothing reserved.
	state = framework.NewCycleState()
	pl.PreFilter(ctx, state, j)
	if s := pl.PreFilterPod(ctx, state, p2, nil); !s.IsSuccess() {
		t.Errorf("PreFilterPod(p2) in a new cycle = %v, want success", s)
	}
}

// twoCoreCycle returns the plugin and a cycle state after its PreFilter
// of a job of pods (quorum 1) in queue a, limited to 2 cores of 8.
func twoCoreCycle(ctx context.Context, pods ...*v1.Pod) (*Capacity, *framework.CycleState) {
	pl := &Capacity{}
	state := framework.NewCycleState()
	pl.PreFilter(ctx, state, job("a", snapshot(cores(8), queue("a", "", limit(cores(2)))), 1, pods...))
	return pl, state
}

// A clone of the cycle state (the victim search takes one per node) holds
// what was reserved when it was taken, and what either reserves after
// does not reach the other, whether or not anything was reserved before.
func TestReservedClone(t *testing.T) {
	ctx := context.Background()
	p0, p1, two := cpuPod("p0", "1"), cpuPod("p1", "1"), cpuPod("two", "2")
	pl, state := twoCoreCycle(ctx, p0, p1, two)
	empty := state.Clone()
	pl.Reserve(ctx, empty, p0, "node-1")
	if s := pl.PreFilterPod(ctx, state, two, nil); !s.IsSuccess() {
		t.Errorf("PreFilterPod(two) after the clone reserved p0 = %v, want success: the state reserved nothing", s)
	}
	pl.Reserve(ctx, state, p1, "node-1")
	held := state.Clone()
	pl.Unreserve(ctx, state, p1, "node-1")
	for name, st := range map[string]*framework.CycleState{"clone of nothing reserved, then p0": empty, "clone with p1 reserved": held} {
		if s := pl.PreFilterPod(ctx, st, two, nil); s.Code() != framework.Unschedulable || s.Message() != "queue a at its limit: cpu 1/2" {
			t.Errorf("%s: PreFilterPod(two) = %v, want Unschedulable: %q", name, s, "queue a at its limit: cpu 1/2")
		}
	}
	if s := pl.PreFilterPod(ctx, state, two, nil); !s.IsSuccess() {
		t.Errorf("PreFilterPod(two) after the state unreserved p1 = %v, want success", s)
	}
}

// Unreserve is idempotent (framework.ReservePlugin): unreserving a pod
// twice, or one never reserved, frees nothing it did not hold; reserving
// a pod twice holds its requests once.
func TestUnreserveIsIdempotent(t *testing.T) {
	ctx := context.Background()
	p0, p1, big := cpuPod("p0", "1"), cpuPod("p1", "1"), cpuPod("big", "2")
	pl, state := twoCoreCycle(ctx, p0, p1, big)
	pl.Reserve(ctx, state, p0, "node-1")
	pl.Reserve(ctx, state, p1, "node-1")
	pl.Unreserve(ctx, state, p0, "node-1")
	pl.Unreserve(ctx, state, p0, "node-1")
	pl.Unreserve(ctx, state, big, "node-1")
	// p1 still holds 1 core of 2.
	if s := pl.PreFilterPod(ctx, state, big, nil); s.Code() != framework.Unschedulable || s.Message() != "queue a at its limit: cpu 1/2" {
		t.Errorf("PreFilterPod(big) with p1 reserved = %v, want Unschedulable: %q", s, "queue a at its limit: cpu 1/2")
	}
	pl.Reserve(ctx, state, p1, "node-1")
	if s := pl.PreFilterPod(ctx, state, p0, nil); !s.IsSuccess() {
		t.Errorf("PreFilterPod(p0) with p1 reserved twice = %v, want success", s)
	}
}

// The binds of a job's pods run in parallel, and each failed one
// unreserves its pod: Unreserve must be safe for concurrent use.
func TestUnreserveConcurrently(t *testing.T) {
	ctx := context.Background()
	var pods []*v1.Pod
	for _, name := range []string{"p0", "p1", "p2", "p3", "p4", "p5", "p6", "p7"} {
		pods = append(pods, cpuPod(name, "1"))
	}
	j := job("a", snapshot(cores(100), queue("a", "", limit(cores(8)))), 1, pods...)
	pl := &Capacity{}
	state := framework.NewCycleState()
	pl.PreFilter(ctx, state, j)
	for _, p := range pods {
		pl.Reserve(ctx, state, p, "node-1")
	}
	var wg sync.WaitGroup
	for _, p := range pods {
		wg.Add(1)
		go func() {
			defer wg.Done()
			pl.Unreserve(ctx, state, p, "node-1")
		}()
	}
	wg.Wait()
	if s := pl.PreFilterPod(ctx, state, cpuPod("all", "8"), nil); !s.IsSuccess() {
		t.Errorf("PreFilterPod of 8 cores with everything unreserved = %v, want success", s)
	}
}

func TestNew(t *testing.T) {
	tests := []struct {
		name    string
		args    string
		want    time.Duration
		wantErr []string
	}{
		{name: "no args", want: DefaultStarvationAfter},
		{name: "starvationAfter", args: "starvationAfter: 90s", want: 90 * time.Second},
		{name: "anti-starvation off", args: "starvationAfter: \"0\"", want: 0},
		{name: "not a duration", args: "starvationAfter: soon", wantErr: []string{"Capacity args", "starvationAfter", `"soon"`}},
		{name: "a negative duration", args: "starvationAfter: -1m", wantErr: []string{"Capacity args", "starvationAfter", `"-1m"`}},
		{name: "an unknown field", args: "limit: 3", wantErr: []string{"Capacity args", "limit"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var args runtime.Object
			if tt.args != "" {
				args = configapi.NewRawArgs("", []byte(tt.args))
			}
			p, err := New(context.Background(), args, nil)
			if len(tt.wantErr) > 0 {
				if err == nil {
					t.Fatalf("New(%q) = %+v, want an error", tt.args, p)
				}
				for _, w := range tt.wantErr {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error %q does not contain %q", err, w)
					}
				}
				return
			}
			if err != nil {
				t.Fatalf("New(%q): %v", tt.args, err)
			}
			if c := p.(*Capacity); c.starvationAfter != tt.want || c.Name() != Name || c.now == nil {
				t.Errorf("New(%q) = %+v named %s, want starvationAfter %v named %s with a clock", tt.args, c, c.Name(), tt.want, Name)
			}
		})
	}
}

// Once the first job of a queue that waits for room has waited
// starvationAfter, the jobs behind it in the queue's order wait too.
func TestPreFilterAntiStarvation(t *testing.T) {
	now := time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC)
	waiter := &framework.RoomWaiter{ID: framework.JobID{Namespace: "default", Name: "big", Gang: true}, Priority: 10, Since: now.Add(-10 * time.Minute)}
	tests := []struct {
		name     string
		after    time.Duration
		waiter   *framework.RoomWaiter
		priority int32
		since    time.Time
		self     bool
		wantMsg  string // "" for success
	}{
		{name: "no job waits for room", after: 5 * time.Minute, priority: 10, since: now},
		{name: "behind: same priority, younger", after: 5 * time.Minute, waiter: waiter, priority: 10, since: now,
			wantMsg: "job default/big of queue a has waited 10m0s for room; jobs behind it wait (anti-starvation)"},
		{name: "behind: lower priority, older", after: 5 * time.Minute, waiter: waiter, priority: 5, since: now.Add(-time.Hour),
			wantMsg: "job default/big of queue a has waited 10m0s for room; jobs behind it wait (anti-starvation)"},
		{name: "ahead: higher priority", after: 5 * time.Minute, waiter: waiter, priority: 20, since: now},
		{name: "ahead: same priority, older", after: 5 * time.Minute, waiter: waiter, priority: 10, since: now.Add(-time.Hour)},
		{name: "the waiter itself", after: 5 * time.Minute, waiter: waiter, priority: 10, since: waiter.Since, self: true},
		{name: "not waited long enough", after: 15 * time.Minute, waiter: waiter, priority: 10, since: now},
		{name: "exactly long enough", after: 10 * time.Minute, waiter: waiter, priority: 10, since: now,
			wantMsg: "job default/big of queue a has waited 10m0s for room; jobs behind it wait (anti-starvation)"},
		{name: "anti-starvation off", after: 0, waiter: waiter, priority: 10, since: now},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			j := job("a", snapshot(cores(8), queue("a", "", func(q *framework.QueueState) { q.FirstWaiter = tt.waiter })), 1, cpuPod("p", "1"))
			j.Priority, j.Since = tt.priority, tt.since
			if tt.self {
				j.ID = waiter.ID
			}
			pl := &Capacity{starvationAfter: tt.after, now: func() time.Time { return now }}
			s := pl.PreFilter(context.Background(), framework.NewCycleState(), j)
			wantCode := framework.Success
			if tt.wantMsg != "" {
				wantCode = framework.Unschedulable
			}
			if s.Code() != wantCode || s.Message() != tt.wantMsg {
				t.Errorf("PreFilter = %v, want %v: %q", s, wantCode, tt.wantMsg)
			}
		})
	}
}
