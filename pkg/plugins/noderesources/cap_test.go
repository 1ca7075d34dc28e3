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
	"reflect"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/batch-scheduler/batch-scheduler/pkg/dialects"
	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
	"github.com/batch-scheduler/batch-scheduler/pkg/plugins/pluginutil"
	"github.com/batch-scheduler/batch-scheduler/pkg/resources"
	st "github.com/batch-scheduler/batch-scheduler/pkg/testing"
)

// capped returns a 8-cpu, 16Gi node with a 2-cpu pod of another
// scheduler and ownCPU of this scheduler's, capped at limit (nil:
// uncapped).
func capped(t *testing.T, limit res, ownCPU string) *framework.NodeInfo {
	t.Helper()
	n := framework.NewNodeInfo(node(res{"cpu": "8", "memory": "16Gi", "pods": "10"}),
		st.MakePod().Name("other").Node("n1").Req(res{"cpu": "2"}).Obj())
	if ownCPU != "" {
		own := framework.NewTaskInfo(st.MakePod().Name("own").Node("n1").Req(res{"cpu": ownCPU, "memory": "1Gi"}).Obj(), dialects.Resolver())
		own.Own = true
		n.AddTask(own)
	}
	if limit != nil {
		c := resources.FromList(st.MakeNode().Capacity(limit).Obj().Status.Allocatable)
		n.Cap = &c
	}
	return n
}

func TestFilterHonoursTheCap(t *testing.T) {
	tests := []struct {
		name string
		node func(t *testing.T) *framework.NodeInfo
		pod  *v1.Pod
		want []string
	}{
		{name: "uncapped: the node decides", node: func(t *testing.T) *framework.NodeInfo { return capped(t, nil, "1") },
			pod: pod("p", res{"cpu": "5"})},
		{name: "no grant", node: func(t *testing.T) *framework.NodeInfo { return capped(t, res{}, "") },
			pod: pod("p", res{"cpu": "1"}), want: []string{ErrReasonNoGrant}},
		{name: "inside the grant", node: func(t *testing.T) *framework.NodeInfo { return capped(t, res{"cpu": "4", "memory": "4Gi"}, "1") },
			pod: pod("p", res{"cpu": "3", "memory": "3Gi"})},
		{name: "grant exhausted in cpu, other pods do not count against it",
			node: func(t *testing.T) *framework.NodeInfo { return capped(t, res{"cpu": "4", "memory": "4Gi"}, "1") },
			pod:  pod("p", res{"cpu": "3500m"}), want: []string{ErrReasonGrantExhausted + "cpu"}},
		{name: "a resource the grant does not name is capped at zero",
			node: func(t *testing.T) *framework.NodeInfo { return capped(t, res{"cpu": "4"}, "") },
			pod:  pod("p", res{"cpu": "1", "memory": "1Gi"}), want: []string{ErrReasonGrantExhausted + "memory"}},
		{name: "no grant, on a full node too",
			node: func(t *testing.T) *framework.NodeInfo { return capped(t, res{}, "") },
			pod:  pod("p", res{"cpu": "7"}), want: []string{ErrReasonNoGrant}},
		{name: "the node is full before the grant is: the usual reason",
			node: func(t *testing.T) *framework.NodeInfo { return capped(t, res{"cpu": "20", "memory": "20Gi"}, "1") },
			pod:  pod("p", res{"cpu": "6"}), want: []string{"Insufficient cpu"}},
		{name: "the pod count is not capped",
			node: func(t *testing.T) *framework.NodeInfo { return capped(t, res{"cpu": "4", "memory": "4Gi"}, "") },
			pod:  pod("p", nil)},
	}
	f := newFit(t, "")
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := f.Filter(context.Background(), nil, tt.pod, tt.node(t))
			if got := st.Reasons(); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("reasons = %q, want %q", got, tt.want)
			}
			if tt.want != nil && st.Code() != framework.Unschedulable {
				t.Errorf("code = %v, want Unschedulable (a grant may come)", st.Code())
			}
		})
	}
}

func TestIdleIsTheSmallerOfNodeAndCap(t *testing.T) {
	n := capped(t, res{"cpu": "4", "memory": "32Gi"}, "1")
	idle := n.Idle()
	// Node: 8 − 2 − 1 = 5 cpu; cap: 4 − 1 = 3 cpu. Memory: node 15Gi,
	// cap 31Gi.
	if idle.MilliCPU != 3000 || idle.Memory != 15<<30 || idle.Pods != 8 {
		t.Errorf("Idle = %s, want 3 cpu, 15Gi memory, 8 pods", idle)
	}
	if n.CapExceeded() {
		t.Error("cap reported exceeded")
	}
	n = capped(t, res{"cpu": "500m", "memory": "4Gi"}, "1")
	if !n.CapExceeded() {
		t.Error("1 cpu of own pods under a 500m cap is not reported exceeded")
	}
	if f := newFit(t, ""); f.Filter(context.Background(), nil, pod("p", res{"memory": "1Gi"}), n).IsSuccess() {
		t.Error("a pod asking for no cpu fits on a node whose cpu grant is exceeded, but nothing of ours should go there")
	}
}

func TestScoreSeesTheCap(t *testing.T) {
	f := newFit(t, "")
	p := pod("p", res{"cpu": "1", "memory": "1Gi"})
	roomy, err := f.Score(context.Background(), nil, p, capped(t, res{"cpu": "8", "memory": "16Gi"}, ""))
	if err != nil {
		t.Fatal(err)
	}
	tight, err := f.Score(context.Background(), nil, p, capped(t, res{"cpu": "2", "memory": "2Gi"}, ""))
	if err != nil {
		t.Fatal(err)
	}
	if tight >= roomy {
		t.Errorf("least-allocated score %d on a node with a small grant, %d with a large one: want lower", tight, roomy)
	}
}

func TestCapHint(t *testing.T) {
	cpu := func(v string) *resources.Resource {
		r := resources.FromList(st.MakeNode().Capacity(res{"cpu": v, "memory": "8Gi"}).Obj().Status.Allocatable)
		return &r
	}
	job := &framework.QueuedJob{Pods: []*v1.Pod{pod("p", res{"cpu": "2", "memory": "1Gi"})}}
	tests := []struct {
		name     string
		old, new *resources.Resource
		want     framework.QueueingHint
	}{
		{name: "first grant, large enough", old: nil, new: cpu("4"), want: framework.Queue},
		{name: "grew to fit", old: cpu("1"), new: cpu("2"), want: framework.Queue},
		{name: "grew, still too small", old: cpu("1"), new: cpu("1500m"), want: framework.QueueSkip},
		{name: "cap lifted", old: cpu("1"), new: nil, want: framework.Queue},
		{name: "grew in nothing the pod needs", old: cpu("4"), new: cpu("4"), want: framework.QueueSkip},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := pluginutil.CapHint(klog.Background(), job, nil, &framework.NodeCapChange{NodeName: "n1", Old: tt.old, New: tt.new})
			if err != nil || got != tt.want {
				t.Errorf("CapHint = %v, %v; want %v", got, err, tt.want)
			}
		})
	}
	if _, err := pluginutil.CapHint(klog.Background(), job, nil, "garbage"); err == nil {
		t.Error("CapHint accepted a string")
	}
}
