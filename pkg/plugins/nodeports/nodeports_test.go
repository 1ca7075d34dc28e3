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

package nodeports

import (
	"context"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	configapi "github.com/batch-scheduler/batch-scheduler/pkg/apis/config"
	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
	"github.com/batch-scheduler/batch-scheduler/pkg/plugins/internal/testutil"
	st "github.com/batch-scheduler/batch-scheduler/pkg/testing"
)

// port is a host port for withPorts; ip and protocol may be empty.
type port struct {
	ip       string
	protocol v1.Protocol
	port     int32
}

// withPorts returns a pod named name whose main container asks for ports.
func withPorts(name string, ports ...port) *v1.Pod {
	pod := st.MakePod().Name(name).Obj()
	for _, p := range ports {
		pod.Spec.Containers[0].Ports = append(pod.Spec.Containers[0].Ports,
			v1.ContainerPort{ContainerPort: 8080, HostIP: p.ip, Protocol: p.protocol, HostPort: p.port})
	}
	return pod
}

// withInitPorts returns a pod whose init container, a sidecar if sidecar
// is set, asks for ports.
func withInitPorts(name string, sidecar bool, ports ...port) *v1.Pod {
	pod := st.MakePod().Name(name).Obj()
	c := v1.Container{Name: "init", Image: "busybox"}
	if sidecar {
		always := v1.ContainerRestartPolicyAlways
		c.RestartPolicy = &always
	}
	for _, p := range ports {
		c.Ports = append(c.Ports, v1.ContainerPort{ContainerPort: 9090, HostIP: p.ip, Protocol: p.protocol, HostPort: p.port})
	}
	pod.Spec.InitContainers = append(pod.Spec.InitContainers, c)
	return pod
}

// filter runs PreFilter for a job of pod and then Filter on node, as the
// framework does: Filter is not called if PreFilter returned Skip.
func filter(t *testing.T, pod *v1.Pod, node *framework.NodeInfo) *framework.Status {
	t.Helper()
	pl := &NodePorts{}
	state := framework.NewCycleState()
	s := pl.PreFilter(context.Background(), state, &framework.Job{Pending: []*v1.Pod{pod}, MinAvailable: 1})
	if s.IsSkip() {
		if hasHostPorts(pod) {
			t.Fatalf("PreFilter skipped a pod with host ports")
		}
		return nil
	}
	if !s.IsSuccess() {
		t.Fatalf("PreFilter = %v", s)
	}
	return pl.Filter(context.Background(), state, pod, node)
}

func TestFilter(t *testing.T) {
	node := st.MakeNode().Name("n").Obj()
	tcp80 := port{"", v1.ProtocolTCP, 80}
	tests := []struct {
		name     string
		pod      *v1.Pod
		existing []*v1.Pod
		reject   bool
	}{
		{name: "no host ports", pod: st.MakePod().Name("p").Obj(), existing: []*v1.Pod{withPorts("x", tcp80)}},
		{name: "container port without host port", pod: func() *v1.Pod {
			p := st.MakePod().Name("p").Obj()
			p.Spec.Containers[0].Ports = []v1.ContainerPort{{ContainerPort: 80}}
			return p
		}(), existing: []*v1.Pod{withPorts("x", port{"", "", 80})}},
		{name: "empty node", pod: withPorts("p", tcp80)},
		{name: "same port and protocol", pod: withPorts("p", tcp80), existing: []*v1.Pod{withPorts("x", tcp80)}, reject: true},
		{name: "empty protocol is TCP", pod: withPorts("p", port{"", "", 80}), existing: []*v1.Pod{withPorts("x", tcp80)}, reject: true},
		{name: "different protocol", pod: withPorts("p", port{"", v1.ProtocolUDP, 80}), existing: []*v1.Pod{withPorts("x", tcp80)}},
		{name: "SCTP against TCP", pod: withPorts("p", port{"", v1.ProtocolSCTP, 80}), existing: []*v1.Pod{withPorts("x", tcp80)}},
		{name: "different port", pod: withPorts("p", port{"", "", 81}), existing: []*v1.Pod{withPorts("x", tcp80)}},
		{name: "different specific IPs", pod: withPorts("p", port{"10.0.0.1", "", 80}), existing: []*v1.Pod{withPorts("x", port{"10.0.0.2", "", 80})}},
		{name: "same specific IP", pod: withPorts("p", port{"10.0.0.1", "", 80}), existing: []*v1.Pod{withPorts("x", port{"10.0.0.1", "", 80})}, reject: true},
		{name: "wanted 0.0.0.0 against a specific IP", pod: withPorts("p", port{"0.0.0.0", "", 80}), existing: []*v1.Pod{withPorts("x", port{"10.0.0.2", "", 80})}, reject: true},
		{name: "wanted specific IP against 0.0.0.0", pod: withPorts("p", port{"10.0.0.1", "", 80}), existing: []*v1.Pod{withPorts("x", port{"0.0.0.0", "", 80})}, reject: true},
		{name: "wanted empty IP against a specific IP", pod: withPorts("p", tcp80), existing: []*v1.Pod{withPorts("x", port{"10.0.0.2", "", 80})}, reject: true},
		{name: "wanted specific IP against empty IP", pod: withPorts("p", port{"10.0.0.1", "", 80}), existing: []*v1.Pod{withPorts("x", tcp80)}, reject: true},
		{name: "one of several ports taken", pod: withPorts("p", port{"", "", 81}, port{"", v1.ProtocolUDP, 53}),
			existing: []*v1.Pod{withPorts("x", tcp80), withPorts("y", port{"", v1.ProtocolUDP, 53})}, reject: true},
		{name: "holder finished", pod: withPorts("p", tcp80),
			existing: []*v1.Pod{func() *v1.Pod { p := withPorts("x", tcp80); p.Status.Phase = v1.PodSucceeded; return p }()}},
		{name: "holder failed", pod: withPorts("p", tcp80),
			existing: []*v1.Pod{func() *v1.Pod { p := withPorts("x", tcp80); p.Status.Phase = v1.PodFailed; return p }()}},
		{name: "holder terminating", pod: withPorts("p", tcp80),
			existing: []*v1.Pod{func() *v1.Pod {
				p := withPorts("x", tcp80)
				p.DeletionTimestamp = st.MakePod().Terminating().Obj().DeletionTimestamp
				return p
			}()}, reject: true},
		{name: "held by a sidecar", pod: withPorts("p", tcp80), existing: []*v1.Pod{withInitPorts("x", true, tcp80)}, reject: true},
		{name: "held by a plain init container", pod: withPorts("p", tcp80), existing: []*v1.Pod{withInitPorts("x", false, tcp80)}},
		{name: "wanted by a sidecar", pod: withInitPorts("p", true, tcp80), existing: []*v1.Pod{withPorts("x", tcp80)}, reject: true},
		{name: "wanted by a plain init container", pod: withInitPorts("p", false, tcp80), existing: []*v1.Pod{withPorts("x", tcp80)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := filter(t, tt.pod, testutil.NodeInfo(t, node, tt.existing...))
			if !tt.reject {
				if !s.IsSuccess() {
					t.Errorf("Filter = %v, want success", s)
				}
				return
			}
			if s.Code() != framework.Unschedulable || len(s.Reasons()) != 1 || s.Reasons()[0] != ErrReason {
				t.Errorf("Filter = %v %q, want Unschedulable %q", s.Code(), s.Reasons(), ErrReason)
			}
			// Without PreFilter, Filter computes the ports itself and agrees.
			if s2 := (&NodePorts{}).Filter(context.Background(), nil, tt.pod, testutil.NodeInfo(t, node, tt.existing...)); s2.Code() != s.Code() {
				t.Errorf("Filter without PreFilter = %v, with = %v", s2, s)
			}
		})
	}
	t.Run("placeholder", func(t *testing.T) {
		ni := testutil.PlaceholderNodeInfo(t, "gone", st.MakePod().Name("a").Obj())
		s := (&NodePorts{}).Filter(context.Background(), nil, withPorts("p", tcp80), ni)
		if s.Code() != framework.UnschedulableAndUnresolvable || s.Message() != "node(s) not found" {
			t.Errorf("Filter = %v", s)
		}
	})
}

func TestPreFilter(t *testing.T) {
	pl := &NodePorts{}
	plain := []*v1.Pod{st.MakePod().Name("a").Obj(), withInitPorts("b", false, port{"", "", 80})}
	if s := pl.PreFilter(context.Background(), framework.NewCycleState(), &framework.Job{Pending: plain}); !s.IsSkip() {
		t.Errorf("PreFilter of a job without host ports = %v, want Skip", s)
	}
	state := framework.NewCycleState()
	want := withPorts("c", port{"", "", 80})
	if s := pl.PreFilter(context.Background(), state, &framework.Job{Pending: append(plain, want)}); !s.IsSuccess() {
		t.Fatalf("PreFilter = %v", s)
	}
	d, ok := state.Read(stateKey)
	if !ok {
		t.Fatal("PreFilter wrote no state")
	}
	s := d.(preFilterState)
	if len(s) != 1 || len(s[want]) != 1 || s[want][0] != (hostPort{wildcardIP, v1.ProtocolTCP, 80}) {
		t.Errorf("state = %+v, want only c's port, normalised", s)
	}
	if c := s.Clone(); len(c.(preFilterState)) != 1 {
		t.Errorf("Clone = %v", c)
	}
}

// Tasks of a gang placed in one cycle go onto the snapshot's NodeInfo
// (AddPod on a clone): a second task wanting the same host port is kept
// off the node the first was placed on, and the cache's NodeInfo is left
// alone.
func TestGangMembersThroughSnapshot(t *testing.T) {
	a := withPorts("a", port{"", "", 80})
	b := withPorts("b", port{"", "", 80})
	c := withPorts("c", port{"", v1.ProtocolUDP, 80})
	pl := &NodePorts{}
	state := framework.NewCycleState()
	if s := pl.PreFilter(context.Background(), state, &framework.Job{Pending: []*v1.Pod{a, b, c}, MinAvailable: 3}); !s.IsSuccess() {
		t.Fatalf("PreFilter = %v", s)
	}
	cached := testutil.NodeInfo(t, st.MakeNode().Name("n").Obj())
	snap := cached.Clone()
	if s := pl.Filter(context.Background(), state, a, snap); !s.IsSuccess() {
		t.Fatalf("first task: Filter = %v", s)
	}
	snap.AddPod(a)
	if s := pl.Filter(context.Background(), state, b, snap); s.Code() != framework.Unschedulable || s.Message() != ErrReason {
		t.Errorf("second task with the same port: Filter = %v, want Unschedulable", s)
	}
	if s := pl.Filter(context.Background(), state, c, snap); !s.IsSuccess() {
		t.Errorf("task with the same port over UDP: Filter = %v, want success", s)
	}
	if s := pl.Filter(context.Background(), state, b, cached); !s.IsSuccess() {
		t.Errorf("the cache's NodeInfo saw the snapshot's placement: Filter = %v", s)
	}
	// Undoing the placement frees the port again.
	snap.RemovePod(a.UID)
	if s := pl.Filter(context.Background(), state, b, snap); !s.IsSuccess() {
		t.Errorf("after RemovePod: Filter = %v, want success", s)
	}
}

func TestPodDeletedHint(t *testing.T) {
	job := &framework.QueuedJob{Pods: []*v1.Pod{
		st.MakePod().Name("plain").Obj(),
		withPorts("web", port{"10.0.0.1", "", 80}),
	}}
	tests := []struct {
		name string
		gone any
		want framework.QueueingHint
	}{
		{name: "deleted pod had no host ports", gone: st.MakePod().Name("x").Node("n").Obj(), want: framework.QueueSkip},
		{name: "same port", gone: withPorts("x", port{"10.0.0.1", v1.ProtocolTCP, 80}), want: framework.Queue},
		{name: "wildcard holder", gone: withPorts("x", port{"", "", 80}), want: framework.Queue},
		{name: "sidecar holder", gone: withInitPorts("x", true, port{"0.0.0.0", "", 80}), want: framework.Queue},
		{name: "plain init container holder", gone: withInitPorts("x", false, port{"0.0.0.0", "", 80}), want: framework.QueueSkip},
		{name: "other IP", gone: withPorts("x", port{"10.0.0.2", "", 80}), want: framework.QueueSkip},
		{name: "other protocol", gone: withPorts("x", port{"", v1.ProtocolUDP, 80}), want: framework.QueueSkip},
		{name: "other port", gone: withPorts("x", port{"", "", 81}), want: framework.QueueSkip},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := podDeletedHint(klog.Background(), job, tt.gone, nil)
			if err != nil || got != tt.want {
				t.Errorf("hint = %v, %v; want %v", got, err, tt.want)
			}
		})
	}
	for _, bad := range []any{nil, (*v1.Pod)(nil), st.MakeNode().Name("n").Obj()} {
		got, err := podDeletedHint(klog.Background(), job, bad, nil)
		if got != framework.Queue || err == nil || !strings.Contains(err.Error(), "want the deleted *v1.Pod") {
			t.Errorf("hint(%T) = %v, %v; want Queue with an error", bad, got, err)
		}
	}
}

func TestEventsToRegister(t *testing.T) {
	events := (&NodePorts{}).EventsToRegister()
	if len(events) != 2 || events[0].Event != framework.EventAssignedPodDelete || events[0].QueueingHintFn == nil ||
		events[1].Event != framework.EventNodeAdd || events[1].QueueingHintFn != nil {
		t.Errorf("EventsToRegister = %+v", events)
	}
}

func TestNew(t *testing.T) {
	p, err := New(context.Background(), nil, nil)
	if err != nil || p.Name() != Name {
		t.Fatalf("New = %v, %v", p, err)
	}
	if _, err := New(context.Background(), configapi.NewRawArgs("", []byte("foo: 1")), nil); err == nil || !strings.Contains(err.Error(), Name+" args") {
		t.Errorf("New with args = %v, want an error naming the plugin", err)
	}
}

// A pod without host ports costs Filter no allocation on any node.
func TestFilterWithoutPortsAllocatesNothing(t *testing.T) {
	node := testutil.NodeInfo(t, st.MakeNode().Name("n").Obj(), withPorts("x", port{"", "", 80}), st.MakePod().Name("y").Obj())
	pod := st.MakePod().Name("p").Obj()
	pl := &NodePorts{}
	state := framework.NewCycleState()
	if n := testing.AllocsPerRun(100, func() { _ = pl.Filter(context.Background(), state, pod, node) }); n != 0 {
		t.Errorf("Filter of a pod without host ports allocates %v times, want 0", n)
	}
	wants := withPorts("p", port{"", "", 81})
	_ = pl.PreFilter(context.Background(), state, &framework.Job{Pending: []*v1.Pod{wants}})
	if n := testing.AllocsPerRun(100, func() { _ = pl.Filter(context.Background(), state, wants, node) }); n != 0 {
		t.Errorf("Filter of a pod whose port is free allocates %v times, want 0", n)
	}
}
