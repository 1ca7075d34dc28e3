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

package nodeunschedulable

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
	schedulable := st.MakeNode().Name("n").Obj()
	cordoned := st.MakeNode().Name("n").Unschedulable(true).Obj()
	tests := []struct {
		name     string
		pod      *v1.Pod
		node     *v1.Node
		wantCode framework.Code
		want     []string
	}{
		{name: "schedulable node", pod: st.MakePod().Name("p").Obj(), node: schedulable},
		{name: "cordoned node", pod: st.MakePod().Name("p").Obj(), node: cordoned,
			wantCode: framework.UnschedulableAndUnresolvable, want: []string{"node(s) were unschedulable"}},
		{name: "tolerated by key and effect", pod: st.MakePod().Name("p").TolerationExists(v1.TaintNodeUnschedulable, v1.TaintEffectNoSchedule).Obj(), node: cordoned},
		{name: "tolerated by key, any effect", pod: st.MakePod().Name("p").TolerationExists(v1.TaintNodeUnschedulable, "").Obj(), node: cordoned},
		{name: "tolerated by everything", pod: st.MakePod().Name("p").TolerationExists("", "").Obj(), node: cordoned},
		{name: "tolerated with Equal and empty value", pod: st.MakePod().Name("p").Toleration(v1.TaintNodeUnschedulable, "", v1.TaintEffectNoSchedule).Obj(), node: cordoned},
		{name: "wrong effect", pod: st.MakePod().Name("p").TolerationExists(v1.TaintNodeUnschedulable, v1.TaintEffectNoExecute).Obj(), node: cordoned,
			wantCode: framework.UnschedulableAndUnresolvable, want: []string{"node(s) were unschedulable"}},
		{name: "wrong key", pod: st.MakePod().Name("p").TolerationExists("node.kubernetes.io/not-ready", "").Obj(), node: cordoned,
			wantCode: framework.UnschedulableAndUnresolvable, want: []string{"node(s) were unschedulable"}},
	}
	pl := &NodeUnschedulable{}
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
			if s.Code() != framework.UnschedulableAndUnresolvable || s.Message() != "node(s) not found" {
				t.Errorf("Filter = %v", s)
			}
		}
	})
}

func TestNew(t *testing.T) {
	p, err := New(context.Background(), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if p.Name() != "NodeUnschedulable" {
		t.Errorf("Name = %q", p.Name())
	}
	if _, err := New(context.Background(), configapi.NewRawArgs("", []byte("strict: true")), nil); err == nil || !strings.Contains(err.Error(), "NodeUnschedulable args") {
		t.Errorf("args accepted: %v", err)
	}
	events := p.(framework.EnqueueExtensions).EventsToRegister()
	for _, e := range []framework.ClusterEvent{framework.EventNodeAdd, framework.EventNodeBecameSchedulable} {
		if !matchesAny(e, events) {
			t.Errorf("%v does not requeue", e)
		}
	}
	for _, e := range []framework.ClusterEvent{framework.EventAssignedPodDelete, framework.EventNodeAllocatableChange, framework.EventNodeLabelChange, framework.EventNodeTaintChange} {
		if matchesAny(e, events) {
			t.Errorf("%v requeues, but cannot uncordon a node", e)
		}
	}
}

func matchesAny(e framework.ClusterEvent, registered []framework.ClusterEventWithHint) bool {
	for _, r := range registered {
		if e.Matches(r.Event) {
			return true
		}
	}
	return false
}
