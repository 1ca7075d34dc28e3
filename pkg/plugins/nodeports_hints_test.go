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

package plugins_test

import (
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/batch-scheduler/batch-scheduler/pkg/cache"
	defaulthandler "github.com/batch-scheduler/batch-scheduler/pkg/eventhandlers/default"
	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
	"github.com/batch-scheduler/batch-scheduler/pkg/plugins"
	"github.com/batch-scheduler/batch-scheduler/pkg/plugins/internal/testutil"
	"github.com/batch-scheduler/batch-scheduler/pkg/schedulingqueue"
	st "github.com/batch-scheduler/batch-scheduler/pkg/testing"
)

// withHostPort returns a pod whose container asks for host port port over
// protocol on hostIP (empty: every address).
func withHostPort(name, hostIP string, protocol v1.Protocol, port int32) *v1.Pod {
	pod := st.MakePod().Name(name).Obj()
	pod.Spec.Containers[0].Ports = []v1.ContainerPort{{ContainerPort: 8080, HostIP: hostIP, Protocol: protocol, HostPort: port}}
	return pod
}

// A job that NodePorts rejected because a bound pod holds its host port is
// retried, through the real default handler, cache and queue, when that
// pod is deleted or finishes, and not when a pod holding other ports (or
// none) goes away.
func TestNodePortsRetriedWhenThePortIsFreed(t *testing.T) {
	factory, err := plugins.NewInTreeRegistry().Lookup("NodePorts")
	if err != nil {
		t.Fatal(err)
	}
	pl, err := factory(t.Context(), nil, testutil.NewHandle())
	if err != nil {
		t.Fatal(err)
	}
	var events []framework.PluginEvent
	for _, e := range pl.(framework.EnqueueExtensions).EventsToRegister() {
		events = append(events, framework.PluginEvent{Plugin: "NodePorts", ClusterEventWithHint: e})
	}
	node := st.MakeNode().Name("n1").Capacity(res{v1.ResourceCPU: "4", v1.ResourceMemory: "8Gi", v1.ResourcePods: "10"}).Obj()
	pending := withHostPort("pending", "10.0.0.1", "", 80)
	finished := func(p *v1.Pod) *v1.Pod {
		f := p.DeepCopy()
		f.ResourceVersion = "2"
		f.Status.Phase = v1.PodSucceeded
		return f
	}
	tests := []struct {
		name   string
		holder *v1.Pod
		// finish: the holder finishes instead of being deleted.
		finish bool
		want   bool
	}{
		{name: "holder of the port deleted", holder: withHostPort("holder", "", v1.ProtocolTCP, 80), want: true},
		{name: "holder of the port finished", holder: withHostPort("holder", "", v1.ProtocolTCP, 80), finish: true, want: true},
		{name: "pod on another address deleted", holder: withHostPort("holder", "10.0.0.2", v1.ProtocolTCP, 80)},
		{name: "pod with another protocol deleted", holder: withHostPort("holder", "", v1.ProtocolUDP, 80)},
		{name: "pod without host ports deleted", holder: st.MakePod().Name("holder").Obj()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk := testingclock.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
			c, err := cache.New(cache.Options{Clock: clk})
			if err != nil {
				t.Fatal(err)
			}
			h, err := defaulthandler.NewWithArgs(c, defaulthandler.Args{})
			if err != nil {
				t.Fatal(err)
			}
			h.AddNode(node)
			holder := tt.holder.DeepCopy()
			holder.Spec.NodeName = node.Name
			h.AddPod(holder)
			h.AddPod(pending)
			qj, err := c.Queue().Pop(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			if err := c.Queue().AddUnschedulable(qj, schedulingqueue.Attempt{Reason: "rejected by NodePorts", Events: events}); err != nil {
				t.Fatal(err)
			}
			if c.Queue().Lengths().Unschedulable != 1 {
				t.Fatalf("the job is not parked: %+v", c.Queue().Lengths())
			}
			clk.Step(schedulingqueue.DefaultMaxBackoff)
			if tt.finish {
				h.UpdatePod(holder, finished(holder))
			} else {
				h.DeletePod(holder)
			}
			if got := c.Queue().Lengths().Unschedulable == 0; got != tt.want {
				t.Errorf("the job was retried: %v, want %v", got, tt.want)
			}
		})
	}
}
