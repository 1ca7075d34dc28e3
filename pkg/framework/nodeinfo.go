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
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/batch-scheduler/batch-scheduler/pkg/resources"
)

// NodeInfo is a node and what is accounted to it: the pods bound or
// assumed to it, the usage of things that are not pods (external usage,
// e.g. VMs) and, under two-level scheduling, the cap on what this
// scheduler's own pods may use there (the capacity an allocator granted).
//
// The cache owns the NodeInfos it stores and changes them under its lock;
// it never hands them out, only clones (a Snapshot's, or Clone's). The Node
// and the TaskInfos are immutable and shared between the cache and its
// clones, and so is Cap, which the cache replaces rather than modifies;
// everything else (the Pods slice, Schedulable, Requested, OwnRequested,
// External) is a clone's own, so AddPod and RemovePod on a clone never
// affect the cache. Plugins read NodeInfos and never modify them: the
// scheduling loop places pods on them tentatively through its Snapshot.
type NodeInfo struct {
	// Node is the node object; nil for a placeholder.
	Node *v1.Node
	// Placeholder is true while pods or external usage are accounted to a
	// node the cache does not know (yet, or any more). A placeholder is not
	// schedulable and never reaches a snapshot.
	Placeholder bool
	// Unschedulable and Taints are the node's spec.unschedulable and
	// spec.taints (shared with the node object: never modify it), kept by
	// SetNode. The Filter plugins that every pod runs on every node of its
	// window read them here, in the NodeInfo they already touch: reading
	// them in the node object is another cache miss per node, the bulk of
	// a Filter's cost at 20,000 nodes.
	Unschedulable bool
	Taints        []v1.Taint
	// Schedulable is the node's status.allocatable.
	Schedulable resources.Resource
	// Requested is the sum of the requests of the counted pods.
	Requested resources.Resource
	// External is the sum of the external usage accounted to the node
	// (ExternalUsageCache), e.g. of ExternalWorkloads.
	External resources.Resource
	// OwnRequested is the part of Requested that this scheduler's own
	// pods request (tasks with Own set).
	OwnRequested resources.Resource
	// Cap, when not nil, bounds what this scheduler's own pods may request
	// on the node in total, in every resource but the pod count (which
	// only allocatable bounds). A resource Cap does not name is capped at
	// zero, so an all-zero Cap means nothing of ours may run here: the
	// node has no grant for us. Nil means uncapped. Shared between
	// clones: replace it, never modify it.
	Cap *resources.Resource
	// ExternalKeys are the keys of that usage, sorted. Like Node, the
	// slice is shared between clones and must not be modified; replace it.
	ExternalKeys []string
	// Pods are the tasks bound or assumed to the node, counted or not.
	Pods []*TaskInfo
	// Generation is the cache-wide generation of the node's last change.
	Generation int64
	// PodsWithAffinity counts the counted tasks (TaskInfo.Counted) whose
	// pods have pod affinity or pod anti-affinity, required or preferred;
	// PodsWithRequiredAntiAffinity those with required pod anti-affinity.
	// AddTask and RemoveTask keep them, so that the inter-pod affinity
	// plugin can tell at a glance that no existing pod constrains the
	// incoming one.
	PodsWithAffinity             int
	PodsWithRequiredAntiAffinity int
	// PodsWithHostPorts counts the counted tasks whose pods ask for a host
	// port in some container or init container (see MayHoldHostPorts): on
	// a node where it is zero no host port is taken, and the node ports
	// plugin need not look at the pods.
	PodsWithHostPorts int

	name string
}

// NewNodeInfo returns a NodeInfo for node with pods on it, accounted as
// the cache accounts them (see AddPod), each in a job of its own. It is
// how tests of plugins build their input. A nil node gives a placeholder
// without a name.
func NewNodeInfo(node *v1.Node, pods ...*v1.Pod) *NodeInfo {
	n := &NodeInfo{}
	if node != nil {
		n.name = node.Name
		n.SetNode(node)
	} else {
		n.MakePlaceholder()
	}
	for _, pod := range pods {
		n.AddPod(pod)
	}
	return n
}

// NewPlaceholderNodeInfo returns an empty placeholder for the node name,
// for the cache: usage on a node it does not know is accounted there until
// SetNode fills it in.
func NewPlaceholderNodeInfo(name string) *NodeInfo {
	n := &NodeInfo{name: name}
	n.MakePlaceholder()
	return n
}

// Name is the node's name, also for a placeholder.
func (n *NodeInfo) Name() string { return n.name }

// Idle is what is still free for this scheduler: Schedulable minus
// Requested minus External and, on a capped node, at most CapIdle. It may
// be negative on an over-committed node.
func (n *NodeInfo) Idle() resources.Resource {
	idle := n.Schedulable.Clone()
	idle.Sub(n.Requested)
	idle.Sub(n.External)
	if capIdle, ok := n.CapIdle(); ok {
		pods := idle.Pods
		idle = idle.Min(capIdle)
		idle.Pods = pods
	}
	return idle
}

// CapIdle is what the cap leaves for this scheduler's pods: Cap minus
// OwnRequested, negative where the scheduler's pods use more than the
// cap. ok is false on an uncapped node. The pod count is not capped and
// reads zero.
func (n *NodeInfo) CapIdle() (idle resources.Resource, ok bool) {
	if n.Cap == nil {
		return resources.Resource{}, false
	}
	idle = n.Cap.Clone()
	idle.Sub(n.OwnRequested)
	idle.Pods = 0
	return idle, true
}

// CapExceeded reports whether this scheduler's pods request more than the
// cap on the node in some resource: the grant shrank below what runs
// there. Nothing new of ours fits until that clears.
func (n *NodeInfo) CapExceeded() bool {
	if n.Cap == nil {
		return false
	}
	o, c := &n.OwnRequested, n.Cap
	if o.MilliCPU > c.MilliCPU || o.Memory > c.Memory || o.EphemeralStorage > c.EphemeralStorage {
		return true
	}
	for name, v := range o.Scalar {
		if v > c.Scalar[name] {
			return true
		}
	}
	return false
}

// Unused reports whether nothing is accounted to n: no pods and no
// external usage. The cache deletes an unused placeholder.
func (n *NodeInfo) Unused() bool {
	return len(n.Pods) == 0 && len(n.ExternalKeys) == 0
}

// Clone returns a copy of n that can be read while the cache changes n,
// and changed with AddPod and RemovePod without affecting n.
func (n *NodeInfo) Clone() *NodeInfo {
	c := &NodeInfo{}
	n.CloneInto(c)
	return c
}

// CloneInto overwrites c with a copy of n, reusing c's slice of pods. It
// is Clone for a caller that keeps NodeInfos across updates (a Snapshot).
func (n *NodeInfo) CloneInto(c *NodeInfo) {
	pods := append(c.Pods[:0], n.Pods...)
	clear(pods[len(n.Pods):cap(pods)])
	*c = *n
	c.Schedulable = n.Schedulable.Clone()
	c.Requested = n.Requested.Clone()
	c.External = n.External.Clone()
	c.OwnRequested = n.OwnRequested.Clone()
	c.Pods = pods
}

// AddPod accounts pod on n, as a task bound to n if its spec.nodeName is
// n's name and as a task assumed on n otherwise; its requests count
// against n unless it has finished. n's Generation does not change.
//
// The task is in a job of its own, whatever gang the pod names: n reads
// no gang signals (see GroupResolver). A caller for whom the task's job
// matters builds the task and uses AddTask: the scheduling cycle and
// preemption's simulation, placing the pods of the job they schedule,
// add NewAssumedTaskInfo's tasks; a test that puts gangs on nodes adds
// NewTaskInfo's, with a resolver of pkg/dialects.
//
// It is for clones only, and for tests.
func (n *NodeInfo) AddPod(pod *v1.Pod) {
	requests := resources.PodRequests(pod)
	if pod.Spec.NodeName != "" && pod.Spec.NodeName == n.name {
		n.AddTask(NewTaskInfoInGroup(pod, requests, Membership{}))
		return
	}
	n.AddTask(NewAssumedTaskInfoInGroup(pod, n.name, requests, Membership{}))
}

// RemovePod takes the pod with uid off n, undoing AddPod, and reports
// whether it was there. Like AddPod, it is for clones only.
func (n *NodeInfo) RemovePod(uid types.UID) bool {
	return n.RemoveTask(uid)
}

// SetNode makes n the NodeInfo of node, which has n's name; a placeholder
// stops being one. The cache calls it when the node arrives or changes.
func (n *NodeInfo) SetNode(node *v1.Node) {
	n.Node = node
	n.Placeholder = false
	n.Unschedulable = node.Spec.Unschedulable
	n.Taints = node.Spec.Taints
	n.Schedulable = resources.FromList(node.Status.Allocatable)
}

// MakePlaceholder turns n into a placeholder: the cache calls it when a
// node with usage accounted to it leaves.
func (n *NodeInfo) MakePlaceholder() {
	n.Node = nil
	n.Placeholder = true
	n.Unschedulable = false
	n.Taints = nil
	n.Schedulable = resources.Resource{}
}

// AddTask accounts t on n. The caller makes sure no task of the same pod
// is there already.
func (n *NodeInfo) AddTask(t *TaskInfo) {
	n.Pods = append(n.Pods, t)
	if t.Counted {
		n.Requested.Add(t.Requests)
		if t.Own {
			n.OwnRequested.Add(t.Requests)
		}
		n.count(t.nodeCounts(), 1)
	}
}

// MayHoldHostPorts reports whether some container or init container of
// pod asks for a host port. It is a superset of the ports a running pod
// holds (an init container that does not keep running holds none), which
// is all PodsWithHostPorts needs.
func MayHoldHostPorts(pod *v1.Pod) bool {
	return mayHoldHostPorts(pod.Spec.Containers, pod.Spec.InitContainers)
}

func mayHoldHostPorts(containers, initContainers []v1.Container) bool {
	for _, cs := range [][]v1.Container{containers, initContainers} {
		for i := range cs {
			for j := range cs[i].Ports {
				if cs[i].Ports[j].HostPort > 0 {
					return true
				}
			}
		}
	}
	return false
}

// HasPod reports whether the node holds the task of the pod with uid.
func (n *NodeInfo) HasPod(uid types.UID) bool {
	for _, t := range n.Pods {
		if t.GetUID() == uid {
			return true
		}
	}
	return false
}

// RemoveTask removes the task of the pod with uid and reports whether it
// was there. Nodes hold tens of pods, so a scan is cheaper than an index.
func (n *NodeInfo) RemoveTask(uid types.UID) bool {
	for i, t := range n.Pods {
		if t.GetUID() != uid {
			continue
		}
		if t.Counted {
			n.Requested.Sub(t.Requests)
			if t.Own {
				n.OwnRequested.Sub(t.Requests)
			}
			n.count(t.nodeCounts(), -1)
		}
		last := len(n.Pods) - 1
		n.Pods[i] = n.Pods[last]
		n.Pods[last] = nil
		n.Pods = n.Pods[:last]
		return true
	}
	return false
}
