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

package twolevel

import (
	"maps"
	"time"

	"k8s.io/klog/v2"

	"github.com/batch-scheduler/batch-scheduler/pkg/apis/batchscheduler/v1alpha1"
	"github.com/batch-scheduler/batch-scheduler/pkg/eventhandlers"
	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
	"github.com/batch-scheduler/batch-scheduler/pkg/resources"
)

// grant is what the handler keeps of one of this framework's Grants.
type grant struct {
	node      string
	resources resources.Resource
	// active is false for a Revoked or Expired phase.
	active bool
	// expires is spec.expiresAt; zero when the grant does not expire.
	expires time.Time
	// expiryHandled is set once the timer has taken the grant out of its
	// node's cap.
	expiryHandled bool
}

// liveAt reports whether g counts at now.
func (g grant) liveAt(now time.Time) bool {
	return g.active && (g.expires.IsZero() || now.Before(g.expires))
}

// AddGrant implements eventhandlers.GrantEventHandler.
func (h *Handler) AddGrant(obj any) {
	g, ok := eventhandlers.ObjectAs[*v1alpha1.Grant](obj)
	if !ok {
		return
	}
	h.setGrant(g)
}

// UpdateGrant implements eventhandlers.GrantEventHandler. A grant that
// moved to another framework is forgotten.
func (h *Handler) UpdateGrant(_, newObj any) {
	g, ok := eventhandlers.ObjectAs[*v1alpha1.Grant](newObj)
	if !ok {
		return
	}
	h.setGrant(g)
}

// DeleteGrant implements eventhandlers.GrantEventHandler.
func (h *Handler) DeleteGrant(obj any) {
	g, ok := eventhandlers.ObjectAs[*v1alpha1.Grant](obj)
	if !ok {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.forgetLocked(g.Name)
	delete(h.observed, g.Name)
}

// observeLocked records that the cache holds what g's version gives.
func (h *Handler) observeLocked(g *v1alpha1.Grant) {
	if g.ResourceVersion != "" {
		h.observed[g.Name] = g.ResourceVersion
	}
}

// ObservedGrants implements eventhandlers.GrantObserver: a copy of the
// resourceVersion of each of this framework's grants whose cap the cache
// holds. It is taken under the handler's lock, which is held while a cap
// is handed to the cache, so every version listed is in the cache.
func (h *Handler) ObservedGrants() map[string]string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return maps.Clone(h.observed)
}

// setGrant records g if it is this framework's, and forgets any earlier
// version otherwise. An invalid grant counts as zero: garbage from an
// allocator never widens what the scheduler may use.
func (h *Handler) setGrant(g *v1alpha1.Grant) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if g.Spec.Framework != h.framework {
		h.forgetLocked(g.Name)
		delete(h.observed, g.Name)
		return
	}
	if errs := v1alpha1.ValidateGrant(g); len(errs) > 0 {
		klog.ErrorS(errs.ToAggregate(), "Ignoring an invalid grant; it counts as zero", "grant", klog.KObj(g), "framework", h.framework)
		h.forgetLocked(g.Name)
		// Applied, as zero: the cache holds no cap from it.
		h.observeLocked(g)
		return
	}
	// Whatever the grant's version gives, the cache holds it once this
	// function returns.
	defer h.observeLocked(g)
	entry := grant{
		node:      g.Spec.NodeName,
		resources: resources.FromList(g.Spec.Resources),
		active:    g.Status.Phase == "" || g.Status.Phase == v1alpha1.GrantActive,
	}
	if g.Spec.ExpiresAt != nil {
		entry.expires = g.Spec.ExpiresAt.Time
	}
	old, existed := h.grants[g.Name]
	if existed && old.node != entry.node {
		h.unindexLocked(g.Name, old.node)
	}
	h.grants[g.Name] = entry
	if h.byNode[entry.node] == nil {
		h.byNode[entry.node] = map[string]bool{}
	}
	h.byNode[entry.node][g.Name] = true
	klog.V(4).InfoS("Grant recorded", "grant", klog.KObj(g), "node", entry.node, "resources", entry.resources,
		"active", entry.active, "expiresAt", g.Spec.ExpiresAt)
	if existed && old.node != entry.node {
		h.recomputeLocked(old.node)
	}
	h.recomputeLocked(entry.node)
	if !entry.expires.IsZero() {
		h.poke()
	}
}

// forgetLocked drops the grant name, if the handler has it.
func (h *Handler) forgetLocked(name string) {
	old, ok := h.grants[name]
	if !ok {
		return
	}
	delete(h.grants, name)
	h.unindexLocked(name, old.node)
	h.recomputeLocked(old.node)
}

// unindexLocked takes the grant name off node's index.
func (h *Handler) unindexLocked(name, node string) {
	delete(h.byNode[node], name)
	if len(h.byNode[node]) == 0 {
		delete(h.byNode, node)
	}
}

// recomputeLocked gives the cache node's cap: the sum of the live grants
// there, or no grant. A cap that grew raises EventGrantIncrease.
func (h *Handler) recomputeLocked(node string) {
	now := h.clock.Now()
	var sum resources.Resource
	found := false
	for name := range h.byNode[node] {
		if g := h.grants[name]; g.liveAt(now) {
			sum.Add(g.resources)
			found = true
		}
	}
	old, had := h.caps[node]
	if !found {
		if !had {
			return
		}
		delete(h.caps, node)
		if err := h.cache.RemoveNodeCap(node); err != nil {
			klog.ErrorS(err, "Removing a node's cap", "node", node)
		}
		klog.V(2).InfoS("Node has no live grant any more", "node", node, "framework", h.framework)
		return
	}
	if had && sameAmounts(old, sum) {
		return
	}
	h.caps[node] = sum
	if err := h.cache.SetNodeCap(node, sum); err != nil {
		klog.ErrorS(err, "Setting a node's cap", "node", node)
		return
	}
	klog.V(2).InfoS("Node cap changed", "node", node, "framework", h.framework, "cap", sum)
	var oldCap *resources.Resource
	if had {
		oldCap = &old
	} else {
		oldCap = &resources.Resource{} // from no grant
	}
	if !had || old.AnyLess(sum) {
		newCap := sum.Clone()
		h.cache.MoveAllToActiveOrBackoffQueue(framework.EventGrantIncrease, nil,
			&framework.NodeCapChange{NodeName: node, Old: oldCap, New: &newCap})
	}
}

// sameAmounts reports whether a and b hold the same amounts.
func sameAmounts(a, b resources.Resource) bool {
	return !a.AnyLess(b) && !b.AnyLess(a)
}

// poke wakes Run to re-arm its expiry timer.
func (h *Handler) poke() {
	select {
	case h.wake <- struct{}{}:
	default:
	}
}

// nextExpiry is the earliest expiry of a grant that still counts, or zero.
func (h *Handler) nextExpiry() time.Time {
	h.mu.Lock()
	defer h.mu.Unlock()
	var next time.Time
	for _, g := range h.grants {
		if g.active && !g.expires.IsZero() && !g.expiryHandled && (next.IsZero() || g.expires.Before(next)) {
			next = g.expires
		}
	}
	return next
}

// expire recomputes the nodes of grants that have expired by now.
func (h *Handler) expire() {
	h.mu.Lock()
	defer h.mu.Unlock()
	now := h.clock.Now()
	nodes := map[string]bool{}
	for name, g := range h.grants {
		if g.active && !g.expires.IsZero() && !g.expiryHandled && !now.Before(g.expires) {
			g.expiryHandled = true
			h.grants[name] = g
			nodes[g.node] = true
			klog.V(2).InfoS("Grant expired", "grant", name, "node", g.node, "expiresAt", g.expires)
		}
	}
	for node := range nodes {
		h.recomputeLocked(node)
	}
}
