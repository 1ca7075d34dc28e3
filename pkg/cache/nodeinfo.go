package cache

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/batch-scheduler/batch-scheduler/pkg/resources"
)

// NodeInfo is a node and the pods bound to it, with their accounting.
//
// The cache owns the NodeInfos it stores and changes them under its lock;
// Snapshot holds clones. The Node and the TaskInfos are immutable and
// shared between the cache and its clones.
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
	// Pods are the tasks bound to the node, counted or not.
	Pods []*TaskInfo
	// Generation is the cache-wide generation of the node's last change.
	Generation int64

	name string
}

// Name is the node's name, also for a placeholder.
func (n *NodeInfo) Name() string { return n.name }

// Idle is what is still free: Schedulable minus Requested. It may be
// negative on an over-committed node.
func (n *NodeInfo) Idle() resources.Resource {
	idle := n.Schedulable.Clone()
	idle.Sub(n.Requested)
	return idle
}

// Clone returns a copy of n that can be read while the cache changes n.
func (n *NodeInfo) Clone() *NodeInfo {
	c := &NodeInfo{}
	n.cloneInto(c)
	return c
}

// cloneInto overwrites c with a copy of n, reusing c's slice of pods.
func (n *NodeInfo) cloneInto(c *NodeInfo) {
	pods := append(c.Pods[:0], n.Pods...)
	clear(pods[len(n.Pods):cap(pods)])
	*c = *n
	c.Schedulable = n.Schedulable.Clone()
	c.Requested = n.Requested.Clone()
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
