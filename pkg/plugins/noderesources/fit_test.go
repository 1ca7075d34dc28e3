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

package noderesources

import (
	"context"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	configapi "github.com/batch-scheduler/batch-scheduler/pkg/apis/config"
	"github.com/batch-scheduler/batch-scheduler/pkg/dialects"
	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
	"github.com/batch-scheduler/batch-scheduler/pkg/plugins/internal/testutil"
	"github.com/batch-scheduler/batch-scheduler/pkg/resources"
	st "github.com/batch-scheduler/batch-scheduler/pkg/testing"
)

type res = map[v1.ResourceName]string

func node(capacity res) *v1.Node {
	return st.MakeNode().Name("n1").Capacity(capacity).Obj()
}

func pod(name string, req res) *v1.Pod {
	return st.MakePod().Name(name).Req(req).Obj()
}

func newFit(t *testing.T, args string) *Fit {
	t.Helper()
	p, err := New(context.Background(), configapi.NewRawArgs("", []byte(args)), nil)
	if err != nil {
		t.Fatal(err)
	}
	return p.(*Fit)
}

func TestFilter(t *testing.T) {
	std := res{"cpu": "4", "memory": "8Gi", "pods": "10"}
	tests := []struct {
		name     string
		pod      *v1.Pod
		node     func(t *testing.T) *framework.NodeInfo
		wantCode framework.Code
		want     []string
	}{
		{name: "empty node", pod: pod("p", res{"cpu": "1", "memory": "1Gi"}),
			node: func(t *testing.T) *framework.NodeInfo { return testutil.NodeInfo(t, node(std)) }},
		{name: "exactly the idle resources", pod: pod("p", res{"cpu": "3", "memory": "6Gi"}),
			node: func(t *testing.T) *framework.NodeInfo {
				return testutil.NodeInfo(t, node(std), pod("a", res{"cpu": "1", "memory": "2Gi"}))
			}},
		{name: "insufficient cpu", pod: pod("p", res{"cpu": "3500m", "memory": "1Gi"}),
			node: func(t *testing.T) *framework.NodeInfo {
				return testutil.NodeInfo(t, node(std), pod("a", res{"cpu": "1"}))
			},
			wantCode: framework.Unschedulable, want: []string{"Insufficient cpu"}},
		{name: "insufficient memory", pod: pod("p", res{"memory": "7Gi"}),
			node: func(t *testing.T) *framework.NodeInfo {
				return testutil.NodeInfo(t, node(std), pod("a", res{"memory": "2Gi"}))
			},
			wantCode: framework.Unschedulable, want: []string{"Insufficient memory"}},
		{name: "too many pods, cpu, memory and two extended resources, in that order", pod: pod("p", res{"cpu": "4", "memory": "8Gi", "example.com/b": "1", "example.com/a": "1"}),
			node: func(t *testing.T) *framework.NodeInfo {
				return testutil.NodeInfo(t, node(res{"cpu": "4", "memory": "8Gi", "pods": "1"}), pod("a", res{"cpu": "1", "memory": "1Gi"}))
			},
			wantCode: framework.Unschedulable, want: []string{"Too many pods", "Insufficient cpu", "Insufficient memory", "Insufficient example.com/a", "Insufficient example.com/b"}},
		{name: "too many pods alone", pod: pod("p", res{"cpu": "1"}),
			node: func(t *testing.T) *framework.NodeInfo {
				return testutil.NodeInfo(t, node(res{"cpu": "4", "memory": "8Gi", "pods": "1"}), pod("a", res{"cpu": "1"}))
			},
			wantCode: framework.Unschedulable, want: []string{"Too many pods"}},
		{name: "no GPU on the node", pod: pod("p", res{"nvidia.com/gpu": "1"}),
			node:     func(t *testing.T) *framework.NodeInfo { return testutil.NodeInfo(t, node(std)) },
			wantCode: framework.Unschedulable, want: []string{"Insufficient nvidia.com/gpu"}},
		{name: "GPUs used up", pod: pod("p", res{"nvidia.com/gpu": "2"}),
			node: func(t *testing.T) *framework.NodeInfo {
				return testutil.NodeInfo(t, node(res{"cpu": "4", "memory": "8Gi", "pods": "10", "nvidia.com/gpu": "4"}), pod("a", res{"nvidia.com/gpu": "3"}))
			},
			wantCode: framework.Unschedulable, want: []string{"Insufficient nvidia.com/gpu"}},
		{name: "GPU fits", pod: pod("p", res{"nvidia.com/gpu": "1"}),
			node: func(t *testing.T) *framework.NodeInfo {
				return testutil.NodeInfo(t, node(res{"cpu": "4", "memory": "8Gi", "pods": "10", "nvidia.com/gpu": "4"}), pod("a", res{"nvidia.com/gpu": "3"}))
			}},
		{name: "too many pods", pod: pod("p", nil),
			node: func(t *testing.T) *framework.NodeInfo {
				return testutil.NodeInfo(t, node(res{"cpu": "4", "pods": "2"}), pod("a", nil), pod("b", nil))
			},
			wantCode: framework.Unschedulable, want: []string{"Too many pods"}},
		{name: "a node without a pod count takes no pods", pod: pod("p", nil),
			node:     func(t *testing.T) *framework.NodeInfo { return testutil.NodeInfo(t, node(res{"cpu": "4"})) },
			wantCode: framework.Unschedulable, want: []string{"Too many pods"}},
		{name: "every reason, in order", pod: pod("p", res{"cpu": "5", "memory": "9Gi", "ephemeral-storage": "1Gi", "nvidia.com/gpu": "1", "example.com/fpga": "1"}),
			node: func(t *testing.T) *framework.NodeInfo {
				return testutil.NodeInfo(t, node(res{"cpu": "4", "memory": "8Gi", "pods": "1"}), pod("a", nil))
			},
			wantCode: framework.Unschedulable,
			want:     []string{"Too many pods", "Insufficient cpu", "Insufficient memory", "Insufficient ephemeral-storage", "Insufficient example.com/fpga", "Insufficient nvidia.com/gpu"}},
		{name: "finished pods free their resources", pod: pod("p", res{"cpu": "4"}),
			node: func(t *testing.T) *framework.NodeInfo {
				done := st.MakePod().Name("a").Req(res{"cpu": "4"}).Phase(v1.PodSucceeded).Obj()
				return testutil.NodeInfo(t, node(std), done)
			}},
		{name: "over-committed cpu does not reject a pod requesting none", pod: pod("p", res{"memory": "1Gi"}),
			node: func(t *testing.T) *framework.NodeInfo {
				return testutil.NodeInfo(t, node(std), pod("a", res{"cpu": "6"}))
			}},
		{name: "over-committed cpu rejects a pod requesting some", pod: pod("p", res{"cpu": "1m"}),
			node: func(t *testing.T) *framework.NodeInfo {
				return testutil.NodeInfo(t, node(std), pod("a", res{"cpu": "6"}))
			},
			wantCode: framework.Unschedulable, want: []string{"Insufficient cpu"}},
		{name: "init containers and overhead count", pod: st.MakePod().Name("p").Req(res{"cpu": "1"}).InitReq(res{"cpu": "4"}).Overhead(res{"cpu": "500m"}).Obj(),
			node:     func(t *testing.T) *framework.NodeInfo { return testutil.NodeInfo(t, node(std)) },
			wantCode: framework.Unschedulable, want: []string{"Insufficient cpu"}},
		{name: "placeholder", pod: pod("p", nil),
			node:     func(t *testing.T) *framework.NodeInfo { return testutil.PlaceholderNodeInfo(t, "gone", pod("a", nil)) },
			wantCode: framework.UnschedulableAndUnresolvable, want: []string{"node(s) not found"}},
		{name: "no node at all", pod: pod("p", nil),
			node:     func(t *testing.T) *framework.NodeInfo { return &framework.NodeInfo{} },
			wantCode: framework.UnschedulableAndUnresolvable, want: []string{"node(s) not found"}},
	}
	pl := newFit(t, "")
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ni := tt.node(t)
			for _, withPreFilter := range []bool{false, true} {
				state := framework.NewCycleState()
				if withPreFilter {
					job := &framework.Job{ID: dialects.Resolver().JobID(tt.pod), MinAvailable: 1, Pending: []*v1.Pod{tt.pod}}
					if s := pl.PreFilter(context.Background(), state, job); !s.IsSuccess() {
						t.Fatalf("PreFilter = %v", s)
					}
				}
				s := pl.Filter(context.Background(), state, tt.pod, ni)
				if s.Code() != tt.wantCode || !reflect.DeepEqual(s.Reasons(), tt.want) {
					t.Errorf("Filter (preFilter %v) = %v %q, want %v %q", withPreFilter, s.Code(), s.Reasons(), tt.wantCode, tt.want)
				}
				// The framework calls the prepared filter instead.
				if p := pl.PrepareFilter(context.Background(), state, tt.pod)(context.Background(), ni); p.Code() != s.Code() || !reflect.DeepEqual(p.Reasons(), s.Reasons()) {
					t.Errorf("PrepareFilter (preFilter %v) = %v, Filter %v", withPreFilter, p, s)
				}
			}
		})
	}
}

// TestPreFilterState checks that Filter and Score use the requests PreFilter
// computed for the very pod object, and compute them for any other.
func TestPreFilterState(t *testing.T) {
	pl := newFit(t, "")
	p := pod("p", res{"cpu": "1"})
	ni := testutil.NodeInfo(t, node(res{"cpu": "4", "memory": "8Gi", "pods": "10"}))
	state := framework.NewCycleState()
	if s := pl.PreFilter(context.Background(), state, &framework.Job{Pending: []*v1.Pod{p}}); !s.IsSuccess() {
		t.Fatal(s)
	}
	d, ok := state.Read(stateKey)
	if !ok {
		t.Fatal("PreFilter wrote no state")
	}
	if got := d.(preFilterState)[p]; got.MilliCPU != 1000 || got.Pods != 1 {
		t.Fatalf("PreFilter computed %v", got)
	}
	if d.Clone() == nil {
		t.Fatal("Clone returned nil")
	}
	// Pretend PreFilter found the pod huge: Filter must believe it.
	state.Write(stateKey, preFilterState{p: {MilliCPU: 100000, Pods: 1}})
	if s := pl.Filter(context.Background(), state, p, ni); !reflect.DeepEqual(s.Reasons(), []string{"Insufficient cpu"}) {
		t.Errorf("Filter ignored the state: %v", s)
	}
	if score, _ := pl.Score(context.Background(), state, p, ni); score != 50 {
		// cpu: 0 free (score 0), memory: all free (100).
		t.Errorf("Score ignored the state: %d", score)
	}
	// Another object with the same UID (e.g. an updated pod) is computed
	// afresh.
	other := p.DeepCopy()
	if s := pl.Filter(context.Background(), state, other, ni); !s.IsSuccess() {
		t.Errorf("Filter used stale state for another pod object: %v", s)
	}
	// Foreign data under the key is ignored.
	state.Write(stateKey, foreign{})
	if s := pl.Filter(context.Background(), state, p, ni); !s.IsSuccess() {
		t.Errorf("Filter with foreign state = %v", s)
	}
	if s := pl.Filter(context.Background(), nil, p, ni); !s.IsSuccess() {
		t.Errorf("Filter with nil state = %v", s)
	}
}

type foreign struct{}

func (foreign) Clone() framework.StateData { return foreign{} }

// TestFitsAgreesWithInsufficient checks the allocation-free fast path
// against the reasons, on random nodes and requests (over-committed ones
// included).
func TestFitsAgreesWithInsufficient(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	v := func() int64 { return rng.Int64N(7) - 2 }
	scalar := func() map[v1.ResourceName]int64 {
		m := map[v1.ResourceName]int64{}
		for _, n := range []v1.ResourceName{"a", "b"} {
			if rng.IntN(2) == 0 {
				m[n] = v()
			}
		}
		return m
	}
	r := func() resources.Resource {
		return resources.Resource{MilliCPU: v(), Memory: v(), EphemeralStorage: v(), Pods: v(), Scalar: scalar()}
	}
	fitsSeen, notSeen := 0, 0
	for range 20000 {
		ni := &framework.NodeInfo{Schedulable: r(), Requested: r(), External: r()}
		req := r()
		fast := fits(req, ni)
		reasons := insufficient(req, ni)
		if fast != (len(reasons) == 0) {
			t.Fatalf("fits = %v but reasons %q for request %v on schedulable %v requested %v external %v", fast, reasons, req, ni.Schedulable, ni.Requested, ni.External)
		}
		if fast {
			fitsSeen++
		} else {
			notSeen++
		}
	}
	if fitsSeen == 0 || notSeen == 0 {
		t.Fatalf("the random cases do not cover both outcomes: %d fit, %d do not", fitsSeen, notSeen)
	}
}

// A node the pod does not fit on costs one allocation, its Status: the
// reasons of a lone shortage are shared and the V(5) log builds nothing
// unless enabled. Filter runs for every node of every pod that fits
// nowhere, so a garbage-free rejection is what keeps a full cluster
// cheap to search.
func TestRejectionAllocatesOnlyItsStatus(t *testing.T) {
	ni := testutil.NodeInfo(t, node(res{"cpu": "4", "memory": "8Gi", "pods": "10"}), pod("a", res{"cpu": "3"}))
	p := pod("p", res{"cpu": "2"})
	req := resources.PodRequests(p)
	ctx := klog.NewContext(context.Background(), klog.Background())
	var st *framework.Status
	allocs := testing.AllocsPerRun(100, func() { st = filter(ctx, p, req, nil, ni) })
	if got := st.Reasons(); !reflect.DeepEqual(got, []string{"Insufficient cpu"}) {
		t.Fatalf("reasons %q, want [Insufficient cpu]", got)
	}
	if allocs > 1 {
		t.Errorf("a rejection allocates %.0f times, want 1 (its Status)", allocs)
	}
}

func TestScore(t *testing.T) {
	gpuNode := node(res{"cpu": "4", "memory": "8Gi", "pods": "10", "nvidia.com/gpu": "4"})
	tests := []struct {
		name string
		args string
		node *v1.Node
		on   []*v1.Pod
		pod  *v1.Pod
		want int64
	}{
		// Node 4 cpu / 8Gi; after placement 2 cpu (50%) and 2Gi (25%) used.
		{name: "least allocated", node: node(res{"cpu": "4", "memory": "8Gi", "pods": "10"}),
			on: []*v1.Pod{pod("a", res{"cpu": "1", "memory": "1Gi"})}, pod: pod("p", res{"cpu": "1", "memory": "1Gi"}),
			want: (50 + 75) / 2},
		{name: "most allocated", args: "scoringStrategy: MostAllocated", node: node(res{"cpu": "4", "memory": "8Gi", "pods": "10"}),
			on: []*v1.Pod{pod("a", res{"cpu": "1", "memory": "1Gi"})}, pod: pod("p", res{"cpu": "1", "memory": "1Gi"}),
			want: (50 + 25) / 2},
		{name: "weighted least allocated", args: "resources: [{name: cpu, weight: 3}, {name: memory}]",
			node: node(res{"cpu": "4", "memory": "8Gi", "pods": "10"}),
			on:   []*v1.Pod{pod("a", res{"cpu": "1", "memory": "1Gi"})}, pod: pod("p", res{"cpu": "1", "memory": "1Gi"}),
			want: (3*50 + 75) / 4},
		{name: "weighted most allocated", args: "{scoringStrategy: MostAllocated, resources: [{name: cpu, weight: 3}, {name: memory}]}",
			node: node(res{"cpu": "4", "memory": "8Gi", "pods": "10"}),
			on:   []*v1.Pod{pod("a", res{"cpu": "1", "memory": "1Gi"})}, pod: pod("p", res{"cpu": "1", "memory": "1Gi"}),
			want: (3*50 + 25) / 4},
		{name: "empty node, no requests: least", node: node(res{"cpu": "4", "memory": "8Gi", "pods": "10"}), pod: pod("p", nil), want: 100},
		{name: "empty node, no requests: most", args: "scoringStrategy: MostAllocated", node: node(res{"cpu": "4", "memory": "8Gi", "pods": "10"}), pod: pod("p", nil), want: 0},
		{name: "full node: least", node: node(res{"cpu": "4", "memory": "8Gi", "pods": "10"}), pod: pod("p", res{"cpu": "4", "memory": "8Gi"}), want: 0},
		{name: "full node: most", args: "scoringStrategy: MostAllocated", node: node(res{"cpu": "4", "memory": "8Gi", "pods": "10"}), pod: pod("p", res{"cpu": "4", "memory": "8Gi"}), want: 100},
		{name: "over-committed: least", node: node(res{"cpu": "4", "memory": "8Gi", "pods": "10"}),
			on: []*v1.Pod{pod("a", res{"cpu": "6", "memory": "10Gi"})}, pod: pod("p", nil), want: 0},
		{name: "over-committed: most", args: "scoringStrategy: MostAllocated", node: node(res{"cpu": "4", "memory": "8Gi", "pods": "10"}),
			on: []*v1.Pod{pod("a", res{"cpu": "6", "memory": "10Gi"})}, pod: pod("p", nil), want: 100},
		{name: "a resource the node lacks is left out", args: "resources: [{name: cpu}, {name: ephemeral-storage, weight: 50}]",
			node: node(res{"cpu": "4", "memory": "8Gi", "pods": "10"}), pod: pod("p", res{"cpu": "1"}), want: 75},
		{name: "nothing to score", args: "resources: [{name: example.com/fpga}]",
			node: node(res{"cpu": "4", "pods": "10"}), pod: pod("p", res{"cpu": "1"}), want: 0},
		{name: "GPUs count for a pod requesting them", args: "resources: [{name: cpu}, {name: nvidia.com/gpu, weight: 3}]",
			node: gpuNode, on: []*v1.Pod{pod("a", res{"nvidia.com/gpu": "1"})}, pod: pod("p", res{"cpu": "2", "nvidia.com/gpu": "1"}),
			want: (50 + 3*50) / 4},
		{name: "GPUs are ignored for a pod not requesting them", args: "resources: [{name: cpu}, {name: nvidia.com/gpu, weight: 3}]",
			node: gpuNode, on: []*v1.Pod{pod("a", res{"nvidia.com/gpu": "4"})}, pod: pod("p", res{"cpu": "1"}),
			want: 75},
		{name: "pods as a resource", args: "resources: [{name: pods}]",
			node: node(res{"cpu": "4", "pods": "4"}), on: []*v1.Pod{pod("a", nil)}, pod: pod("p", nil), want: 50},
		{name: "memory only", args: "resources: [{name: memory}]",
			node: node(res{"cpu": "4", "memory": "8Gi", "pods": "10"}), on: []*v1.Pod{pod("a", res{"cpu": "4"})}, pod: pod("p", res{"memory": "2Gi"}), want: 75},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pl := newFit(t, tt.args)
			ni := testutil.NodeInfo(t, tt.node, tt.on...)
			got, s := pl.Score(context.Background(), framework.NewCycleState(), tt.pod, ni)
			if !s.IsSuccess() {
				t.Fatalf("Score status %v", s)
			}
			if got != tt.want {
				t.Errorf("Score = %d, want %d", got, tt.want)
			}
			// The framework calls the prepared scorer instead.
			if got, s := pl.PrepareScore(context.Background(), framework.NewCycleState(), tt.pod)(context.Background(), ni); got != tt.want || !s.IsSuccess() {
				t.Errorf("PrepareScore = %d %v, want %d", got, s, tt.want)
			}
		})
	}
}

// TestScoreOrdersNodes checks the two strategies rank the same nodes in
// opposite orders.
func TestScoreOrdersNodes(t *testing.T) {
	p := pod("p", res{"cpu": "1", "memory": "1Gi"})
	empty := testutil.NodeInfo(t, node(res{"cpu": "8", "memory": "16Gi", "pods": "10"}))
	busy := testutil.NodeInfo(t, node(res{"cpu": "8", "memory": "16Gi", "pods": "10"}), pod("a", res{"cpu": "6", "memory": "12Gi"}))
	score := func(pl *Fit, ni *framework.NodeInfo) int64 {
		s, st := pl.Score(context.Background(), framework.NewCycleState(), p, ni)
		if !st.IsSuccess() {
			t.Fatal(st)
		}
		return s
	}
	least, most := newFit(t, ""), newFit(t, "scoringStrategy: MostAllocated")
	if score(least, empty) <= score(least, busy) {
		t.Errorf("LeastAllocated prefers the busy node: %d vs %d", score(least, empty), score(least, busy))
	}
	if score(most, empty) >= score(most, busy) {
		t.Errorf("MostAllocated prefers the empty node: %d vs %d", score(most, empty), score(most, busy))
	}

	// A VM on the host fills it like pods do.
	vmHost := testutil.NodeInfo(t, node(res{"cpu": "8", "memory": "16Gi", "pods": "10"}))
	vmHost.External = resources.Resource{MilliCPU: 6000, Memory: 12 << 30}
	if got, want := score(least, vmHost), score(least, busy); got != want {
		t.Errorf("LeastAllocated: node with 6 cpu of external usage scores %d, with 6 cpu of pods %d", got, want)
	}
	if got, want := score(most, vmHost), score(most, busy); got != want {
		t.Errorf("MostAllocated: node with 6 cpu of external usage scores %d, with 6 cpu of pods %d", got, want)
	}
	// And Filter counts it.
	if st := least.Filter(context.Background(), framework.NewCycleState(), pod("q", res{"cpu": "3"}), vmHost); st.Code() != framework.Unschedulable {
		t.Errorf("Filter of a 3-cpu pod on a node with 2 cpu left after external usage = %v, want Unschedulable", st)
	}
}

func TestScoreRange(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	q := func(unit string) string { return []string{"0", "1", "3", "7", "100"}[rng.IntN(5)] + unit }
	for _, args := range []string{"", "scoringStrategy: MostAllocated", "resources: [{name: cpu, weight: 100}, {name: memory, weight: 1}, {name: x.io/y, weight: 7}]"} {
		pl := newFit(t, args)
		for i := range 300 {
			n := st.MakeNode().Name("n").Capacity(res{"cpu": q(""), "memory": q("Gi"), "pods": "100", "x.io/y": q("")}).Obj()
			ni := testutil.NodeInfo(t, n, pod("a", res{"cpu": q(""), "memory": q("Gi"), "x.io/y": q("")}))
			p := pod("p", res{"cpu": q(""), "memory": q("Gi"), "x.io/y": q("")})
			s, st := pl.Score(context.Background(), nil, p, ni)
			if !st.IsSuccess() || s < framework.MinNodeScore || s > framework.MaxNodeScore {
				t.Fatalf("args %q case %d: Score = %d, %v", args, i, s, st)
			}
		}
	}
}

func TestScorePlaceholder(t *testing.T) {
	pl := newFit(t, "")
	ni := testutil.PlaceholderNodeInfo(t, "gone", pod("a", nil))
	s, status := pl.Score(context.Background(), framework.NewCycleState(), pod("p", nil), ni)
	if s != 0 || status.Code() != framework.Error || !strings.Contains(status.Message(), `node "gone" not found`) {
		t.Errorf("Score on a placeholder = %d, %v", s, status)
	}
	if pl.ScoreExtensions() != nil {
		t.Error("scores need no normalisation")
	}
}

func TestEventsAndName(t *testing.T) {
	pl := newFit(t, "")
	if pl.Name() != "NodeResourcesFit" {
		t.Errorf("Name = %q", pl.Name())
	}
	events := pl.EventsToRegister()
	matches := func(e framework.ClusterEvent) bool {
		for _, want := range events {
			if e.Matches(want.Event) {
				return true
			}
		}
		return false
	}
	for _, e := range []framework.ClusterEvent{framework.EventAssignedPodDelete, framework.EventNodeAdd, framework.EventNodeAllocatableChange,
		framework.EventExternalUsageDecrease} {
		if !matches(e) {
			t.Errorf("%v does not requeue", e)
		}
	}
	for _, e := range []framework.ClusterEvent{framework.EventNodeLabelChange, framework.EventNodeTaintChange, framework.EventNodeDelete,
		{Resource: framework.Pod, ActionType: framework.Add}} {
		if matches(e) {
			t.Errorf("%v requeues, but cannot free resources", e)
		}
	}
}

func TestNodeHint(t *testing.T) {
	pod := st.MakePod().Name("p").Req(map[v1.ResourceName]string{v1.ResourceCPU: "2"}).Obj()
	job := &framework.QueuedJob{Pods: []*v1.Pod{pod}}
	node := func(cpu, mem string) *v1.Node {
		return st.MakeNode().Name("n").Capacity(map[v1.ResourceName]string{v1.ResourceCPU: cpu, v1.ResourceMemory: mem, v1.ResourcePods: "10"}).Obj()
	}
	tests := []struct {
		name     string
		old, new any
		want     framework.QueueingHint
		wantErr  bool
	}{
		{name: "added node too small", new: node("1", "1Gi"), want: framework.QueueSkip},
		{name: "added node big enough", new: node("4", "1Gi"), want: framework.Queue},
		{name: "allocatable grew in what the pod asks for", old: node("3", "1Gi"), new: node("4", "1Gi"), want: framework.Queue},
		{name: "allocatable grew in what the pod does not ask for", old: node("4", "1Gi"), new: node("4", "2Gi"), want: framework.QueueSkip},
		{name: "allocatable shrank", old: node("8", "1Gi"), new: node("4", "1Gi"), want: framework.QueueSkip},
		{name: "grew but still too small", old: node("1", "1Gi"), new: node("1500m", "1Gi"), want: framework.QueueSkip},
		{name: "not a node", new: "garbage", want: framework.Queue, wantErr: true},
		{name: "old not a node", old: 42, new: node("4", "1Gi"), want: framework.Queue, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := nodeHint(klog.Background(), job, tt.old, tt.new)
			if got != tt.want || (err != nil) != tt.wantErr {
				t.Errorf("nodeHint = %v, %v; want %v, error %v", got, err, tt.want, tt.wantErr)
			}
		})
	}
}
