package eventhandlers

import (
	"fmt"
	"strings"
)

// Resource names the kind of object a cluster event is about. Native
// resources use the names below; a resource served by a dynamic informer
// uses its "<plural>.<version>.<group>" name.
type Resource string

// Resources the handler Interface covers.
const (
	Pod                   Resource = "Pod"
	Node                  Resource = "Node"
	PersistentVolume      Resource = "PersistentVolume"
	PersistentVolumeClaim Resource = "PersistentVolumeClaim"
	StorageClass          Resource = "StorageClass"
	CSINode               Resource = "CSINode"
	CSIDriver             Resource = "CSIDriver"
	CSIStorageCapacity    Resource = "CSIStorageCapacity"
	PriorityClass         Resource = "PriorityClass"
	// Grant and ExternalWorkload come from custom informers (external
	// resource managers); see pkg/apis/batchscheduler/v1alpha1.
	Grant            Resource = "Grant"
	ExternalWorkload Resource = "ExternalWorkload"
	// WildCard matches every resource in a registered event.
	WildCard Resource = "*"
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

	// Update matches every kind of update.
	Update = UpdateNodeAllocatable | UpdateNodeLabel | UpdateNodeTaint |
		UpdateNodeCondition | UpdateNodeSchedulable | UpdateGeneric
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
	Resource   Resource
	ActionType ActionType
	Label      string
}

// Match reports whether the event e matches the registered interest want:
// the same resource (or want's resource is WildCard) and at least one
// common action bit.
func (e ClusterEvent) Match(want ClusterEvent) bool {
	return (want.Resource == WildCard || want.Resource == e.Resource) && want.ActionType&e.ActionType != 0
}

// String returns the label, or "<Resource>/<Action>" when there is none.
func (e ClusterEvent) String() string {
	if e.Label != "" {
		return e.Label
	}
	return string(e.Resource) + "/" + e.ActionType.String()
}

// Well-known events raised by the default handler. Each case of a node
// update is its own labelled event.
var (
	EventNodeAdd               = ClusterEvent{Resource: Node, ActionType: Add, Label: "NodeAdd"}
	EventNodeDelete            = ClusterEvent{Resource: Node, ActionType: Delete, Label: "NodeDelete"}
	EventNodeAllocatableChange = ClusterEvent{Resource: Node, ActionType: UpdateNodeAllocatable, Label: "NodeAllocatableChange"}
	EventNodeLabelChange       = ClusterEvent{Resource: Node, ActionType: UpdateNodeLabel, Label: "NodeLabelChange"}
	EventNodeTaintChange       = ClusterEvent{Resource: Node, ActionType: UpdateNodeTaint, Label: "NodeTaintChange"}
	EventNodeConditionChange   = ClusterEvent{Resource: Node, ActionType: UpdateNodeCondition, Label: "NodeConditionChange"}
	EventNodeBecameSchedulable = ClusterEvent{Resource: Node, ActionType: UpdateNodeSchedulable, Label: "NodeSpecUnschedulableChange"}
	// EventAssignedPodDelete: a pod bound to a node went away (or finished),
	// freeing its resources.
	EventAssignedPodDelete = ClusterEvent{Resource: Pod, ActionType: Delete, Label: "AssignedPodDelete"}
	// EventExternalUsageDecrease: external usage (an ExternalWorkload) on a
	// node went away, shrank, stopped or moved to another node, freeing
	// resources where it was.
	EventExternalUsageDecrease = ClusterEvent{Resource: ExternalWorkload, ActionType: Delete | UpdateGeneric, Label: "ExternalUsageDecrease"}
	// EventUnschedulableTimeout is used when work is moved because it waited
	// too long in the unschedulable queue, not because of an event.
	EventUnschedulableTimeout = ClusterEvent{Resource: WildCard, ActionType: All, Label: "UnschedulableTimeout"}
)
