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

package defaulthandler_test

import (
	"errors"
	"slices"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	defaulthandler "github.com/batch-scheduler/batch-scheduler/pkg/eventhandlers/default"
	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
	st "github.com/batch-scheduler/batch-scheduler/pkg/testing"
)

type rl = map[v1.ResourceName]string

// node1 is a schedulable node with 4 CPUs, 8Gi and room for 10 pods.
func node1(rv string) *st.NodeWrapper {
	return st.MakeNode().Name("n1").RV(rv).Label("zone", "a").
		Capacity(rl{v1.ResourceCPU: "4", v1.ResourceMemory: "8Gi", v1.ResourcePods: "10"})
}

func TestAddNode(t *testing.T) {
	t.Run("cached, then NodeAdd raised with the node", func(t *testing.T) {
		h, fc := newHandler(t)
		node := node1("1").Obj()
		h.AddNode(node)
		want := []string{"AddOrUpdateNode n1", "MoveAll NodeAdd"}
		if d := diffCalls(fc.Calls(), want); d != "" {
			t.Error(d)
		}
		if got, want := fc.Moves(), []move{{Event: framework.EventNodeAdd, NewObj: node}}; !slices.EqualFunc(got, want, moveEqual) {
			t.Errorf("moves = %+v, want %+v", got, want)
		}
	})
	t.Run("event raised although the cache failed", func(t *testing.T) {
		h, fc := newHandler(t)
		fc.err = errors.New("cache is broken")
		h.AddNode(node1("1").Obj())
		want := []string{"AddOrUpdateNode n1", "MoveAll NodeAdd"}
		if d := diffCalls(fc.Effects(), want); d != "" {
			t.Error(d)
		}
	})
	t.Run("pods that arrived before their node are left to the cache", func(t *testing.T) {
		h, fc := newHandler(t)
		h.AddPod(runningPod("1").Obj())
		h.AddNode(node1("1").Obj())
		want := []string{"AddPod default/p", moveAssignedPodAdd, "AddOrUpdateNode n1", "MoveAll NodeAdd"}
		if d := diffCalls(fc.Effects(), want); d != "" {
			t.Error(d)
		}
	})
}

// moveEqual compares raised events and the very objects they carried.
func moveEqual(a, b move) bool {
	return a.Event == b.Event && a.OldObj == b.OldObj && a.NewObj == b.NewObj
}

func TestUpdateNode(t *testing.T) {
	t0 := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	t1 := metav1.NewTime(t0.Add(time.Minute))
	tests := []struct {
		name     string
		old, new *v1.Node
		// want lists the labels of the events raised, in order.
		want []string
	}{
		{"resync",
			node1("5").Obj(), node1("5").Obj(),
			nil},
		{"heartbeat only",
			node1("1").Heartbeat(t0, "KubeletReady", "ok").Obj(), node1("2").Heartbeat(t1, "KubeletReady", "ok").Obj(),
			nil},
		{"condition reason, message and transition time only",
			node1("1").Heartbeat(t0, "KubeletReady", "ok").Obj(),
			node1("2").Heartbeat(t0, "KubeletReady", "still ok").ConditionTransition(v1.NodeReady, t1).Obj(),
			nil},
		{"annotation only",
			node1("1").Obj(), node1("2").Annotation("note", "x").Obj(),
			nil},
		{"capacity only",
			node1("1").Obj(), node1("2").Capacity(rl{v1.ResourceCPU: "8", v1.ResourceMemory: "8Gi", v1.ResourcePods: "10"}).
				Allocatable(rl{v1.ResourceCPU: "4", v1.ResourceMemory: "8Gi", v1.ResourcePods: "10"}).Obj(),
			nil},
		{"allocatable written differently but equal",
			node1("1").Obj(), node1("2").Allocatable(rl{v1.ResourceCPU: "4000m", v1.ResourceMemory: "8192Mi", v1.ResourcePods: "10"}).Obj(),
			nil},
		{"became unschedulable",
			node1("1").Obj(), node1("2").Unschedulable(true).Obj(),
			nil},
		{"became schedulable",
			node1("1").Unschedulable(true).Obj(), node1("2").Obj(),
			[]string{"NodeBecameSchedulable"}},
		{"allocatable grew",
			node1("1").Obj(), node1("2").Allocatable(rl{v1.ResourceCPU: "8", v1.ResourceMemory: "8Gi", v1.ResourcePods: "10"}).Obj(),
			[]string{"NodeAllocatableChange"}},
		{"allocatable shrank",
			node1("1").Obj(), node1("2").Allocatable(rl{v1.ResourceCPU: "2", v1.ResourceMemory: "8Gi", v1.ResourcePods: "10"}).Obj(),
			[]string{"NodeAllocatableChange"}},
		{"extended resource appeared",
			node1("1").Obj(), node1("2").Allocatable(rl{v1.ResourceCPU: "4", v1.ResourceMemory: "8Gi", v1.ResourcePods: "10", "example.com/gpu": "2"}).Obj(),
			[]string{"NodeAllocatableChange"}},
		{"label added",
			node1("1").Obj(), node1("2").Label("gpu", "true").Obj(),
			[]string{"NodeLabelChange"}},
		{"label value changed",
			node1("1").Obj(), node1("2").Label("zone", "b").Obj(),
			[]string{"NodeLabelChange"}},
		{"label removed",
			node1("1").Label("gpu", "true").Obj(), node1("2").Obj(),
			[]string{"NodeLabelChange"}},
		{"taint added",
			node1("1").Obj(), node1("2").Taint("dedicated", "batch", v1.TaintEffectNoSchedule).Obj(),
			[]string{"NodeTaintChange"}},
		{"taint removed",
			node1("1").Taint("dedicated", "batch", v1.TaintEffectNoSchedule).Obj(), node1("2").Obj(),
			[]string{"NodeTaintChange"}},
		{"taint effect changed",
			node1("1").Taint("dedicated", "batch", v1.TaintEffectNoSchedule).Obj(),
			node1("2").Taint("dedicated", "batch", v1.TaintEffectPreferNoSchedule).Obj(),
			[]string{"NodeTaintChange"}},
		{"ready condition changed",
			node1("1").Condition(v1.NodeReady, v1.ConditionFalse).Obj(), node1("2").Obj(),
			[]string{"NodeConditionChange"}},
		{"condition added",
			node1("1").Obj(), node1("2").Condition(v1.NodeMemoryPressure, v1.ConditionFalse).Obj(),
			[]string{"NodeConditionChange"}},
		{"several changes raise one event each, in a fixed order",
			node1("1").Unschedulable(true).Obj(),
			node1("2").Label("gpu", "true").Taint("gpu", "", v1.TaintEffectNoSchedule).
				Allocatable(rl{v1.ResourceCPU: "8", v1.ResourceMemory: "8Gi", v1.ResourcePods: "10"}).
				Condition(v1.NodeReady, v1.ConditionUnknown).Obj(),
			[]string{"NodeBecameSchedulable", "NodeAllocatableChange", "NodeLabelChange", "NodeTaintChange", "NodeConditionChange"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, fc := newHandler(t)
			h.UpdateNode(tt.old, tt.new)

			var want []string
			if tt.old.ResourceVersion != tt.new.ResourceVersion {
				want = append(want, "AddOrUpdateNode n1")
			}
			for _, label := range tt.want {
				want = append(want, "MoveAll "+label)
			}
			if d := diffCalls(fc.Calls(), want); d != "" {
				t.Error(d)
			}
			// Every event carries both versions, for the plugins' hints.
			for _, m := range fc.Moves() {
				if m.Event.Resource != framework.Node || m.OldObj != tt.old || m.NewObj != tt.new {
					t.Errorf("event %+v with objects %v -> %v, want a node event with the old and new node", m.Event, m.OldObj, m.NewObj)
				}
			}
			if got := labels(defaulthandler.NodeUpdateEvents(tt.old, tt.new)); !slices.Equal(got, tt.want) {
				t.Errorf("NodeUpdateEvents = %q, want %q", got, tt.want)
			}
		})
	}
}

func labels(events []framework.ClusterEvent) []string {
	var out []string
	for _, e := range events {
		out = append(out, e.Label)
	}
	return out
}

// Each node change raises the well-known event for it, so that the queue
// can match it against what rejected a job.
func TestNodeUpdateEventsAreTheWellKnownOnes(t *testing.T) {
	old := node1("1").Unschedulable(true).Obj()
	updated := node1("2").Label("gpu", "true").Taint("gpu", "", v1.TaintEffectNoSchedule).
		Allocatable(rl{v1.ResourceCPU: "8"}).Condition(v1.NodeReady, v1.ConditionFalse).Obj()
	got := defaulthandler.NodeUpdateEvents(old, updated)
	want := []framework.ClusterEvent{
		framework.EventNodeBecameSchedulable,
		framework.EventNodeAllocatableChange,
		framework.EventNodeLabelChange,
		framework.EventNodeTaintChange,
		framework.EventNodeConditionChange,
	}
	if !slices.Equal(got, want) {
		t.Errorf("NodeUpdateEvents = %v, want %v", got, want)
	}
}

func TestUpdateNodeEventsRaisedAlthoughTheCacheFailed(t *testing.T) {
	h, fc := newHandler(t)
	fc.err = errors.New("cache is broken")
	h.UpdateNode(node1("1").Obj(), node1("2").Label("gpu", "true").Obj())
	want := []string{"AddOrUpdateNode n1", "MoveAll NodeLabelChange"}
	if d := diffCalls(fc.Effects(), want); d != "" {
		t.Error(d)
	}
}

func TestDeleteNode(t *testing.T) {
	tests := []struct {
		name string
		obj  any
	}{
		{"node", node1("1").Obj()},
		{"tombstone", tombstone(node1("1").Obj())},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, fc := newHandler(t)
			h.DeleteNode(tt.obj)
			// Losing a node frees nothing, but it can take a topology
			// domain away: EventNodeDelete is raised, with the old node.
			if d := diffCalls(fc.Calls(), []string{"RemoveNode n1", "MoveAll NodeDelete"}); d != "" {
				t.Error(d)
			}
			moves := fc.Moves()
			if len(moves) != 1 || moves[0].Event != framework.EventNodeDelete || moves[0].NewObj != nil {
				t.Fatalf("moves = %+v, want one EventNodeDelete with no new object", moves)
			}
			if gone, ok := moves[0].OldObj.(*v1.Node); !ok || gone.Name != "n1" {
				t.Errorf("EventNodeDelete raised with %T %v as the old object, want the deleted node n1", moves[0].OldObj, moves[0].OldObj)
			}
		})
	}
	t.Run("cache error", func(t *testing.T) {
		h, fc := newHandler(t)
		fc.err = errors.New("cache is broken")
		h.DeleteNode(node1("1").Obj())
		if d := diffCalls(fc.Calls(), []string{"RemoveNode n1", "MoveAll NodeDelete"}); d != "" {
			t.Error(d)
		}
	})
	t.Run("with pods on it", func(t *testing.T) {
		// The node goes first; its pods' deletes follow and still free
		// resources. The cache keeps the pods on a placeholder meanwhile.
		h, fc := newHandler(t)
		finished := st.MakePod().Name("done").Node("n1").Phase(v1.PodSucceeded).Obj()
		h.AddNode(node1("1").Obj())
		h.AddPod(runningPod("1").Obj())
		h.AddPod(finished)
		fc.Reset()
		h.DeleteNode(tombstone(node1("1").Obj()))
		h.DeletePod(tombstone(runningPod("1").Obj()))
		h.DeletePod(finished)
		want := []string{"RemoveNode n1", "MoveAll NodeDelete", "DeletePod default/p", moveAssignedPodDelete, "DeletePod default/done"}
		if d := diffCalls(fc.Effects(), want); d != "" {
			t.Error(d)
		}
	})
}
