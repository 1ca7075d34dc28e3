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

package scheduler

import (
	"context"
	"fmt"
	"sync"
	"testing"

	v1 "k8s.io/api/core/v1"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"

	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
	st "github.com/batch-scheduler/batch-scheduler/pkg/testing"
)

// samplingPreemption preempts pods of lower priority with a candidate
// sample, and records the nodes whose pods the victim search asked about.
type samplingPreemption struct {
	sample framework.CandidateSample
	mu     sync.Mutex
	asked  map[string]bool
}

func (*samplingPreemption) Name() string { return "SamplingPreemption" }

func (p *samplingPreemption) PostFilter(ctx context.Context, _ *framework.CycleState, job *framework.Job, room framework.RoomMaker) (*framework.PostFilterResult, *framework.Status) {
	priority := corev1helpers.PodPriority(job.Pending[0])
	out, err := room.WithSample(p.sample).MakeRoom(ctx, func(t *framework.TaskInfo) bool {
		p.mu.Lock()
		p.asked[t.NodeName] = true
		p.mu.Unlock()
		return corev1helpers.PodPriority(t.PodObject()) < priority
	})
	if err != nil {
		return nil, framework.AsStatus(err)
	}
	if !out.Fits {
		return nil, framework.NewStatus(framework.Unschedulable, "no room")
	}
	return &framework.PostFilterResult{}, nil
}

// The victim search stops once it has found the sample's number of
// candidate nodes; nodes where evictions cannot help (a node selector)
// are not candidates and do not count.
func TestPreemptionCandidateSample(t *testing.T) {
	const nodes = 20
	for _, tt := range []struct {
		name   string
		sample framework.CandidateSample
		// selector, when set, limits the preemptor to every fourth node.
		selector bool
		// maxAsked bounds the nodes whose pods the search asked about:
		// the sample, plus the one node the check that any victim exists
		// at all asks about.
		minAsked, maxAsked int
	}{
		{name: "no sample: every node", minAsked: nodes, maxAsked: nodes},
		{name: "absolute 3", sample: framework.CandidateSample{Absolute: 3}, minAsked: 3, maxAsked: 4},
		{name: "25 % of 20", sample: framework.CandidateSample{Percentage: 25, Absolute: 1}, minAsked: 5, maxAsked: 6},
		{name: "absolute above the cluster: every node", sample: framework.CandidateSample{Absolute: 100}, minAsked: nodes, maxAsked: nodes},
		{name: "unresolvable nodes do not count", sample: framework.CandidateSample{Absolute: 2}, selector: true, minAsked: 2, maxAsked: 3},
	} {
		t.Run(tt.name, func(t *testing.T) {
			// The start is random: several rounds, so that a search
			// that counted the skipped nodes would be caught.
			for round := range 8 {
				pl := &samplingPreemption{sample: tt.sample, asked: map[string]bool{}}
				h := newHarnessWith(t, harnessConfig{postFilter: []string{pl.Name()}, extra: []framework.Plugin{pl}})
				ev := newEvictions(h)
				for i := range nodes {
					name := fmt.Sprintf("n%02d", i)
					pool := "a"
					if i%4 == 0 {
						pool = "b"
					}
					h.addNodeObj(st.MakeNode().Name(name).Label("pool", pool).Capacity(res{v1.ResourceCPU: "1", v1.ResourcePods: "110"}).Obj())
					h.addPod(running("low-"+name, name, 10, "1", i).Obj())
				}
				pre := st.MakePod().Name("pre").Priority(100).Req(res{v1.ResourceCPU: "1"})
				if tt.selector {
					pre = pre.NodeSelector(map[string]string{"pool": "b"})
				}
				h.addPod(pre.Obj())
				h.cycle()

				evicted := ev.evicted()
				if len(evicted) != 1 {
					t.Fatalf("round %d: evicted %v, want one pod", round, evicted)
				}
				if tt.selector {
					var i int
					if _, err := fmt.Sscanf(evicted[0], "low-n%02d", &i); err != nil || i%4 != 0 {
						t.Fatalf("round %d: evicted %s, not on a node of pool b", round, evicted[0])
					}
				}
				pl.mu.Lock()
				asked := len(pl.asked)
				pl.mu.Unlock()
				if asked < tt.minAsked || asked > tt.maxAsked {
					t.Fatalf("round %d: the search asked about the pods of %d nodes, want %d to %d", round, asked, tt.minAsked, tt.maxAsked)
				}
			}
		})
	}
}
