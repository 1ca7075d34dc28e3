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

package runtime

import (
	"context"
	"fmt"
	"testing"

	v1 "k8s.io/api/core/v1"
	apiruntime "k8s.io/apimachinery/pkg/runtime"

	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
)

// rejectAll is a Filter plugin that rejects every node as
// NodeResourcesFit does a pod too large for any: a status of its own
// per node, naming the plugin.
type rejectAll struct{}

func (rejectAll) Name() string { return "reject-all" }

func (rejectAll) Filter(context.Context, *framework.CycleState, *v1.Pod, *framework.NodeInfo) *framework.Status {
	return framework.NewStatus(framework.Unschedulable, "Insufficient cpu").WithPlugin("reject-all")
}

// unresolvable is what preemption's victim search asks of a node.
func unresolvable(d Diagnosis, node string) bool { return d.Unresolvable(node) }

// BenchmarkFindFeasibleNodesNoFit filters a pod that fits nowhere, as a
// preemptor is filtered every time it is retried, asks of 100 nodes
// whether eviction could help there, as the victim search does, and
// renders the message: the cost is the diagnosis of every rejected node.
func BenchmarkFindFeasibleNodesNoFit(b *testing.B) {
	for _, n := range []int{500, 5000} {
		b.Run(fmt.Sprintf("%dNodes", n), func(b *testing.B) {
			names := make([]string, n)
			for i := range names {
				names[i] = fmt.Sprintf("node-%05d", i)
			}
			nodes := makeNodes(b, names...)
			reg := NewRegistry()
			for _, p := range []framework.Plugin{&fakePlugin{name: "sort"}, &fakePlugin{name: "binder"},
				rejectAll{}} {
				if err := reg.Register(p.Name(), func(context.Context, apiruntime.Object, framework.Handle) (framework.Plugin, error) { return p, nil }); err != nil {
					b.Fatal(err)
				}
			}
			f, err := NewFramework(context.Background(), reg, baseSpec(map[ExtensionPoint]PluginSet{FilterPoint: {{Name: "reject-all"}}}), fakeHandle{}, WithParallelism(2))
			if err != nil {
				b.Fatal(err)
			}
			state, pod := framework.NewCycleState(), testPod()
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				feasible, d, err := f.FindFeasibleNodes(context.Background(), state, pod, nodes)
				if err != nil || len(feasible) != 0 {
					b.Fatalf("feasible %d, err %v", len(feasible), err)
				}
				// Preemption then asks, of each node of its sample,
				// whether evictions could help there.
				for i := 0; i < n; i += n / 100 {
					if unresolvable(d, names[i]) {
						b.Fatal("an Unschedulable rejection is unresolvable")
					}
				}
				if msg := d.Message(n); msg != fmt.Sprintf("0/%d nodes are available: %d Insufficient cpu.", n, n) {
					b.Fatalf("message %q", msg)
				}
			}
		})
	}
}
