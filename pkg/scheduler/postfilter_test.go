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
	"slices"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
	"github.com/batch-scheduler/batch-scheduler/pkg/plugins/defaultpreemption"
	"github.com/batch-scheduler/batch-scheduler/pkg/schedulingqueue"
	st "github.com/batch-scheduler/batch-scheduler/pkg/testing"
)

// roomPlugin is a PostFilter plugin for tests. With a policy, it makes
// room through the scheduler's RoomMaker as a reclaim plugin would: any
// pod the policy allows may go, whatever its priority. Without one, it
// answers status and message without making room.
type roomPlugin struct {
	name    string
	policy  framework.VictimPolicy
	status  *framework.Status
	message string
	calls   int
	// events are the events the plugin registers.
	events []framework.ClusterEventWithHint
}

func (p *roomPlugin) Name() string                                       { return p.name }
func (p *roomPlugin) EventsToRegister() []framework.ClusterEventWithHint { return p.events }

func (p *roomPlugin) PostFilter(ctx context.Context, _ *framework.CycleState, job *framework.Job, room framework.RoomMaker) (*framework.PostFilterResult, *framework.Status) {
	p.calls++
	if p.policy == nil {
		return &framework.PostFilterResult{Message: p.message}, p.status
	}
	out, err := room.MakeRoom(ctx, p.policy)
	switch {
	case err != nil:
		return nil, framework.AsStatus(err)
	case !out.Fits:
		return nil, framework.NewStatus(framework.Unschedulable, "nothing borrowed to take back")
	}
	return &framework.PostFilterResult{Message: fmt.Sprintf("%s: taking back %d borrowed pods", p.name, out.Victims)}, nil
}

func borrowed(t *framework.TaskInfo) bool { return t.GetLabels()["borrowed"] == "true" }

// postFilterCluster has two full nodes: n1 runs a borrowed pod, n2 one of
// lower priority than the incoming pod's, which needs a whole node.
func postFilterCluster(h *harness) (incoming *v1.Pod) {
	h.addNode("n1", "2")
	h.addNode("n2", "2")
	h.addPod(running("borrowed", "n1", 100, "2", 0).Label("borrowed", "true").Obj())
	h.addPod(running("low", "n2", 10, "2", 0).Obj())
	incoming = st.MakePod().Name("incoming").Priority(100).Req(res{v1.ResourceCPU: "2"}).Obj()
	h.addPod(incoming)
	return incoming
}

// The PostFilter plugins run in the profile's order; the first that makes
// room ends the phase, a rejection hands on, and the message of the one
// that acted ends the pod's condition.
func TestPostFilterPluginsRunInOrder(t *testing.T) {
	for _, tt := range []struct {
		name        string
		plugins     []string
		extra       []*roomPlugin
		wantEvicted []string
		wantMessage string
		// wantCalls are the calls each extra plugin must have had.
		wantCalls []int
	}{{
		name:        "default preemption takes the lower-priority pod",
		plugins:     []string{defaultpreemption.Name, "TakeBack"},
		extra:       []*roomPlugin{{name: "TakeBack", policy: borrowed}},
		wantEvicted: []string{"low"},
		wantMessage: "preemption: preempting 1 pods of lower priority",
		wantCalls:   []int{0},
	}, {
		name:        "a reclaim plugin first takes the borrowed pod, whatever its priority",
		plugins:     []string{"TakeBack", defaultpreemption.Name},
		extra:       []*roomPlugin{{name: "TakeBack", policy: borrowed}},
		wantEvicted: []string{"borrowed"},
		wantMessage: "TakeBack: taking back 1 borrowed pods",
		wantCalls:   []int{1},
	}, {
		name:    "a rejection hands on to the next plugin",
		plugins: []string{"Decline", defaultpreemption.Name},
		extra: []*roomPlugin{{name: "Decline", status: framework.NewStatus(framework.Unschedulable, "not mine"),
			message: "decline: looked"}},
		wantEvicted: []string{"low"},
		wantMessage: "preemption: preempting 1 pods of lower priority",
		wantCalls:   []int{1},
	}, {
		name:        "success ends the phase",
		plugins:     []string{"Done", defaultpreemption.Name},
		extra:       []*roomPlugin{{name: "Done", message: "done: room is coming"}},
		wantMessage: "done: room is coming",
		wantCalls:   []int{1},
	}, {
		name:        "an error ends the phase",
		plugins:     []string{"Broken", defaultpreemption.Name},
		extra:       []*roomPlugin{{name: "Broken", status: framework.AsStatus(fmt.Errorf("boom"))}},
		wantMessage: "0/2 nodes are available",
		wantCalls:   []int{1},
	}, {
		name:        "no PostFilter plugin: nothing is evicted",
		plugins:     []string{},
		wantMessage: "0/2 nodes are available",
	}} {
		t.Run(tt.name, func(t *testing.T) {
			var extra []framework.Plugin
			for _, p := range tt.extra {
				extra = append(extra, p)
			}
			h := newHarnessWith(t, harnessConfig{postFilter: tt.plugins, extra: extra})
			ev := newEvictions(h)
			incoming := postFilterCluster(h)
			h.cycle()
			if got := ev.evicted(); !slices.Equal(got, tt.wantEvicted) {
				t.Errorf("evicted %v, want %v", got, tt.wantEvicted)
			}
			c := podScheduledCondition(h.apiPod(incoming))
			if c == nil || !strings.Contains(c.Message, tt.wantMessage) {
				t.Errorf("condition %+v, want a message containing %q", c, tt.wantMessage)
			}
			for i, p := range tt.extra {
				if p.calls != tt.wantCalls[i] {
					t.Errorf("%s ran %d times, want %d", p.name, p.calls, tt.wantCalls[i])
				}
			}
		})
	}
}

// A job every PostFilter plugin declined waits, besides the events of the
// plugins that rejected its pods, for those of the PostFilter plugins that
// may change their mind (Unschedulable), not of those that said nothing
// they watch can help (UnschedulableAndUnresolvable).
func TestDecliningPostFilterPluginsAddTheirEvents(t *testing.T) {
	queueChange := []framework.ClusterEventWithHint{{Event: framework.EventQueueChange}}
	maybe := &roomPlugin{name: "Maybe", status: framework.NewStatus(framework.Unschedulable, "not yet"), events: queueChange}
	never := &roomPlugin{name: "Never", status: framework.NewStatus(framework.UnschedulableAndUnresolvable), events: queueChange}
	h := newHarnessWith(t, harnessConfig{postFilter: []string{"Never", "Maybe"}, extra: []framework.Plugin{never, maybe}})
	postFilterCluster(h)
	h.cycle()
	d := h.cache.Dump().Queue
	if d.Lengths != (schedulingqueue.Lengths{Unschedulable: 1}) {
		t.Fatalf("queue lengths = %+v, want the job unschedulable", d.Lengths)
	}
	events := d.Unschedulable[0].Events
	if !slices.Contains(events, "Maybe:QueueChange") || slices.Contains(events, "Never:QueueChange") {
		t.Errorf("job waits for %q, want Maybe's QueueChange and not Never's", events)
	}
	if maybe.calls != 1 || never.calls != 1 {
		t.Errorf("calls: Never %d, Maybe %d; want 1 each", never.calls, maybe.calls)
	}
}
