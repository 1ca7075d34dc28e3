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

package framework_test

import (
	"testing"

	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
)

func TestActionTypeString(t *testing.T) {
	tests := []struct {
		a    framework.ActionType
		want string
	}{
		{0, "None"},
		{framework.Add, "Add"},
		{framework.Delete, "Delete"},
		{framework.UpdateNodeAllocatable, "UpdateNodeAllocatable"},
		{framework.UpdateNodeLabel, "UpdateNodeLabel"},
		{framework.UpdateNodeTaint, "UpdateNodeTaint"},
		{framework.UpdateNodeCondition, "UpdateNodeCondition"},
		{framework.UpdateNodeSchedulable, "UpdateNodeSchedulable"},
		{framework.UpdateGeneric, "Update"},
		{framework.UpdatePodLabel, "UpdatePodLabel"},
		{framework.UpdatePodScaleDown, "UpdatePodScaleDown"},
		{framework.Add | framework.Delete, "Add|Delete"},
		{framework.Delete | framework.Add, "Add|Delete"},
		{framework.Update, "UpdateNodeAllocatable|UpdateNodeLabel|UpdateNodeTaint|UpdateNodeCondition|UpdateNodeSchedulable|Update|UpdatePodLabel|UpdatePodScaleDown"},
		{framework.All, "All"},
		{1 << 40, "0x10000000000"},
		{framework.Add | 1<<40, "Add|0x10000000000"},
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
		event, want framework.ClusterEvent
		match       bool
	}{
		{"same resource and action",
			framework.EventNodeAdd, framework.ClusterEvent{Resource: framework.Node, ActionType: framework.Add}, true},
		{"labels are not compared",
			framework.EventNodeAdd, framework.ClusterEvent{Resource: framework.Node, ActionType: framework.Add, Label: "other"}, true},
		{"one common action bit",
			framework.EventNodeTaintChange, framework.ClusterEvent{Resource: framework.Node, ActionType: framework.Add | framework.UpdateNodeTaint}, true},
		{"Update matches every node update",
			framework.EventNodeConditionChange, framework.ClusterEvent{Resource: framework.Node, ActionType: framework.Update}, true},
		{"Update matches a generic update",
			framework.ClusterEvent{Resource: framework.StorageClass, ActionType: framework.UpdateGeneric}, framework.ClusterEvent{Resource: framework.StorageClass, ActionType: framework.Update}, true},
		{"Update matches a pod label change",
			framework.EventAssignedPodLabelChange, framework.ClusterEvent{Resource: framework.Pod, ActionType: framework.Update}, true},
		{"a pod addition is not a deletion",
			framework.EventAssignedPodAdd, framework.EventAssignedPodDelete, false},
		{"a pod label change is not a generic update",
			framework.EventAssignedPodLabelChange, framework.ClusterEvent{Resource: framework.Pod, ActionType: framework.UpdateGeneric}, false},
		{"different node update",
			framework.EventNodeLabelChange, framework.ClusterEvent{Resource: framework.Node, ActionType: framework.UpdateNodeTaint}, false},
		{"different action",
			framework.EventNodeDelete, framework.ClusterEvent{Resource: framework.Node, ActionType: framework.Add}, false},
		{"different resource",
			framework.EventAssignedPodDelete, framework.ClusterEvent{Resource: framework.Node, ActionType: framework.Delete}, false},
		{"wildcard resource",
			framework.EventAssignedPodDelete, framework.ClusterEvent{Resource: framework.WildCard, ActionType: framework.Delete}, true},
		{"wildcard resource, other action",
			framework.EventAssignedPodDelete, framework.ClusterEvent{Resource: framework.WildCard, ActionType: framework.Add}, false},
		{"wildcard All matches anything",
			framework.ClusterEvent{Resource: "widgets.v1.example.com", ActionType: framework.UpdateGeneric}, framework.EventUnschedulableTimeout, true},
		{"a wildcard event matches a specific interest",
			framework.EventUnschedulableTimeout, framework.ClusterEvent{Resource: framework.Node, ActionType: framework.Add}, true},
		{"no action matches nothing",
			framework.ClusterEvent{Resource: framework.Node}, framework.ClusterEvent{Resource: framework.Node, ActionType: framework.All}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.event.Matches(tt.want); got != tt.match {
				t.Errorf("%v.Matches(%v) = %v, want %v", tt.event, tt.want, got, tt.match)
			}
		})
	}
}

func TestClusterEventString(t *testing.T) {
	tests := []struct {
		event framework.ClusterEvent
		want  string
	}{
		{framework.EventNodeTaintChange, "NodeTaintChange"},
		{framework.EventNodeBecameSchedulable, "NodeBecameSchedulable"},
		{framework.ClusterEvent{Resource: framework.PersistentVolume, ActionType: framework.Add}, "PersistentVolume/Add"},
		{framework.ClusterEvent{Resource: "widgets.v1.example.com", ActionType: framework.UpdateGeneric}, "widgets.v1.example.com/Update"},
		{framework.ClusterEvent{Resource: framework.WildCard, ActionType: framework.All}, "*/All"},
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
	events := []framework.ClusterEvent{
		framework.EventNodeAdd,
		framework.EventNodeDelete,
		framework.EventNodeAllocatableChange,
		framework.EventNodeLabelChange,
		framework.EventNodeTaintChange,
		framework.EventNodeConditionChange,
		framework.EventNodeBecameSchedulable,
		framework.EventAssignedPodDelete,
		framework.EventUnschedulableTimeout,
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
