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

package acme_test

import (
	"fmt"
	"slices"
	"sync"

	v1 "k8s.io/api/core/v1"

	"github.com/batch-scheduler/batch-scheduler/pkg/eventhandlers"
	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
	"github.com/batch-scheduler/batch-scheduler/pkg/resources"
)

// memCache is an in-memory eventhandlers.Cache that keeps the nodes it is
// given, as the real cache would, and records the cluster events raised.
// Pods and external usage are only recorded: the acme policy leaves them
// to the default handler.
type memCache struct {
	mu     sync.Mutex
	nodes  map[string]*v1.Node
	events []string
	other  []string
	// strayRemovals lists RemoveNode calls for nodes the cache never
	// had: the handler let through a delete its policy should have
	// ignored.
	strayRemovals []string
}

var _ eventhandlers.Cache = (*memCache)(nil)

func newMemCache() *memCache { return &memCache{nodes: map[string]*v1.Node{}} }

func (m *memCache) AddOrUpdateNode(node *v1.Node) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.nodes[node.Name] = node
	return nil
}

func (m *memCache) RemoveNode(node *v1.Node) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.nodes[node.Name]; !ok {
		m.strayRemovals = append(m.strayRemovals, node.Name)
		return fmt.Errorf("node %s: not in the cache", node.Name)
	}
	delete(m.nodes, node.Name)
	return nil
}

func (m *memCache) MoveAllToActiveOrBackoffQueue(event framework.ClusterEvent, _, _ any) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.events = append(m.events, event.String())
}

func (m *memCache) IsResponsibleFor(pod *v1.Pod) bool {
	return pod.Spec.SchedulerName == "batch-scheduler"
}

func (m *memCache) record(call string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.other = append(m.other, call)
	return nil
}

func (m *memCache) SetExternalUsage(key, nodeName string, usage resources.Resource) error {
	return m.record("SetExternalUsage " + key + " " + nodeName)
}
func (m *memCache) RemoveExternalUsage(key string) error {
	return m.record("RemoveExternalUsage " + key)
}
func (m *memCache) SetNodeCap(node string, limit resources.Resource) error {
	return m.record(fmt.Sprintf("SetNodeCap %s %s", node, limit))
}
func (m *memCache) RemoveNodeCap(node string) error               { return m.record("RemoveNodeCap " + node) }
func (m *memCache) RequireNodeCaps()                              { _ = m.record("RequireNodeCaps") }
func (m *memCache) CapExceededNodes() []eventhandlers.CapExceeded { return nil }

func (m *memCache) AddPod(pod *v1.Pod) error          { return m.record("AddPod " + pod.Name) }
func (m *memCache) UpdatePod(_, newPod *v1.Pod) error { return m.record("UpdatePod " + newPod.Name) }
func (m *memCache) DeletePod(pod *v1.Pod) (bool, error) {
	return pod.Spec.NodeName != "", m.record("DeletePod " + pod.Name)
}
func (m *memCache) AddPendingPod(pod *v1.Pod) error { return m.record("AddPendingPod " + pod.Name) }
func (m *memCache) UpdatePendingPod(_, newPod *v1.Pod) error {
	return m.record("UpdatePendingPod " + newPod.Name)
}
func (m *memCache) RemovePendingPod(pod *v1.Pod) error {
	return m.record("RemovePendingPod " + pod.Name)
}

// node returns the node the cache holds under name, or nil.
func (m *memCache) node(name string) *v1.Node {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.nodes[name]
}

// nodeNames returns the names of the nodes in the cache, sorted.
func (m *memCache) nodeNames() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var names []string
	for n := range m.nodes {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// takeEvents returns the events raised since the last call and forgets
// them.
func (m *memCache) takeEvents() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	e := m.events
	m.events = nil
	return e
}
