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

package informerhost

import (
	"context"
	"fmt"
	"slices"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic/dynamicinformer"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/batch-scheduler/batch-scheduler/pkg/eventhandlers"
	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
)

// DefaultRediscoveryPeriod is the default of Options.RediscoveryPeriod.
const DefaultRediscoveryPeriod = 30 * time.Second

// initialDiscoveryRetry is how often the first discovery is retried while
// the API server does not answer (or Options.RediscoveryPeriod if that is
// shorter).
const initialDiscoveryRetry = 2 * time.Second

// discoverySyncName is what HandlersSynced names while the first
// discovery has not succeeded.
const discoverySyncName = "discovery"

// ResourceDiscovery is the part of a discovery client the cache uses to
// find which resources the API server serves (k8s.io/client-go/discovery's
// DiscoveryInterface has it). A group version that is not served is a
// NotFound error.
type ResourceDiscovery interface {
	ServerResourcesForGroupVersion(groupVersion string) (*metav1.APIResourceList, error)
}

// discoveryState is what HandlersSynced reads of discovery; runMu guards
// it.
type discoveryState struct {
	// pending is set from Run until the first discovery succeeded.
	pending bool
}

// discoverer finds which of the resources the handler would like watched
// (eventhandlers.DiscoveredResourceRequester) the API server serves, and
// starts an informer for each, at start-up and every
// Options.RediscoveryPeriod. Its fields are set before run starts and
// only run's goroutine uses them afterwards, so it has no lock of its
// own; it takes runMu to register an informer, like Run.
type discoverer struct {
	c          *Host
	h          eventhandlers.Interface
	candidates []eventhandlers.DiscoveredResource
	// watched are the resources with an informer: those of
	// eventhandlers.DynamicResourceRequester (started by Run itself), and
	// those run started.
	watched map[schema.GroupVersionResource]bool
	// forbidden are the served resources the scheduler was not allowed to
	// list, logged once.
	forbidden map[schema.GroupVersionResource]bool
	// factory and since are Run's dynamic informer factory and the clock
	// of its backlog trackers.
	factory dynamicinformer.DynamicSharedInformerFactory
	since   func() int64
	// rounds counts the discoveries that succeeded.
	rounds int
}

// newDiscoverer returns the discoverer of h's candidates, or nil when h
// asks for none or they cannot be watched (no dynamic client or no
// discovery): that is logged, and nothing waits for them. static are the
// resources Run watches for eventhandlers.DynamicResourceRequester.
func (c *Host) newDiscoverer(h eventhandlers.Interface, static []schema.GroupVersionResource) *discoverer {
	requester, ok := h.(eventhandlers.DiscoveredResourceRequester)
	if !ok {
		return nil
	}
	var candidates []eventhandlers.DiscoveredResource
	seen := map[schema.GroupVersionResource]bool{}
	for _, r := range requester.DiscoveredResources() {
		name := eventhandlers.DynamicResourceName(r.GVR)
		if _, err := eventhandlers.ParseDynamicResource(string(name)); err != nil {
			klog.ErrorS(err, "Ignoring an invalid resource the event handler would like discovered", "resource", r.GVR.String())
			continue
		}
		if seen[r.GVR] {
			continue
		}
		seen[r.GVR] = true
		candidates = append(candidates, r)
	}
	if len(candidates) == 0 {
		return nil
	}
	if c.opts.DynamicClient == nil || c.opts.Discovery == nil {
		klog.InfoS("The event handler would like resources watched where served, but the cache has no dynamic client or discovery; not watching them",
			"candidates", len(candidates))
		return nil
	}
	d := &discoverer{c: c, h: h, candidates: candidates, watched: map[schema.GroupVersionResource]bool{},
		forbidden: map[schema.GroupVersionResource]bool{}}
	for _, gvr := range static {
		if seen[gvr] {
			klog.V(2).InfoS("Resource to discover is watched already as a dynamic resource", "resource", eventhandlers.DynamicResourceName(gvr))
		}
		d.watched[gvr] = true
	}
	return d
}

// size is the number of candidates, 0 for a nil discoverer.
func (d *discoverer) size() int {
	if d == nil {
		return 0
	}
	return len(d.candidates)
}

// run discovers the candidates until ctx ends: first every
// initialDiscoveryRetry until a discovery succeeds, which lifts the
// "discovery" entry of HandlersSynced, then every
// Options.RediscoveryPeriod.
func (d *discoverer) run(ctx context.Context) {
	period := d.c.opts.RediscoveryPeriod
	err := wait.PollUntilContextCancel(ctx, min(initialDiscoveryRetry, period), true, func(ctx context.Context) (bool, error) {
		if err := d.discover(ctx, true); err != nil {
			klog.ErrorS(err, "Discovering the resources the event handler would like watched; retrying")
			return false, nil
		}
		return true, nil
	})
	if err != nil {
		return
	}
	d.c.runMu.Lock()
	d.c.discovery.pending = false
	d.c.runMu.Unlock()
	ticker := time.NewTicker(period)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
			if err := d.discover(ctx, false); err != nil {
				klog.ErrorS(err, "Rediscovering the resources the event handler would like watched")
			}
		}
	}
}

// discover asks which candidates not watched yet are served and starts
// an informer for each. The first time (initial), an API server that
// does not answer for a group version fails the whole discovery, so that
// it is retried before anything is watched; later, that group version is
// skipped until the next round.
func (d *discoverer) discover(ctx context.Context, initial bool) error {
	// served maps each served resource to its kind.
	served := map[schema.GroupVersionResource]string{}
	asked := map[schema.GroupVersion]bool{}
	for _, r := range d.candidates {
		gv := r.GVR.GroupVersion()
		if d.watched[r.GVR] || asked[gv] || d.alternativeWatched(r) {
			continue
		}
		asked[gv] = true
		if ctx.Err() != nil {
			return ctx.Err()
		}
		list, err := d.c.opts.Discovery.ServerResourcesForGroupVersion(gv.String())
		switch {
		case apierrors.IsNotFound(err):
			if initial {
				klog.V(2).InfoS("Group version not served by the API server; its resources are not watched", "groupVersion", gv.String())
			}
			continue
		case err != nil && initial:
			return fmt.Errorf("discovering %s: %w", gv, err)
		case err != nil:
			klog.V(2).InfoS("Discovering a group version failed; trying again at the next rediscovery", "groupVersion", gv.String(), "err", err)
			continue
		}
		for _, ar := range list.APIResources {
			served[gv.WithResource(ar.Name)] = ar.Kind
		}
	}
	for _, r := range d.candidates {
		kind, ok := served[r.GVR]
		if !ok || d.watched[r.GVR] || d.alternativeWatched(r) {
			continue
		}
		// The owner kind gangs are inferred from, if the resource is one.
		owner := framework.GroupKind(kind + "." + r.GVR.Group)
		if !d.allowed(ctx, r.GVR) {
			d.c.setOwnerKindUnavailable(owner, true)
			continue
		}
		// Before the informer delivers anything: its objects define the
		// gangs of the kind's pods.
		d.c.setOwnerKindUnavailable(owner, false)
		if err := d.start(ctx, r); err != nil {
			// Registering fails only on a programming error; do not try
			// again every round.
			klog.ErrorS(err, "Starting the informer of a discovered resource", "resource", eventhandlers.DynamicResourceName(r.GVR))
		}
		d.watched[r.GVR] = true
	}
	d.rounds++
	return nil
}

// allowed reports whether the scheduler may list gvr, trying to list one
// object: an informer of a resource it may not list would never sync, and
// hold the sync barrier (and /readyz) forever. A forbidden resource is not
// watched, and is tried again at the next rediscovery (the RBAC may be
// fixed meanwhile); it is logged as an error the first time. If it is the
// resource of an owner kind gangs are inferred from, no gang is inferred
// from that kind meanwhile (see setOwnerKindUnavailable). Any other
// answer lets the informer start, which retries by itself.
func (d *discoverer) allowed(ctx context.Context, gvr schema.GroupVersionResource) bool {
	_, err := d.c.opts.DynamicClient.Resource(gvr).List(ctx, metav1.ListOptions{Limit: 1})
	if !apierrors.IsForbidden(err) {
		return true
	}
	name := eventhandlers.DynamicResourceName(gvr)
	if !d.forbidden[gvr] {
		d.forbidden[gvr] = true
		klog.ErrorS(err, "The scheduler may not list a resource the event handler would like watched; not watching it until it may (grant list and watch on it)",
			"resource", name)
	} else {
		klog.V(2).InfoS("Still not allowed to list a resource the event handler would like watched", "resource", name)
	}
	return false
}

// alternativeWatched reports whether r is one of several versions of
// which only the first served counts (FirstServedVersionOnly) and another
// of them is watched.
func (d *discoverer) alternativeWatched(r eventhandlers.DiscoveredResource) bool {
	if !r.FirstServedVersionOnly {
		return false
	}
	for _, o := range d.candidates {
		if o.FirstServedVersionOnly && o.GVR != r.GVR && o.GVR.Group == r.GVR.Group && o.GVR.Resource == r.GVR.Resource && d.watched[o.GVR] {
			return true
		}
	}
	return false
}

// start starts the informer of r in Run's dynamic factory, registered
// like Run's own (see register): from then on, HandlersSynced waits for
// its initial list too.
func (d *discoverer) start(ctx context.Context, r eventhandlers.DiscoveredResource) error {
	name := eventhandlers.DynamicResourceName(r.GVR)
	informer := d.factory.ForResource(r.GVR).Informer()
	transform := toolscache.TransformFunc(StripForScheduler)
	if r.Transform != nil {
		own := r.Transform
		transform = func(obj any) (any, error) {
			obj, err := StripForScheduler(obj)
			if err != nil {
				return nil, err
			}
			return own(obj)
		}
	}
	if err := informer.SetTransform(transform); err != nil {
		return fmt.Errorf("setting the transform of the %s informer: %w", name, err)
	}
	d.c.runMu.Lock()
	reg, err := d.c.register(d.h, string(name), name, informer, d.since)
	if err == nil {
		// Readers copied the old slice header; never write into its
		// backing array.
		d.c.registrations = append(slices.Clip(d.c.registrations), reg)
	}
	d.c.runMu.Unlock()
	if err != nil {
		return err
	}
	d.factory.Start(ctx.Done())
	if d.rounds == 0 {
		klog.V(2).InfoS("Resource served; watching it", "resource", name)
	} else {
		klog.InfoS("Resource newly served; watching it", "resource", name)
	}
	return nil
}
