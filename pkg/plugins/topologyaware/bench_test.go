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

package topologyaware

import (
	"context"
	"fmt"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
	st "github.com/batch-scheduler/batch-scheduler/pkg/testing"
)

// BenchmarkPlacements measures one Placements call for a gang of 8 with a
// required rack at 5,000 nodes (50 blocks of 2 racks of 50 nodes, 30 pods
// on each node), against a baseline in the same run: one pass over the
// nodes reading what each has idle, the least any room-based search does.
// With -short (hack/test-benchmarks.sh's smoke run), 500 nodes.
//
//	go test -run '^$' -bench BenchmarkPlacements ./pkg/plugins/topologyaware/
func BenchmarkPlacements(b *testing.B) {
	size := 5000
	if testing.Short() {
		size = 500
	}
	var nodes []*framework.NodeInfo
	for i := range size {
		name := fmt.Sprintf("n%d", i)
		n := framework.NewNodeInfo(st.MakeNode().Name(name).Label(HostnameLabel, name).
			Label(RackLabel, fmt.Sprintf("r%d", i/50)).Label(BlockLabel, fmt.Sprintf("b%d", i/100)).
			Capacity(res{v1.ResourceCPU: "64", v1.ResourceMemory: "256Gi", v1.ResourcePods: "110"}).Obj())
		for j := range 30 {
			n.AddPod(st.MakePod().Name(fmt.Sprintf("%s-p%d", name, j)).Node(name).Req(res{v1.ResourceCPU: "1", v1.ResourceMemory: "2Gi"}).Obj())
		}
		nodes = append(nodes, n)
	}
	b.Run("baseline-idle-pass", func(b *testing.B) {
		var sink int64
		for b.Loop() {
			for _, n := range nodes {
				sink += n.Idle().MilliCPU
			}
		}
		_ = sink
	})
	b.Run("rack-required", func(b *testing.B) {
		pl := newPlugin(b, "")
		job := gangJob(8, &framework.TopologyConstraint{Key: RackLabel, Required: true})
		for b.Loop() {
			if _, st := pl.Placements(context.Background(), nil, job, nodes); !st.IsSuccess() {
				b.Fatal(st.AsError())
			}
		}
	})
}
