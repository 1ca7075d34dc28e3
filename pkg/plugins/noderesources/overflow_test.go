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
	"math"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
	"github.com/batch-scheduler/batch-scheduler/pkg/plugins/internal/testutil"
)

// TestHugeAllocatable: nodes that report absurd amounts (2^63-1 cores,
// 1e30, an exabyte-scale memory) have plenty, not a wrapped negative
// amount: a small pod fits, scores sensibly, and idle is huge.
func TestHugeAllocatable(t *testing.T) {
	tests := []struct {
		name     string
		capacity res
		on       []*v1.Pod
		pod      *v1.Pod
	}{
		{name: "cpu 2^63-1", capacity: res{"cpu": "9223372036854775807", "memory": "8Gi", "pods": "10"}, pod: pod("p", res{"cpu": "1"})},
		{name: "cpu 1e30", capacity: res{"cpu": "1e30", "memory": "8Gi", "pods": "10"}, pod: pod("p", res{"cpu": "1"})},
		{name: "memory 1e30", capacity: res{"cpu": "4", "memory": "1e30", "pods": "10"}, pod: pod("p", res{"memory": "1Gi"})},
		{name: "pods 2^63-1", capacity: res{"cpu": "4", "memory": "8Gi", "pods": "9223372036854775807"}, pod: pod("p", nil)},
		{name: "gpu 1e30", capacity: res{"cpu": "4", "pods": "10", "nvidia.com/gpu": "1e30"}, pod: pod("p", res{"nvidia.com/gpu": "1"})},
		{name: "cpu 1e30 with a huge pod on it", capacity: res{"cpu": "1e30", "memory": "8Gi", "pods": "10"},
			on: []*v1.Pod{pod("a", res{"cpu": "1e15"})}, pod: pod("p", res{"cpu": "1"})},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ni := testutil.NodeInfo(t, node(tt.capacity), tt.on...)
			for _, strategy := range []string{"", "scoringStrategy: MostAllocated"} {
				pl := newFit(t, strategy+"\nresources: [{name: cpu}, {name: memory}, {name: pods}, {name: nvidia.com/gpu}]")
				if s := pl.Filter(context.Background(), framework.NewCycleState(), tt.pod, ni); !s.IsSuccess() {
					t.Errorf("Filter = %v %q, want success", s.Code(), s.Reasons())
				}
				score, s := pl.Score(context.Background(), framework.NewCycleState(), tt.pod, ni)
				if !s.IsSuccess() || score < framework.MinNodeScore || score > framework.MaxNodeScore {
					t.Errorf("%s Score = %d %v, want a score in [0, 100]", strategy, score, s)
				}
			}
			idle := ni.Idle()
			if idle.MilliCPU < 0 || idle.Memory < 0 || idle.Pods < 0 {
				t.Errorf("Idle = %v, want no negative amount", idle)
			}
			for name, v := range idle.Scalar {
				if v < 0 {
					t.Errorf("Idle %s = %d, want >= 0", name, v)
				}
			}
		})
	}
}

// TestHugeRequestDoesNotFitANormalNode: the saturation works both ways.
func TestHugeRequestDoesNotFitANormalNode(t *testing.T) {
	ni := testutil.NodeInfo(t, node(res{"cpu": "4", "memory": "8Gi", "pods": "10"}))
	pl := newFit(t, "")
	s := pl.Filter(context.Background(), framework.NewCycleState(), pod("p", res{"cpu": "1e30"}), ni)
	if s.IsSuccess() || len(s.Reasons()) != 1 || s.Reasons()[0] != "Insufficient cpu" {
		t.Errorf("Filter = %v %q, want Insufficient cpu", s.Code(), s.Reasons())
	}
	if got := leastAllocatedScore(1, math.MaxInt64); got != 99 {
		t.Errorf("leastAllocatedScore(1, MaxInt64) = %d, want 99", got)
	}
	if got := mostAllocatedScore(math.MaxInt64-1, math.MaxInt64); got != 99 {
		t.Errorf("mostAllocatedScore(MaxInt64-1, MaxInt64) = %d, want 99", got)
	}
}
