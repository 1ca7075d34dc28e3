package cache

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/batch-scheduler/batch-scheduler/pkg/resources"
)

// NodeInfo is a node and the pods bound or assumed to it, with their
// accounting.
//
// The cache owns the NodeInfos it stores and changes them under its lock;
// it never hands them out: NodeInfo and Snapshot hold clones. The Node and
// the TaskInfos are immutable and shared between the cache and its clones;
// everything else (the Pods slice, Schedulable, Requested, External) is a clone's
// own, so AddPod and RemovePod on a clone never affect the cache.
type NodeInfo struct {
	// Node is the cache's copy of the node; nil for a placeholder.
	Node *v1.Node
	// Placeholder is true while pods are accounted to a node the cache does
	// not know (yet, or any more). A placeholder is not schedulable.
	Placeholder bool
	// Schedulable is the node's status.allocatable.
	Schedulable resources.Resource
	// Requested is the sum of the requests of the counted pods.
	Requested resources.Resource
	// External is the sum of the external usage accounted to the node
	// (eventhandlers.ExternalUsageCache), e.g. of ExternalWorkloads.
	External resources.Resource
	// ExternalKeys are the keys of that usage, sorted. Like Node, the
	// slice is shared with the cache and must not be modified.
	ExternalKeys []string
	// Pods are the tasks bound or assumed to the node, counted or not.
	Pods []*TaskInfo
	// Generation is the cache-wide generation of the node's last change.
	Generation int64

	name string
	// snapshot is the Snapshot this clone belongs to, nil for the cache's
	// own NodeInfos and for other clones. dirty records that AddPod or
	// RemovePod changed the clone since the snapshot last refreshed it.
	snapshot *Snapshot
	dirty    bool
}

// NewNodeInfo returns a NodeInfo for node with pods on it, as the cache
// would account them (see AddPod). It is meant for tests of plugins and
// other code that reads NodeInfos. A nil node gives a placeholder without
// a name.
func NewNodeInfo(node *v1.Node, pods ...*v1.Pod) *NodeInfo {
	n := &NodeInfo{}
	if node != nil {
		n.name = node.Name
		n.setNode(node)
	} else {
		n.makePlaceholder()
	}
	for _, pod := range pods {
		n.AddPod(pod)
	}
	return n
}

// Name is the node's name, also for a placeholder.
func (n *NodeInfo) Name() string { return n.name }

// Idle is what is still free: Schedulable minus Requested minus External.
// It may be negative on an over-committed node.
func (n *NodeInfo) Idle() resources.Resource {
	idle := n.Schedulable.Clone()
	idle.Sub(n.Requested)
	idle.Sub(n.External)
	return idle
}

// empty reports whether nothing is accounted to n: no pods and no external
// usage. An empty placeholder is deleted.
func (n *NodeInfo) empty() bool {
	return len(n.Pods) == 0 && len(n.ExternalKeys) == 0
}

// Clone returns a copy of n that can be read while the cache changes n,
// and changed with AddPod and RemovePod without affecting n.
func (n *NodeInfo) Clone() *NodeInfo {
	c := &NodeInfo{}
	n.cloneInto(c)
	c.snapshot, c.dirty = nil, false
	return c
}

// AddPod accounts pod on n, tentatively: it is for a scheduling cycle that
// places several pods (the tasks of a gang) and wants later placements to
// see earlier ones. pod becomes a task bound to n if its spec.nodeName is
// n's name, and a task assumed on n otherwise; its requests count against
// n unless it has finished. n's Generation does not change.
//
// Call it only on clones: a Snapshot's NodeInfos, or what
// (*SchedulerCache).NodeInfo or Clone return. (The cache never hands out
// its own NodeInfos.) A change to a Snapshot's NodeInfo lasts until the
// next UpdateSnapshot, which puts the cache's state back, with whatever
// the scheduler has assumed in the cache meanwhile (AssumePod).
func (n *NodeInfo) AddPod(pod *v1.Pod) {
	t := newTaskInfo(pod)
	if t.Status != TaskBound || t.NodeName != n.name {
		t = assumedTaskInfo(pod, n.name, t.Requests)
	}
	n.addTask(t)
	n.markChanged()
}

// RemovePod takes the pod with uid off n, undoing AddPod (or removing a
// pod the cache had on the node), and reports whether it was there. Like
// AddPod, call it only on clones.
func (n *NodeInfo) RemovePod(uid types.UID) bool {
	if !n.removeTask(uid) {
		return false
	}
	n.markChanged()
	return true
}

// markChanged records, in the Snapshot that holds n, that n no longer
// matches the cache, so that the next UpdateSnapshot refreshes it.
func (n *NodeInfo) markChanged() {
	if n.snapshot == nil || n.dirty {
		return
	}
	n.dirty = true
	n.snapshot.dirty = append(n.snapshot.dirty, n)
}

// cloneInto overwrites c with a copy of n, reusing c's slice of pods. c
// ends up with n's snapshot and dirty fields; the caller sets its own.
func (n *NodeInfo) cloneInto(c *NodeInfo) {
	pods := append(c.Pods[:0], n.Pods...)
	clear(pods[len(n.Pods):cap(pods)])
	*c = *n
	c.Schedulable = n.Schedulable.Clone()
	c.Requested = n.Requested.Clone()
	c.External = n.External.Clone()
	c.Pods = pods
}

func (n *NodeInfo) setNode(node *v1.Node) {
	n.Node = node
	n.Placeholder = false
	n.Schedulable = resources.FromList(node.Status.Allocatable)
}

func (n *NodeInfo) makePlaceholder() {
	n.Node = nil
	n.Placeholder = true
	n.Schedulable = resources.Resource{}
}

func (n *NodeInfo) addTask(t *TaskInfo) {
	n.Pods = append(n.Pods, t)
	if t.Counted {
		n.Requested.Add(t.Requests)
	}
}

// removeTask removes the task of the pod with uid and reports whether it was
// there. Nodes hold tens of pods, so a scan is cheaper than an index.
func (n *NodeInfo) removeTask(uid types.UID) bool {
	for i, t := range n.Pods {
		if t.Pod.UID != uid {
			continue
		}
		if t.Counted {
			n.Requested.Sub(t.Requests)
		}
		last := len(n.Pods) - 1
		n.Pods[i] = n.Pods[last]
		n.Pods[last] = nil
		n.Pods = n.Pods[:last]
		return true
	}
	return false
}

// nodeItem links a NodeInfo into the cache's list of nodes, ordered by
// Generation, most recently changed first. UpdateSnapshot walks it from the
// head until it reaches nodes the snapshot already has.
type nodeItem struct {
	info       *NodeInfo
	prev, next *nodeItem
}
