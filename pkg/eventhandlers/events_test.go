package eventhandlers_test

import (
	"testing"

	"github.com/batch-scheduler/batch-scheduler/pkg/eventhandlers"
)

func TestActionTypeString(t *testing.T) {
	tests := []struct {
		a    eventhandlers.ActionType
		want string
	}{
		{0, "None"},
		{eventhandlers.Add, "Add"},
		{eventhandlers.Delete, "Delete"},
		{eventhandlers.UpdateNodeAllocatable, "UpdateNodeAllocatable"},
		{eventhandlers.UpdateNodeLabel, "UpdateNodeLabel"},
		{eventhandlers.UpdateNodeTaint, "UpdateNodeTaint"},
		{eventhandlers.UpdateNodeCondition, "UpdateNodeCondition"},
		{eventhandlers.UpdateNodeSchedulable, "UpdateNodeSchedulable"},
		{eventhandlers.UpdateGeneric, "Update"},
		{eventhandlers.Add | eventhandlers.Delete, "Add|Delete"},
		{eventhandlers.Delete | eventhandlers.Add, "Add|Delete"},
		{eventhandlers.Update, "UpdateNodeAllocatable|UpdateNodeLabel|UpdateNodeTaint|UpdateNodeCondition|UpdateNodeSchedulable|Update"},
		{eventhandlers.All, "All"},
		{1 << 40, "0x10000000000"},
		{eventhandlers.Add | 1<<40, "Add|0x10000000000"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			if got := tt.a.String(); got != tt.want {
				t.Errorf("ActionType(%#x).String() = %q, want %q", uint64(tt.a), got, tt.want)
			}
		})
	}
}

func TestClusterEventMatch(t *testing.T) {
	tests := []struct {
		name        string
		event, want eventhandlers.ClusterEvent
		match       bool
	}{
		{"same resource and action",
			eventhandlers.EventNodeAdd, eventhandlers.ClusterEvent{Resource: eventhandlers.Node, ActionType: eventhandlers.Add}, true},
		{"labels are not compared",
			eventhandlers.EventNodeAdd, eventhandlers.ClusterEvent{Resource: eventhandlers.Node, ActionType: eventhandlers.Add, Label: "other"}, true},
		{"one common action bit",
			eventhandlers.EventNodeTaintChange, eventhandlers.ClusterEvent{Resource: eventhandlers.Node, ActionType: eventhandlers.Add | eventhandlers.UpdateNodeTaint}, true},
		{"Update matches every node update",
			eventhandlers.EventNodeConditionChange, eventhandlers.ClusterEvent{Resource: eventhandlers.Node, ActionType: eventhandlers.Update}, true},
		{"Update matches a generic update",
			eventhandlers.ClusterEvent{Resource: eventhandlers.StorageClass, ActionType: eventhandlers.UpdateGeneric}, eventhandlers.ClusterEvent{Resource: eventhandlers.StorageClass, ActionType: eventhandlers.Update}, true},
		{"different node update",
			eventhandlers.EventNodeLabelChange, eventhandlers.ClusterEvent{Resource: eventhandlers.Node, ActionType: eventhandlers.UpdateNodeTaint}, false},
		{"different action",
			eventhandlers.EventNodeDelete, eventhandlers.ClusterEvent{Resource: eventhandlers.Node, ActionType: eventhandlers.Add}, false},
		{"different resource",
			eventhandlers.EventAssignedPodDelete, eventhandlers.ClusterEvent{Resource: eventhandlers.Node, ActionType: eventhandlers.Delete}, false},
		{"wildcard resource",
			eventhandlers.EventAssignedPodDelete, eventhandlers.ClusterEvent{Resource: eventhandlers.WildCard, ActionType: eventhandlers.Delete}, true},
		{"wildcard resource, other action",
			eventhandlers.EventAssignedPodDelete, eventhandlers.ClusterEvent{Resource: eventhandlers.WildCard, ActionType: eventhandlers.Add}, false},
		{"wildcard All matches anything",
			eventhandlers.ClusterEvent{Resource: "widgets.v1.example.com", ActionType: eventhandlers.UpdateGeneric}, eventhandlers.EventUnschedulableTimeout, true},
		{"a wildcard event does not match a specific interest",
			eventhandlers.EventUnschedulableTimeout, eventhandlers.ClusterEvent{Resource: eventhandlers.Node, ActionType: eventhandlers.All}, false},
		{"no action matches nothing",
			eventhandlers.ClusterEvent{Resource: eventhandlers.Node}, eventhandlers.ClusterEvent{Resource: eventhandlers.Node, ActionType: eventhandlers.All}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.event.Match(tt.want); got != tt.match {
				t.Errorf("%v.Match(%v) = %v, want %v", tt.event, tt.want, got, tt.match)
			}
		})
	}
}

func TestClusterEventString(t *testing.T) {
	tests := []struct {
		event eventhandlers.ClusterEvent
		want  string
	}{
		{eventhandlers.EventNodeTaintChange, "NodeTaintChange"},
		{eventhandlers.EventNodeBecameSchedulable, "NodeSpecUnschedulableChange"},
		{eventhandlers.ClusterEvent{Resource: eventhandlers.PersistentVolume, ActionType: eventhandlers.Add}, "PersistentVolume/Add"},
		{eventhandlers.ClusterEvent{Resource: "widgets.v1.example.com", ActionType: eventhandlers.UpdateGeneric}, "widgets.v1.example.com/Update"},
		{eventhandlers.ClusterEvent{Resource: eventhandlers.WildCard, ActionType: eventhandlers.All}, "*/All"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			if got := tt.event.String(); got != tt.want {
				t.Errorf("String() = %q, want %q", got, tt.want)
			}
		})
	}
}

// Well-known events must stay distinct: the queue tells them apart by
// resource and action, metrics by label.
func TestWellKnownEventsAreDistinct(t *testing.T) {
	events := []eventhandlers.ClusterEvent{
		eventhandlers.EventNodeAdd,
		eventhandlers.EventNodeDelete,
		eventhandlers.EventNodeAllocatableChange,
		eventhandlers.EventNodeLabelChange,
		eventhandlers.EventNodeTaintChange,
		eventhandlers.EventNodeConditionChange,
		eventhandlers.EventNodeBecameSchedulable,
		eventhandlers.EventAssignedPodDelete,
		eventhandlers.EventUnschedulableTimeout,
	}
	labels := map[string]bool{}
	for i, e := range events {
		t.Run(e.Label, func(t *testing.T) {
			if e.Label == "" || labels[e.Label] {
				t.Errorf("label %q empty or used twice", e.Label)
			}
			labels[e.Label] = true
			for j, o := range events[:i] {
				if o.Resource == e.Resource && o.ActionType == e.ActionType {
					t.Errorf("%v and events[%d] %v have the same resource and action", e, j, o)
				}
			}
		})
	}
}
