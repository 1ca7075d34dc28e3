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
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/batch-scheduler/batch-scheduler/pkg/cache/informerhost"
	"github.com/batch-scheduler/batch-scheduler/pkg/eventhandlers"
	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
)

// The informer host (pkg/cache/informerhost) runs the informers; the cache
// gives it the filters that need its state and starts its own loops beside
// it. These aliases keep the names the cache's users know.
type (
	// CustomInformer is informerhost.CustomInformer.
	CustomInformer = informerhost.CustomInformer
	// ResourceDiscovery is informerhost.ResourceDiscovery.
	ResourceDiscovery = informerhost.ResourceDiscovery
	// InformerBacklog is informerhost.InformerBacklog.
	InformerBacklog = informerhost.InformerBacklog
	// HandlersStatus is informerhost.HandlersStatus.
	HandlersStatus = informerhost.HandlersStatus
	// RegistrationStatus is informerhost.RegistrationStatus.
	RegistrationStatus = informerhost.RegistrationStatus
)

// DefaultRediscoveryPeriod is the default of Options.RediscoveryPeriod.
const DefaultRediscoveryPeriod = informerhost.DefaultRediscoveryPeriod

// Run starts the informers and delivers their events to h (see
// informerhost.Host.Run for which informers and how), then returns; it
// also starts the cache's own loops: the scheduling queue's flushes, the
// expiry of assumed pods (see FinishBinding), which checks every second.
// Everything stops when ctx ends. Use WaitForHandlersSync to wait for the
// initial lists. Run succeeds at most once per cache.
func (c *SchedulerCache) Run(ctx context.Context, h eventhandlers.Interface) error {
	if err := c.host.Run(ctx, h); err != nil {
		return fmt.Errorf("running scheduler cache: %w", err)
	}
	go c.queue.Run(ctx)
	go c.runAssumedCleanup(ctx)
	return nil
}

// AddCustomInformer adds an informer whose objects come from outside the
// API server; see informerhost.Host.AddCustomInformer.
func (c *SchedulerCache) AddCustomInformer(ci CustomInformer) error {
	return c.host.AddCustomInformer(ci)
}

// WaitForHandlersSync blocks until every event handler Run registered has
// received its informer's initial list.
func (c *SchedulerCache) WaitForHandlersSync(ctx context.Context) error {
	return c.host.WaitForHandlersSync(ctx)
}

// HandlersSynced reports whether every event handler Run registered has
// synced, and names those that have not.
func (c *SchedulerCache) HandlersSynced() (bool, []string) { return c.host.HandlersSynced() }

// Handlers returns the sync state of each registration Run made.
func (c *SchedulerCache) Handlers() HandlersStatus { return c.host.Handlers() }

// EventBacklog reports, per informer, the events delivered towards the
// handler that it has not finished.
func (c *SchedulerCache) EventBacklog() []InformerBacklog { return c.host.EventBacklog() }

// EventCounts returns what the dispatchers delivered so far, per resource
// and event.
func (c *SchedulerCache) EventCounts() []informerhost.EventCounts { return c.host.EventCounts() }

// StateRules are the running handler's rules for what the cache records
// (eventhandlers.StateRules), nil when it has none or before Run.
func (c *SchedulerCache) StateRules() eventhandlers.StateRules { return c.host.StateRules() }

// CustomInformers returns the custom informers added so far.
func (c *SchedulerCache) CustomInformers() []CustomInformer { return c.host.CustomInformers() }

// nodeFilter returns the node filter of Options.NodeSelector, nil for
// none.
func (c *SchedulerCache) nodeFilter() func(next toolscache.ResourceEventHandler) toolscache.ResourceEventHandler {
	sel := c.opts.NodeSelector
	if sel == nil || sel.Empty() {
		return nil
	}
	return func(next toolscache.ResourceEventHandler) toolscache.ResourceEventHandler {
		return &nodeSelectorHandler{selector: sel, cache: c, next: next}
	}
}

// podFilter passes the pods the scheduler must see (framework.PodOfInterest):
// those bound to a node (they use its resources) and those it is
// responsible for scheduling.
// Anything that is not a pod is passed on for the handler to reject.
func (c *SchedulerCache) podFilter(obj any) bool {
	pod, ok := unwrapTombstone(obj).(*v1.Pod)
	if !ok {
		return true
	}
	return framework.PodOfInterest(pod, c.IsResponsibleFor)
}

// nodeSelectorHandler passes on the events of the nodes that match
// selector, like a FilteringResourceEventHandler (a node that starts
// matching arrives as an add, one that stops as a delete), and tells the
// cache which nodes exist but do not match, so that usage on them is kept
// aside instead of on placeholders. Anything that is not a node is passed
// on for the handler to reject.
type nodeSelectorHandler struct {
	selector labels.Selector
	cache    *SchedulerCache
	next     toolscache.ResourceEventHandler
}

var _ toolscache.ResourceEventHandler = &nodeSelectorHandler{}

// match reports whether obj is a node matching the selector (or not a node
// at all), and the node's name.
func (h *nodeSelectorHandler) match(obj any) (name string, matches bool) {
	node, ok := unwrapTombstone(obj).(*v1.Node)
	if !ok || node == nil {
		return "", true
	}
	return node.Name, h.selector.Matches(labels.Set(node.Labels))
}

func (h *nodeSelectorHandler) OnAdd(obj any, isInInitialList bool) {
	name, matches := h.match(obj)
	if !matches {
		h.cache.setNodeExcluded(name, true)
		return
	}
	h.next.OnAdd(obj, isInInitialList)
}

func (h *nodeSelectorHandler) OnUpdate(oldObj, newObj any) {
	_, oldMatches := h.match(oldObj)
	name, newMatches := h.match(newObj)
	switch {
	case oldMatches && newMatches:
		h.next.OnUpdate(oldObj, newObj)
	case newMatches:
		h.cache.setNodeExcluded(name, false)
		h.next.OnAdd(newObj, false)
	case oldMatches:
		h.cache.setNodeExcluded(name, true)
		h.next.OnDelete(oldObj)
	default:
		h.cache.setNodeExcluded(name, true)
	}
}

func (h *nodeSelectorHandler) OnDelete(obj any) {
	name, matches := h.match(obj)
	if !matches {
		h.cache.setNodeExcluded(name, false)
		return
	}
	h.next.OnDelete(obj)
}

func unwrapTombstone(obj any) any {
	if tomb, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		return tomb.Obj
	}
	return obj
}
