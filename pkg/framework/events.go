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

package framework

import (
	"fmt"
	"strings"

	"github.com/batch-scheduler/batch-scheduler/pkg/resources"
)

// EventResource names the kind of object a cluster event is about. Native
// resources use the names below; a resource served by a dynamic informer
// uses its "<plural>.<version>.<group>" name.
type EventResource string

// The resources of the event handler interface (pkg/eventhandlers).
const (
	Pod                   EventResource = "Pod"
	Node                  EventResource = "Node"
	PersistentVolume      EventResource = "PersistentVolume"
	PersistentVolumeClaim EventResource = "PersistentVolumeClaim"
	StorageClass          EventResource = "StorageClass"
	CSINode               EventResource = "CSINode"
	CSIDriver             EventResource = "CSIDriver"
	CSIStorageCapacity    EventResource = "CSIStorageCapacity"
	PriorityClass         EventResource = "PriorityClass"
	// ResourceClaim, ResourceSlice and DeviceClass are Dynamic Resource
	// Allocation's objects (resource.k8s.io/v1). Their informers run only
	// when an enabled plugin registers events of them (they are opt-in:
	// a cluster that does not serve resource.k8s.io/v1 would never sync
	// them).
	ResourceClaim EventResource = "ResourceClaim"
	ResourceSlice EventResource = "ResourceSlice"
	DeviceClass   EventResource = "DeviceClass"
	// ResourceClaimTemplate is opt-in too: its informer runs with
	// ResourceClaim's, for the cache, which counts the devices of the
	// claims pods make from templates against their queues. No event of
	// it reaches the event handler.
	ResourceClaimTemplate EventResource = "ResourceClaimTemplate"
	// Grant and ExternalWorkload come from custom informers (external
	// resource managers); see pkg/apis/batchscheduler/v1alpha1.
	Grant            EventResource = "Grant"
	ExternalWorkload EventResource = "ExternalWorkload"
	// WildCard matches every resource in a registered event.
	WildCard EventResource = "*"
)

// ActionType is a bitmask of what happened to an object. Updates of nodes
// are split by what changed, so that work rejected for one reason is only
// retried when that reason may have gone away.
type ActionType uint64

const (
	Add ActionType = 1 << iota
	Delete
	// UpdateNodeAllocatable: status.allocatable changed.
	UpdateNodeAllocatable
	// UpdateNodeLabel: labels changed.
	UpdateNodeLabel
	// UpdateNodeTaint: spec.taints changed.
	UpdateNodeTaint
	// UpdateNodeCondition: status.conditions changed (ignoring heartbeats).
	UpdateNodeCondition
	// UpdateNodeSchedulable: spec.unschedulable went from true to false.
	UpdateNodeSchedulable
	// UpdateGeneric: any other update, used for resources whose updates are
	// not split further.
	UpdateGeneric
	// UpdatePodLabel: a pod's labels changed.
	UpdatePodLabel
	// UpdatePodScaleDown: a pod's requests shrank (an in-place resize).
	UpdatePodScaleDown

	// Update matches every kind of update.
	Update = UpdateNodeAllocatable | UpdateNodeLabel | UpdateNodeTaint |
		UpdateNodeCondition | UpdateNodeSchedulable | UpdateGeneric | UpdatePodLabel | UpdatePodScaleDown
	// All matches every action.
	All = Add | Delete | Update
)

var actionNames = []struct {
	a    ActionType
	name string
}{
	{Add, "Add"},
	{Delete, "Delete"},
	{UpdateNodeAllocatable, "UpdateNodeAllocatable"},
	{UpdateNodeLabel, "UpdateNodeLabel"},
	{UpdateNodeTaint, "UpdateNodeTaint"},
	{UpdateNodeCondition, "UpdateNodeCondition"},
	{UpdateNodeSchedulable, "UpdateNodeSchedulable"},
	{UpdateGeneric, "Update"},
	{UpdatePodLabel, "UpdatePodLabel"},
	{UpdatePodScaleDown, "UpdatePodScaleDown"},
}

// String renders the set bits joined by "|", e.g. "Add|Delete".
func (a ActionType) String() string {
	if a == All {
		return "All"
	}
	var parts []string
	rest := a
	for _, n := range actionNames {
		if a&n.a != 0 {
			parts = append(parts, n.name)
			rest &^= n.a
		}
	}
	if rest != 0 {
		parts = append(parts, fmt.Sprintf("0x%x", uint64(rest)))
	}
	if len(parts) == 0 {
		return "None"
	}
	return strings.Join(parts, "|")
}

// ClusterEvent says that something happened in the cluster that may make
// waiting work schedulable. Label is a short, stable, human-readable name
// for the specific case (e.g. "NodeTaintChange"); it appears in logs and
// metrics.
type ClusterEvent struct {
	Resource   EventResource
	ActionType ActionType
	Label      string
}

// Matches reports whether the event e, as raised, matches the registered
// interest want: the same resource (or either is WildCard) and at least
// one common action bit. A raised event whose Resource is WildCard stands
// for a change of anything (the unschedulable timeout).
func (e ClusterEvent) Matches(want ClusterEvent) bool {
	sameResource := want.Resource == WildCard || e.Resource == WildCard || want.Resource == e.Resource
	return sameResource && want.ActionType&e.ActionType != 0
}

// String returns the label, or "<Resource>/<Action>" when there is none.
func (e ClusterEvent) String() string {
	if e.Label != "" {
		return e.Label
	}
	return string(e.Resource) + "/" + e.ActionType.String()
}

// Well-known events, registered by plugins. Each case of a node update is
// its own labelled event. The objects an event is raised with (see
// QueueingHintFn) are given for each.
//
// Who raises what (this list is the one place that says so; keep it true):
//
//	event                          raised by
//	EventNodeAdd, EventNode*Change, the event handler, for the node events
//	  EventNodeBecameSchedulable   its informer delivers (the default
//	                               handler: pkg/eventhandlers/default)
//	EventNodeDelete                the event handler, when a node is
//	                               deleted or its policy stops accepting
//	                               it (the default handler), with the old
//	                               node as oldObj: it frees nothing, but
//	                               can remove a spread constraint's domain
//	EventAssignedPodAdd,           the event handler, for the pod events its
//	  EventAssignedPodLabelChange  informer delivers
//	EventAssignedPodScaleDown      the event handler, when a counted pod's
//	                               requests shrink (in-place resize)
//	EventAssignedPodDelete         the event handler, when a counted pod is
//	                               deleted or finishes; the scheduler, when a
//	                               bind fails and its assumed pod is
//	                               forgotten, and when a nomination it held
//	                               for a preemptor is released
//	EventExternalUsageDecrease     the event handler, for ExternalWorkloads
//	ResourceClaim, ResourceSlice,  the event handler, for the events their
//	  DeviceClass events           informers deliver (the default handler
//	                               raises "<Resource>Add", "...Update" and
//	                               "...Delete" with the objects)
//	EventGrantIncrease             the two-level handler, when a node's cap
//	                               grows (pkg/eventhandlers/twolevel)
//	EventGangGroupChange           the cache, when a group object's policy
//	                               changes (SetGroupPolicy, from the handler)
//	EventUnschedulableTimeout      the queue, for jobs that waited too long
//
// The cache only records state otherwise: it raises nothing for what a
// handler tells it (a handler raises the event, through
// MoveAllToActiveOrBackoffQueue, after the cache call that changed
// things).
var (
	EventNodeAdd               = ClusterEvent{Resource: Node, ActionType: Add, Label: "NodeAdd"}
	EventNodeDelete            = ClusterEvent{Resource: Node, ActionType: Delete, Label: "NodeDelete"}
	EventNodeAllocatableChange = ClusterEvent{Resource: Node, ActionType: UpdateNodeAllocatable, Label: "NodeAllocatableChange"}
	EventNodeLabelChange       = ClusterEvent{Resource: Node, ActionType: UpdateNodeLabel, Label: "NodeLabelChange"}
	EventNodeTaintChange       = ClusterEvent{Resource: Node, ActionType: UpdateNodeTaint, Label: "NodeTaintChange"}
	EventNodeConditionChange   = ClusterEvent{Resource: Node, ActionType: UpdateNodeCondition, Label: "NodeConditionChange"}
	EventNodeBecameSchedulable = ClusterEvent{Resource: Node, ActionType: UpdateNodeSchedulable, Label: "NodeBecameSchedulable"}
	// EventAssignedPodDelete: a pod bound to a node went away (or finished),
	// freeing its resources.
	EventAssignedPodDelete = ClusterEvent{Resource: Pod, ActionType: Delete, Label: "AssignedPodDelete"}
	// EventAssignedPodAdd: a pod that uses its node's resources (assigned,
	// not finished) appeared on a node: it was bound, by this scheduler or
	// by any other party, or created with spec.nodeName set. It may be
	// what a pending pod's pod affinity or spread constraint waits for.
	// Raised when the informer reports it, with the pod as newObj (oldObj
	// nil).
	EventAssignedPodAdd = ClusterEvent{Resource: Pod, ActionType: Add, Label: "AssignedPodAdd"}
	// EventAssignedPodLabelChange: the labels of a pod that uses its node's
	// resources changed, so it may now match, or no longer match, pending
	// pods' pod (anti-)affinity terms and spread constraints. Raised with
	// the old and the new pod.
	EventAssignedPodLabelChange = ClusterEvent{Resource: Pod, ActionType: UpdatePodLabel, Label: "AssignedPodUpdate"}
	// EventAssignedPodScaleDown: a pod that uses its node's resources was
	// resized in place to request less of some resource, freeing room on
	// its node. Raised with the old and the new pod.
	EventAssignedPodScaleDown = ClusterEvent{Resource: Pod, ActionType: UpdatePodScaleDown, Label: "AssignedPodScaleDown"}
	// EventExternalUsageDecrease: external usage (an ExternalWorkload) on a
	// node went away, shrank, stopped or moved to another node, freeing
	// resources where it was.
	EventExternalUsageDecrease = ClusterEvent{Resource: ExternalWorkload, ActionType: Delete | UpdateGeneric, Label: "ExternalUsageDecrease"}
	// EventGrantIncrease: the cap on what this scheduler may use on a node
	// (NodeInfo.Cap) grew or was lifted, e.g. because an allocator granted
	// more. It is raised with a *NodeCapChange as both objects' new value
	// (oldObj nil).
	EventGrantIncrease = ClusterEvent{Resource: Grant, ActionType: Add | UpdateGeneric, Label: "GrantIncrease"}
	// EventUnschedulableTimeout is used when work is moved because it waited
	// too long in the unschedulable queue, not because of an event.
	EventUnschedulableTimeout = ClusterEvent{Resource: WildCard, ActionType: All, Label: "UnschedulableTimeout"}
)

// NodeCapChange is the object EventGrantIncrease is raised with: the cap
// on node NodeName went from Old to New. A nil cap is no cap at all; an
// all-zero one is no grant (see NodeInfo.Cap).
type NodeCapChange struct {
	NodeName string
	Old, New *resources.Resource
}
