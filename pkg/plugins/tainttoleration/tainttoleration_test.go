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

package tainttoleration

import (
	"context"
	"reflect"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"

	configapi "github.com/batch-scheduler/batch-scheduler/pkg/apis/config"
	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
	"github.com/batch-scheduler/batch-scheduler/pkg/plugins/internal/testutil"
	st "github.com/batch-scheduler/batch-scheduler/pkg/testing"
)

func TestFilter(t *testing.T) {
	const unres = framework.UnschedulableAndUnresolvable
	tests := []struct {
		name     string
		pod      *v1.Pod
		node     *v1.Node
		wantCode framework.Code
		want     []string
	}{
		{name: "no taints", pod: st.MakePod().Name("p").Obj(), node: st.MakeNode().Name("n").Obj()},
		{name: "untolerated NoSchedule", pod: st.MakePod().Name("p").Obj(),
			node:     st.MakeNode().Name("n").Taint("dedicated", "gpu", v1.TaintEffectNoSchedule).Obj(),
			wantCode: unres, want: []string{ErrReasonUntolerated}},
		{name: "untolerated NoExecute", pod: st.MakePod().Name("p").Obj(),
			node:     st.MakeNode().Name("n").Taint("node.kubernetes.io/not-ready", "", v1.TaintEffectNoExecute).Obj(),
			wantCode: unres, want: []string{ErrReasonUntolerated}},
		{name: "PreferNoSchedule does not filter", pod: st.MakePod().Name("p").Obj(),
			node: st.MakeNode().Name("n").Taint("soft", "x", v1.TaintEffectPreferNoSchedule).Obj()},
		{name: "tolerated with Equal", pod: st.MakePod().Name("p").Toleration("dedicated", "gpu", v1.TaintEffectNoSchedule).Obj(),
			node: st.MakeNode().Name("n").Taint("dedicated", "gpu", v1.TaintEffectNoSchedule).Obj()},
		{name: "Equal with another value", pod: st.MakePod().Name("p").Toleration("dedicated", "cpu", v1.TaintEffectNoSchedule).Obj(),
			node:     st.MakeNode().Name("n").Taint("dedicated", "gpu", v1.TaintEffectNoSchedule).Obj(),
			wantCode: unres, want: []string{ErrReasonUntolerated}},
		{name: "tolerated with Exists, any effect", pod: st.MakePod().Name("p").TolerationExists("dedicated", "").Obj(),
			node: st.MakeNode().Name("n").Taint("dedicated", "gpu", v1.TaintEffectNoSchedule).Taint("dedicated", "gpu", v1.TaintEffectNoExecute).Obj()},
		{name: "an untolerated taint after a tolerated one", pod: st.MakePod().Name("p").TolerationExists("a", "").Obj(),
			node:     st.MakeNode().Name("n").Taint("a", "1", v1.TaintEffectNoSchedule).Taint("b", "2", v1.TaintEffectNoExecute).Taint("c", "3", v1.TaintEffectNoSchedule).Obj(),
			wantCode: unres, want: []string{ErrReasonUntolerated}},
		{name: "a NoSchedule toleration does not cover NoExecute", pod: st.MakePod().Name("p").TolerationExists("a", v1.TaintEffectNoSchedule).Obj(),
			node:     st.MakeNode().Name("n").Taint("a", "1", v1.TaintEffectNoExecute).Obj(),
			wantCode: unres, want: []string{ErrReasonUntolerated}},
		{name: "comparison operators are not honoured",
			pod: func() *v1.Pod {
				p := st.MakePod().Name("p").Obj()
				p.Spec.Tolerations = []v1.Toleration{{Key: "level", Operator: v1.TolerationOpGt, Value: "1", Effect: v1.TaintEffectNoSchedule}}
				return p
			}(),
			node:     st.MakeNode().Name("n").Taint("level", "5", v1.TaintEffectNoSchedule).Obj(),
			wantCode: unres, want: []string{ErrReasonUntolerated}},
	}
	pl := &TaintToleration{}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := pl.Filter(context.Background(), framework.NewCycleState(), tt.pod, testutil.NodeInfo(t, tt.node))
			if s.Code() != tt.wantCode || !reflect.DeepEqual(s.Reasons(), tt.want) {
				t.Errorf("Filter = %v %q, want %v %q", s.Code(), s.Reasons(), tt.wantCode, tt.want)
			}
		})
	}
	t.Run("placeholder", func(t *testing.T) {
		for _, ni := range []*framework.NodeInfo{testutil.PlaceholderNodeInfo(t, "gone", st.MakePod().Name("a").Obj()), {}} {
			s := pl.Filter(context.Background(), nil, st.MakePod().Name("p").Obj(), ni)
			if s.Code() != unres || s.Message() != "node(s) not found" {
				t.Errorf("Filter = %v", s)
			}
		}
	})
}

func TestScore(t *testing.T) {
	pod := st.MakePod().Name("p").Toleration("tolerated", "yes", v1.TaintEffectPreferNoSchedule).TolerationExists("any-effect", "").Obj()
	nodes := []*v1.Node{
		st.MakeNode().Name("clean").Obj(),
		st.MakeNode().Name("tolerated").Taint("tolerated", "yes", v1.TaintEffectPreferNoSchedule).Taint("any-effect", "", v1.TaintEffectPreferNoSchedule).Obj(),
		st.MakeNode().Name("one").Taint("soft", "1", v1.TaintEffectPreferNoSchedule).Taint("tolerated", "yes", v1.TaintEffectPreferNoSchedule).Obj(),
		st.MakeNode().Name("two").Taint("soft", "1", v1.TaintEffectPreferNoSchedule).Taint("tolerated", "no", v1.TaintEffectPreferNoSchedule).Obj(),
		// Hard taints do not count: Filter handles them.
		st.MakeNode().Name("hard").Taint("hard", "1", v1.TaintEffectNoSchedule).Taint("hard2", "1", v1.TaintEffectNoExecute).Obj(),
		st.MakeNode().Name("four").Taint("a", "", v1.TaintEffectPreferNoSchedule).Taint("b", "", v1.TaintEffectPreferNoSchedule).
			Taint("c", "", v1.TaintEffectPreferNoSchedule).Taint("d", "", v1.TaintEffectPreferNoSchedule).Obj(),
	}
	wantRaw := []int64{0, 0, 1, 2, 0, 4}
	wantNormalized := []int64{100, 100, 75, 50, 100, 0}

	pl := &TaintToleration{}
	state := framework.NewCycleState()
	scores := make([]framework.NodeScore, len(nodes))
	for i, n := range nodes {
		s, status := pl.Score(context.Background(), state, pod, testutil.NodeInfo(t, n))
		if !status.IsSuccess() {
			t.Fatalf("Score(%s): %v", n.Name, status)
		}
		if s != wantRaw[i] {
			t.Errorf("Score(%s) = %d, want %d", n.Name, s, wantRaw[i])
		}
		scores[i] = framework.NodeScore{Name: n.Name, Score: s}
	}
	if status := pl.ScoreExtensions().NormalizeScore(context.Background(), state, pod, scores); !status.IsSuccess() {
		t.Fatal(status)
	}
	for i, s := range scores {
		if s.Name != nodes[i].Name || s.Score != wantNormalized[i] {
			t.Errorf("normalized %s = %d, want %d", s.Name, s.Score, wantNormalized[i])
		}
	}

	s, status := pl.Score(context.Background(), state, pod, testutil.PlaceholderNodeInfo(t, "gone", st.MakePod().Name("a").Obj()))
	if s != 0 || status.Code() != framework.Error || !strings.Contains(status.Message(), `node "gone" not found`) {
		t.Errorf("Score on a placeholder = %d, %v", s, status)
	}
}

func TestNew(t *testing.T) {
	p, err := New(context.Background(), configapi.NewRawArgs("", []byte("")), nil)
	if err != nil {
		t.Fatal(err)
	}
	if p.Name() != "TaintToleration" {
		t.Errorf("Name = %q", p.Name())
	}
	if _, err := New(context.Background(), configapi.NewRawArgs("", []byte("ignore: [a]")), nil); err == nil || !strings.Contains(err.Error(), "TaintToleration args") {
		t.Errorf("args accepted: %v", err)
	}
	var events []framework.ClusterEvent
	for _, e := range p.(framework.EnqueueExtensions).EventsToRegister() {
		if e.QueueingHintFn == nil {
			t.Errorf("%v has no queueing hint", e.Event)
		}
		events = append(events, e.Event)
	}
	want := []framework.ClusterEvent{framework.EventNodeAdd, framework.EventNodeTaintChange}
	if !reflect.DeepEqual(events, want) {
		t.Errorf("EventsToRegister = %v, want %v", events, want)
	}
}
