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

package cache

import (
	"errors"
	"fmt"
	"slices"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
	"github.com/batch-scheduler/batch-scheduler/pkg/resources"
)

// nodeItem links a NodeInfo into the cache's list of nodes, ordered by
// Generation, most recently changed first. UpdateSnapshot walks it from the
// head until it reaches nodes the snapshot already has.
type nodeItem struct {
	info       *framework.NodeInfo
	prev, next *nodeItem
	// ceilingPart is the node's part of the cache's ceilingSum as last
	// counted; ceilingStale says the node changed since (see
	// ceilingLocked).
	ceilingPart  resources.Resource
	ceilingStale bool
}

type removedNode struct {
	name       string
	generation int64
}

// maxRemovedNodes bounds the log of removed nodes; see UpdateSnapshot.
const maxRemovedNodes = 1024

// AddOrUpdateNode implements eventhandlers.NodeCache. What was accounted
// to the node before it arrived (on a placeholder, or aside while the node
// was outside the node selector) is counted on it.
func (c *SchedulerCache) AddOrUpdateNode(node *v1.Node) error {
	if node == nil || node.Name == "" {
		return errors.New("adding node to the scheduler cache: node has no name")
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	item, ok := c.nodes[node.Name]
	switch {
	case !ok:
		info := c.outside[node.Name]
		if info != nil {
			delete(c.outside, node.Name)
			klog.V(4).InfoS("Node now matches the node selector; counting what is accounted to it", "node", klog.KObj(node), "pods", len(info.Pods))
		} else {
			info = framework.NewPlaceholderNodeInfo(node.Name)
		}
		item = &nodeItem{info: info}
		c.nodes[node.Name] = item
	case item.info.Placeholder:
		klog.V(4).InfoS("Node arrived for pods already accounted to it", "node", klog.KObj(node), "pods", len(item.info.Pods))
		c.numPlaceholders--
	}
	item.info.SetNode(node)
	item.info.Cap = c.capOfLocked(node.Name)
	c.touchLocked(item)
	c.updateSizeGaugesLocked()
	return nil
}

// RemoveNode implements eventhandlers.NodeCache. A node that still has
// pods or external usage becomes a placeholder holding them; one that left
// because it no longer matches the node selector keeps them aside instead.
func (c *SchedulerCache) RemoveNode(node *v1.Node) error {
	if node == nil {
		return errors.New("removing node from the scheduler cache: nil node")
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	item, ok := c.nodes[node.Name]
	if !ok || item.info.Placeholder {
		return fmt.Errorf("removing node %q: %w", node.Name, ErrNotFound)
	}
	switch {
	case item.info.Unused():
		c.deleteNodeLocked(item)
	case c.excluded[node.Name]:
		klog.V(2).InfoS("Node no longer matches the node selector; keeping what is accounted to it aside",
			"node", klog.KObj(node), "pods", len(item.info.Pods), "external", len(item.info.ExternalKeys))
		c.deleteNodeLocked(item)
		item.info.MakePlaceholder()
		c.outside[node.Name] = item.info
	default:
		klog.V(2).InfoS("Node removed while pods or external usage are still accounted to it; keeping them on a placeholder",
			"node", klog.KObj(node), "pods", len(item.info.Pods), "external", len(item.info.ExternalKeys))
		item.info.MakePlaceholder()
		c.numPlaceholders++
		c.touchLocked(item)
	}
	c.updateSizeGaugesLocked()
	return nil
}

// setNodeExcluded records whether the node name exists but is outside the
// node selector. The node filter calls it before it delivers the event
// that the change implies (a delete for a node that stops matching, an
// add for one that starts). A placeholder of a node found to be outside
// moves aside. When a node stops being excluded, what was kept aside for
// it becomes a placeholder: the node is gone (usage on an unknown node is
// what placeholders are for), or it starts matching, and then the add
// delivered right after fills the placeholder in.
func (c *SchedulerCache) setNodeExcluded(name string, excluded bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.excluded[name] == excluded {
		return
	}
	if excluded {
		c.excluded[name] = true
		if item, ok := c.nodes[name]; ok && item.info.Placeholder {
			c.deleteNodeLocked(item)
			c.outside[name] = item.info
		}
	} else {
		delete(c.excluded, name)
		if info, ok := c.outside[name]; ok {
			delete(c.outside, name)
			item := &nodeItem{info: info}
			c.nodes[name] = item
			c.numPlaceholders++
			c.touchLocked(item)
		}
	}
	c.updateSizeGaugesLocked()
}

// usageOwner names what is accounted to a node, for logs: a pod, or the
// key of external usage. It is passed by value so that the hot path
// builds no string.
type usageOwner struct {
	pod klog.KMetadata // a pod, or a task, for logs
	key string
}

func (o usageOwner) logKV() []any {
	if o.pod != nil {
		return []any{"pod", klog.KObj(o.pod)}
	}
	return []any{"externalUsage", o.key}
}

// accountingNodeLocked returns the NodeInfo that usage of owner on the
// node name is accounted to, and its list item when it is on the node list
// (and must be touched after a change). When there is none, it creates an
// entry kept aside for a node outside the selector, and a placeholder
// otherwise.
func (c *SchedulerCache) accountingNodeLocked(name string, owner usageOwner) (*framework.NodeInfo, *nodeItem) {
	if item, ok := c.nodes[name]; ok {
		return item.info, item
	}
	if info, ok := c.outside[name]; ok {
		return info, nil
	}
	if c.excluded[name] {
		klog.V(5).InfoS("Usage on a node outside the node selector; keeping it aside", append(owner.logKV(), "node", name)...)
		info := framework.NewPlaceholderNodeInfo(name)
		c.outside[name] = info
		return info, nil
	}
	klog.V(4).InfoS("Usage on a node the cache does not know; accounting it to a placeholder", append(owner.logKV(), "node", name)...)
	item := &nodeItem{info: framework.NewPlaceholderNodeInfo(name)}
	c.nodes[name] = item
	c.numPlaceholders++
	return item.info, item
}

// accountedNodeLocked returns the NodeInfo usage on the node name is
// accounted to, as accountingNodeLocked does, but creates nothing: it is
// nil when nothing is accounted there.
func (c *SchedulerCache) accountedNodeLocked(name string) (*framework.NodeInfo, *nodeItem) {
	if item, ok := c.nodes[name]; ok {
		return item.info, item
	}
	return c.outside[name], nil
}

// releaseNodeLocked is called after usage left info (with list item, or
// nil when info is kept aside): an unused placeholder, or an unused entry
// kept aside, is deleted; a listed node is touched.
func (c *SchedulerCache) releaseNodeLocked(info *framework.NodeInfo, item *nodeItem) {
	switch {
	case item == nil:
		if info.Unused() {
			delete(c.outside, info.Name())
		}
	case info.Placeholder && info.Unused():
		c.deleteNodeLocked(item)
	default:
		c.touchLocked(item)
	}
}

// NodeInfo returns a clone of the named node's NodeInfo, placeholders
// included (but not what is kept aside for nodes outside the selector).
func (c *SchedulerCache) NodeInfo(name string) (*framework.NodeInfo, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	item, ok := c.nodes[name]
	if !ok {
		return nil, false
	}
	return item.info.Clone(), true
}

// touchLocked records a change of item's NodeInfo: a new generation, and
// the head of the list.
func (c *SchedulerCache) touchLocked(item *nodeItem) {
	c.generation++
	item.info.Generation = c.generation
	c.ceilingChangedLocked(item)
	if item.info.Cap != nil || c.capExceeded[item.info.Name()] {
		c.noteCapLocked(item.info)
	}
	if c.headNode == item {
		return
	}
	c.unlinkLocked(item)
	item.next = c.headNode
	if c.headNode != nil {
		c.headNode.prev = item
	}
	c.headNode = item
}

func (c *SchedulerCache) unlinkLocked(item *nodeItem) {
	if item.prev != nil {
		item.prev.next = item.next
	}
	if item.next != nil {
		item.next.prev = item.prev
	}
	if c.headNode == item {
		c.headNode = item.next
	}
	item.prev, item.next = nil, nil
}

// deleteNodeLocked takes item off the node list and logs the removal for
// UpdateSnapshot.
func (c *SchedulerCache) deleteNodeLocked(item *nodeItem) {
	if item.info.Placeholder {
		c.numPlaceholders--
	}
	c.unlinkLocked(item)
	c.ceilingDeletedLocked(item)
	delete(c.nodes, item.info.Name())
	if c.capExceeded[item.info.Name()] {
		delete(c.capExceeded, item.info.Name())
		c.metrics.GrantOvercommittedNodes.Set(float64(len(c.capExceeded)))
	}
	c.generation++
	c.removedNodes = append(c.removedNodes, removedNode{name: item.info.Name(), generation: c.generation})
	if limit := max(maxRemovedNodes, len(c.nodes)); len(c.removedNodes) > limit {
		// Forget the older half. A snapshot older than what is forgotten
		// falls back to a full check of its nodes.
		drop := len(c.removedNodes) / 2
		c.removedNodesFloor = c.removedNodes[drop-1].generation
		c.removedNodes = slices.Delete(c.removedNodes, 0, drop)
	}
}
