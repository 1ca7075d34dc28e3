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

package nodeaffinity

import (
	"context"
	"reflect"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"

	configapi "github.com/batch-scheduler/batch-scheduler/pkg/apis/config"
	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
	"github.com/batch-scheduler/batch-scheduler/pkg/plugins/internal/testutil"
	st "github.com/batch-scheduler/batch-scheduler/pkg/testing"
)

func withRequiredTerm(p *v1.Pod, term v1.NodeSelectorTerm) *v1.Pod {
	p.Spec.Affinity = &v1.Affinity{NodeAffinity: &v1.NodeAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{term}},
	}}
	return p
}

func TestFilter(t *testing.T) {
	node := st.MakeNode().Name("n1").Label("zone", "a").Label("gpu", "true").Obj()
	rejected := []string{"node(s) didn't match Pod's node affinity/selector"}
	tests := []struct {
		name   string
		pod    *v1.Pod
		reject bool
	}{
		{name: "no constraints", pod: st.MakePod().Name("p").Obj()},
		{name: "node selector matches", pod: st.MakePod().Name("p").NodeSelector(map[string]string{"zone": "a", "gpu": "true"}).Obj()},
		{name: "node selector value differs", pod: st.MakePod().Name("p").NodeSelector(map[string]string{"zone": "b"}).Obj(), reject: true},
		{name: "node selector label missing", pod: st.MakePod().Name("p").NodeSelector(map[string]string{"rack": "1"}).Obj(), reject: true},
		{name: "required affinity matches", pod: st.MakePod().Name("p").NodeAffinityIn("zone", "b", "a").Obj()},
		{name: "required affinity does not match", pod: st.MakePod().Name("p").NodeAffinityIn("zone", "b", "c").Obj(), reject: true},
		{name: "terms are ORed", pod: st.MakePod().Name("p").NodeAffinityIn("zone", "b").NodeAffinityIn("gpu", "true").Obj()},
		{name: "selector and affinity are ANDed: affinity fails",
			pod: st.MakePod().Name("p").NodeSelector(map[string]string{"zone": "a"}).NodeAffinityIn("gpu", "false").Obj(), reject: true},
		{name: "selector and affinity are ANDed: selector fails",
			pod: st.MakePod().Name("p").NodeSelector(map[string]string{"zone": "b"}).NodeAffinityIn("gpu", "true").Obj(), reject: true},
		{name: "match fields on the node name",
			pod: withRequiredTerm(st.MakePod().Name("p").Obj(), v1.NodeSelectorTerm{MatchFields: []v1.NodeSelectorRequirement{
				{Key: "metadata.name", Operator: v1.NodeSelectorOpIn, Values: []string{"n1"}}}})},
		{name: "match fields on another node name",
			pod: withRequiredTerm(st.MakePod().Name("p").Obj(), v1.NodeSelectorTerm{MatchFields: []v1.NodeSelectorRequirement{
				{Key: "metadata.name", Operator: v1.NodeSelectorOpIn, Values: []string{"n2"}}}}), reject: true},
		{name: "an unparsable term matches nothing",
			pod: withRequiredTerm(st.MakePod().Name("p").Obj(), v1.NodeSelectorTerm{MatchExpressions: []v1.NodeSelectorRequirement{
				{Key: "zone", Operator: "Near", Values: []string{"a"}}}}), reject: true},
		{name: "preferred terms do not filter", pod: st.MakePod().Name("p").PreferredNodeAffinityIn(10, "zone", "z").Obj()},
	}
	pl := &NodeAffinity{}
	ni := testutil.NodeInfo(t, node)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, withPreFilter := range []bool{false, true} {
				state := framework.NewCycleState()
				if withPreFilter {
					if s := pl.PreFilter(context.Background(), state, &framework.Job{Pending: []*v1.Pod{tt.pod}}); !s.IsSuccess() {
						t.Fatal(s)
					}
				}
				s := pl.Filter(context.Background(), state, tt.pod, ni)
				// The framework calls the prepared filter instead.
				if p := pl.PrepareFilter(context.Background(), state, tt.pod)(context.Background(), ni); p.Code() != s.Code() || !reflect.DeepEqual(p.Reasons(), s.Reasons()) {
					t.Errorf("PrepareFilter (preFilter %v) = %v, Filter %v", withPreFilter, p, s)
				}
				if !tt.reject {
					if !s.IsSuccess() {
						t.Errorf("Filter (preFilter %v) = %v, want success", withPreFilter, s)
					}
					continue
				}
				if s.Code() != framework.UnschedulableAndUnresolvable || !reflect.DeepEqual(s.Reasons(), rejected) {
					t.Errorf("Filter (preFilter %v) = %v, want UnschedulableAndUnresolvable %q", withPreFilter, s, rejected)
				}
			}
		})
	}
	t.Run("placeholder", func(t *testing.T) {
		for _, ni := range []*framework.NodeInfo{testutil.PlaceholderNodeInfo(t, "gone", st.MakePod().Name("a").Obj()), {}} {
			s := pl.Filter(context.Background(), nil, st.MakePod().Name("p").Obj(), ni)
			if s.Code() != framework.UnschedulableAndUnresolvable || s.Message() != "node(s) not found" {
				t.Errorf("Filter = %v", s)
			}
		}
	})
}

// TestPreFilterState checks that Filter uses what PreFilter parsed for the
// very pod object, and parses any other object afresh.
func TestPreFilterState(t *testing.T) {
	pl := &NodeAffinity{}
	p := st.MakePod().Name("p").Obj()
	ni := testutil.NodeInfo(t, st.MakeNode().Name("n").Obj())
	state := framework.NewCycleState()
	pl.PreFilter(context.Background(), state, &framework.Job{Pending: []*v1.Pod{p}})
	d, ok := state.Read(stateKey)
	if !ok || d.Clone() == nil {
		t.Fatal("PreFilter wrote no state")
	}
	if _, ok := d.(preFilterState)[p]; !ok {
		t.Fatal("PreFilter did not parse the pod")
	}
	// Pretend the pod had a node selector: Filter must believe the state.
	state.Write(stateKey, preFilterState{p: {pod: p, required: nodeaffinity.NewRequiredNodeAffinity(map[string]string{"x": "y"}, nil)}})
	if s := pl.Filter(context.Background(), state, p, ni); s.IsSuccess() {
		t.Error("Filter ignored the state")
	}
	if s := pl.Filter(context.Background(), state, p.DeepCopy(), ni); !s.IsSuccess() {
		t.Errorf("Filter used another object's state: %v", s)
	}
	state.Write(stateKey, foreign{})
	if s := pl.Filter(context.Background(), state, p, ni); !s.IsSuccess() {
		t.Errorf("Filter with foreign state = %v", s)
	}
}

type foreign struct{}

func (foreign) Clone() framework.StateData { return foreign{} }

func TestScore(t *testing.T) {
	nodes := []*v1.Node{
		st.MakeNode().Name("both").Label("zone", "a").Label("gpu", "true").Obj(),
		st.MakeNode().Name("zone").Label("zone", "a").Obj(),
		st.MakeNode().Name("gpu").Label("gpu", "true").Obj(),
		st.MakeNode().Name("none").Label("zone", "b").Obj(),
	}
	tests := []struct {
		name           string
		pod            *v1.Pod
		raw, finalized []int64
	}{
		{name: "weights add up",
			pod: st.MakePod().Name("p").PreferredNodeAffinityIn(5, "zone", "a").PreferredNodeAffinityIn(3, "gpu", "true").Obj(),
			raw: []int64{8, 5, 3, 0}, finalized: []int64{100, 62, 37, 0}},
		{name: "no preferences", pod: st.MakePod().Name("p").Obj(), raw: []int64{0, 0, 0, 0}, finalized: []int64{0, 0, 0, 0}},
		{name: "only required affinity", pod: st.MakePod().Name("p").NodeAffinityIn("zone", "a").Obj(), raw: []int64{0, 0, 0, 0}, finalized: []int64{0, 0, 0, 0}},
		{name: "nothing matches", pod: st.MakePod().Name("p").PreferredNodeAffinityIn(50, "zone", "c").Obj(), raw: []int64{0, 0, 0, 0}, finalized: []int64{0, 0, 0, 0}},
		{name: "one term everywhere", pod: st.MakePod().Name("p").PreferredNodeAffinityIn(1, "zone", "a", "b").Obj(), raw: []int64{1, 1, 0, 1}, finalized: []int64{100, 100, 0, 100}},
	}
	pl := &NodeAffinity{}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, withPreFilter := range []bool{false, true} {
				state := framework.NewCycleState()
				if withPreFilter {
					pl.PreFilter(context.Background(), state, &framework.Job{Pending: []*v1.Pod{tt.pod}})
				}
				scores := make([]framework.NodeScore, len(nodes))
				for i, n := range nodes {
					s, status := pl.Score(context.Background(), state, tt.pod, testutil.NodeInfo(t, n))
					if !status.IsSuccess() {
						t.Fatalf("Score(%s): %v", n.Name, status)
					}
					if s != tt.raw[i] {
						t.Errorf("Score(%s) = %d, want %d", n.Name, s, tt.raw[i])
					}
					// The framework calls the prepared scorer instead.
					if p, status := pl.PrepareScore(context.Background(), state, tt.pod)(context.Background(), testutil.NodeInfo(t, n)); p != s || !status.IsSuccess() {
						t.Errorf("PrepareScore(%s) = %d %v, Score %d", n.Name, p, status, s)
					}
					scores[i] = framework.NodeScore{Name: n.Name, Score: s}
				}
				if status := pl.ScoreExtensions().NormalizeScore(context.Background(), state, tt.pod, scores); !status.IsSuccess() {
					t.Fatal(status)
				}
				for i, s := range scores {
					if s.Score != tt.finalized[i] {
						t.Errorf("normalized %s = %d, want %d", s.Name, s.Score, tt.finalized[i])
					}
				}
			}
		})
	}
}

func TestScoreErrors(t *testing.T) {
	pl := &NodeAffinity{}
	bad := st.MakePod().Name("bad").Obj()
	bad.Spec.Affinity = &v1.Affinity{NodeAffinity: &v1.NodeAffinity{
		PreferredDuringSchedulingIgnoredDuringExecution: []v1.PreferredSchedulingTerm{{Weight: 1, Preference: v1.NodeSelectorTerm{
			MatchExpressions: []v1.NodeSelectorRequirement{{Key: "zone", Operator: "Near", Values: []string{"a"}}},
		}}},
	}}
	s, status := pl.Score(context.Background(), framework.NewCycleState(), bad, testutil.NodeInfo(t, st.MakeNode().Name("n").Obj()))
	if s != 0 || status.Code() != framework.Error || !strings.Contains(status.Message(), "pod default/bad: parsing preferred node affinity") {
		t.Errorf("Score with an unparsable preference = %d, %v", s, status)
	}
	s, status = pl.Score(context.Background(), nil, st.MakePod().Name("p").Obj(), testutil.PlaceholderNodeInfo(t, "gone", st.MakePod().Name("a").Obj()))
	if s != 0 || status.Code() != framework.Error || !strings.Contains(status.Message(), `node "gone" not found`) {
		t.Errorf("Score on a placeholder = %d, %v", s, status)
	}
}

func TestNew(t *testing.T) {
	p, err := New(context.Background(), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if p.Name() != "NodeAffinity" {
		t.Errorf("Name = %q", p.Name())
	}
	// kube-scheduler's args at their default are accepted, anything else
	// is refused naming the field.
	if _, err := New(context.Background(), configapi.NewRawArgs("", []byte("addedAffinity: {}")), nil); err != nil {
		t.Errorf("kube-scheduler's default args refused: %v", err)
	}
	if _, err := New(context.Background(), configapi.NewRawArgs("", []byte("addedAffinity: {preferredDuringSchedulingIgnoredDuringExecution: []}")), nil); err == nil || !strings.Contains(err.Error(), "NodeAffinity args: line 1: addedAffinity") {
		t.Errorf("args accepted: %v", err)
	}
	var events []framework.ClusterEvent
	for _, e := range p.(framework.EnqueueExtensions).EventsToRegister() {
		if e.QueueingHintFn == nil {
			t.Errorf("%v has no queueing hint", e.Event)
		}
		events = append(events, e.Event)
	}
	want := []framework.ClusterEvent{framework.EventNodeAdd, framework.EventNodeLabelChange}
	if !reflect.DeepEqual(events, want) {
		t.Errorf("EventsToRegister = %v, want %v", events, want)
	}
}

func TestNodeNames(t *testing.T) {
	name := func(op v1.NodeSelectorOperator, values ...string) v1.NodeSelectorRequirement {
		return v1.NodeSelectorRequirement{Key: "metadata.name", Operator: op, Values: values}
	}
	label := v1.NodeSelectorRequirement{Key: "zone", Operator: v1.NodeSelectorOpIn, Values: []string{"a"}}
	pod := func(terms ...v1.NodeSelectorTerm) *v1.Pod {
		p := st.MakePod().Name("p").Obj()
		p.Spec.Affinity = &v1.Affinity{NodeAffinity: &v1.NodeAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: &v1.NodeSelector{NodeSelectorTerms: terms}}}
		return p
	}
	tests := []struct {
		name string
		pod  *v1.Pod
		want []string // nil: names none
	}{
		{name: "no affinity", pod: st.MakePod().Name("p").Obj()},
		{name: "a DaemonSet pod's term", pod: pod(v1.NodeSelectorTerm{MatchFields: []v1.NodeSelectorRequirement{name(v1.NodeSelectorOpIn, "n1")}}), want: []string{"n1"}},
		{name: "requirements of a term intersect", pod: pod(v1.NodeSelectorTerm{MatchFields: []v1.NodeSelectorRequirement{name(v1.NodeSelectorOpIn, "n1", "n2"), name(v1.NodeSelectorOpIn, "n2", "n3")}}), want: []string{"n2"}},
		{name: "terms unite", pod: pod(v1.NodeSelectorTerm{MatchFields: []v1.NodeSelectorRequirement{name(v1.NodeSelectorOpIn, "n1")}}, v1.NodeSelectorTerm{MatchFields: []v1.NodeSelectorRequirement{name(v1.NodeSelectorOpIn, "n2")}}), want: []string{"n1", "n2"}},
		{name: "a term without names allows any node", pod: pod(v1.NodeSelectorTerm{MatchFields: []v1.NodeSelectorRequirement{name(v1.NodeSelectorOpIn, "n1")}}, v1.NodeSelectorTerm{MatchExpressions: []v1.NodeSelectorRequirement{label}})},
		{name: "NotIn names nothing", pod: pod(v1.NodeSelectorTerm{MatchFields: []v1.NodeSelectorRequirement{name(v1.NodeSelectorOpNotIn, "n1")}})},
		{name: "label requirements beside the name", pod: pod(v1.NodeSelectorTerm{MatchExpressions: []v1.NodeSelectorRequirement{label}, MatchFields: []v1.NodeSelectorRequirement{name(v1.NodeSelectorOpIn, "n1")}}), want: []string{"n1"}},
		{name: "conflicting names: no node", pod: pod(v1.NodeSelectorTerm{MatchFields: []v1.NodeSelectorRequirement{name(v1.NodeSelectorOpIn, "n1"), name(v1.NodeSelectorOpIn, "n2")}}), want: []string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := (&NodeAffinity{}).NodeNames(tt.pod)
			if ok != (tt.want != nil) {
				t.Fatalf("NodeNames = %v, %v; want names %v", got, ok, tt.want)
			}
			if ok && !reflect.DeepEqual(sets.List(got), tt.want) {
				t.Errorf("NodeNames = %v, want %v", sets.List(got), tt.want)
			}
		})
	}
}
