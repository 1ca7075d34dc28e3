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
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/informers"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/batch-scheduler/batch-scheduler/pkg/eventhandlers"
	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
)

// syncPollInterval is how often WaitForHandlersSync checks the handlers.
// The check is a few atomic loads per informer, and the scheduling loop
// starts right behind it: client-go's 100ms (WaitForCacheSync) would add
// 50ms on average to every start.
const syncPollInterval = 10 * time.Millisecond

// namedRegistration is an event handler registered on an informer, named
// for the sync barrier: "Pod", "widgets.v1.example.com", "custom/<name>".
type namedRegistration struct {
	name     string
	informer toolscache.SharedIndexInformer
	reg      toolscache.ResourceEventHandlerRegistration
	// probe is the registration that counts arrivals for tracker (see
	// EventTracker).
	probe   toolscache.ResourceEventHandlerRegistration
	tracker *EventTracker
}

// Run starts the informers and delivers their events to h, then returns:
// the informers, custom informers, h's Run (if h is an
// eventhandlers.Runner) and the backlog gauges all stop
// when ctx ends. Use WaitForHandlersSync to wait for the initial lists.
//
// The native informers cover Pods and Nodes, always, and those of
// PersistentVolumes, PersistentVolumeClaims, StorageClasses, CSINodes,
// CSIDrivers, CSIStorageCapacities and PriorityClasses that
// Options.Resources lists (all of them by default), and those of
// ResourceClaims, ResourceSlices and DeviceClasses only when it names
// them (opt-in, see IsOptIn), and ResourceClaimTemplates with
// ResourceClaims (for Options.ClaimObserver). The events of
// ResourceClaims, ResourceClaimTemplates, DeviceClasses and ResourceSlices
// pass Options.ClaimObserver, when set, before they reach h. Pods reach h only if
// Options.PodFilter passes them, nodes only through Options.NodeFilter
// (the cache's: a node selector under which a node that stops matching is
// delivered as deleted). If h is an
// eventhandlers.DynamicResourceRequester, a dynamic informer serves each
// resource it asks for; if it is an eventhandlers.DiscoveredResourceRequester,
// a dynamic informer serves each resource it asks for that the API server
// serves, found by discovery now and every Options.RediscoveryPeriod (see
// discovery.go). Custom informers are started whatever
// Options.Resources says.
//
// Run also starts the backlog gauges of every registration.
//
// Run succeeds at most once per host.
func (c *Host) Run(ctx context.Context, h eventhandlers.Interface) error {
	if h == nil {
		return errors.New("nil event handler")
	}
	c.runMu.Lock()
	defer c.runMu.Unlock()
	if c.started {
		return errors.New("already running")
	}
	if c.opts.Client == nil {
		return errors.New("Options.Client is nil")
	}
	gvrs, err := c.dynamicResources(h)
	if err != nil {
		return err
	}

	factory := c.opts.InformerFactory
	if factory == nil {
		factory = NewInformerFactory(c.opts.Client, c.opts.ResyncPeriod)
	}
	disc := c.newDiscoverer(h, gvrs)
	var dynamicFactory dynamicinformer.DynamicSharedInformerFactory
	if len(gvrs) > 0 || disc != nil {
		dynamicFactory = dynamicinformer.NewDynamicSharedInformerFactory(c.opts.DynamicClient, c.opts.ResyncPeriod)
	}

	var regs []namedRegistration
	base := c.opts.Clock.Now()
	since := func() int64 { return int64(c.opts.Clock.Since(base)) }
	register := func(name string, resource framework.EventResource, informer toolscache.SharedIndexInformer) error {
		r, err := c.register(h, name, resource, informer, since)
		if err != nil {
			return err
		}
		regs = append(regs, r)
		return nil
	}
	err = func() error {
		for _, n := range nativeInformers {
			if !c.watchesNative(n.resource) {
				continue
			}
			// Asking the factory for an informer is what makes it start
			// one.
			if err := register(string(n.resource), n.resource, n.informer(factory)); err != nil {
				return err
			}
		}
		for _, gvr := range gvrs {
			informer := dynamicFactory.ForResource(gvr).Informer()
			if err := informer.SetTransform(StripForScheduler); err != nil {
				return fmt.Errorf("setting the transform of the %s informer: %w", gvr, err)
			}
			name := eventhandlers.DynamicResourceName(gvr)
			if err := register(string(name), name, informer); err != nil {
				return err
			}
		}
		for _, ci := range c.customInformers {
			// Objects of external managers carry managedFields and
			// annotations as much as the API server's do.
			if err := ci.Informer.SetTransform(StripForScheduler); err != nil {
				return fmt.Errorf("custom informer %q: setting its transform: %w", ci.Name, err)
			}
			if err := register("custom/"+ci.Name, ci.Resource, ci.Informer); err != nil {
				return fmt.Errorf("custom informer %q: %w", ci.Name, err)
			}
		}
		return nil
	}()
	if err != nil {
		// Custom informers may be shared with others: leave them as they
		// were. The factories' informers were never started.
		for _, r := range regs {
			for _, reg := range []toolscache.ResourceEventHandlerRegistration{r.reg, r.probe} {
				if rmErr := r.informer.RemoveEventHandler(reg); rmErr != nil {
					klog.ErrorS(rmErr, "Removing event handler after a failed start", "informer", r.name)
				}
			}
		}
		return err
	}
	c.registrations = regs
	c.syncReporter, _ = h.(eventhandlers.SyncReporter)
	c.stateRules, _ = h.(eventhandlers.StateRules)
	c.started = true
	c.discovery.pending = disc != nil
	c.warnUnservedResources(gvrs)

	factory.StartWithContext(ctx)
	if dynamicFactory != nil {
		dynamicFactory.Start(ctx.Done())
	}
	for _, ci := range c.customInformers {
		go ci.Informer.RunWithContext(ctx)
	}
	if disc != nil {
		disc.factory, disc.since = dynamicFactory, since
		go disc.run(ctx)
	}
	if runner, ok := h.(eventhandlers.Runner); ok {
		go runner.Run(ctx)
	}
	go c.runBacklogGauges(ctx)
	go func() {
		<-ctx.Done()
		factory.Shutdown()
		if dynamicFactory != nil {
			dynamicFactory.Shutdown()
		}
	}()
	klog.InfoS("Scheduler cache running", "schedulerNames", c.opts.SchedulerNames,
		"informers", len(regs), "dynamicResources", len(gvrs), "customInformers", len(c.customInformers),
		"discoveredCandidates", disc.size())
	return nil
}

// register registers h's methods for resource on informer, behind the
// event counting and panic recovery of a dispatcher and with the backlog
// probe, as name. The caller holds runMu.
func (c *Host) register(h eventhandlers.Interface, name string, resource framework.EventResource,
	informer toolscache.SharedIndexInformer, since func() int64) (namedRegistration, error) {
	handler, err := c.eventHandlerFor(resource, h)
	if err != nil {
		return namedRegistration{}, err
	}
	tracker := NewEventTracker(name, since)
	reg, err := informer.AddEventHandler(tracker.Track(handler))
	if err != nil {
		return namedRegistration{}, fmt.Errorf("registering the event handler on the %s informer: %w", name, err)
	}
	probe, err := informer.AddEventHandler(tracker.Probe())
	if err != nil {
		if rmErr := informer.RemoveEventHandler(reg); rmErr != nil {
			klog.ErrorS(rmErr, "Removing event handler after a failed start", "informer", name)
		}
		return namedRegistration{}, fmt.Errorf("registering the backlog probe on the %s informer: %w", name, err)
	}
	return namedRegistration{name: name, informer: informer, reg: reg, probe: probe, tracker: tracker}, nil
}

// nativeInformers are the native informers Run may start, in the order it
// registers them.
var nativeInformers = []struct {
	resource framework.EventResource
	informer func(informers.SharedInformerFactory) toolscache.SharedIndexInformer
}{
	{framework.Pod, func(f informers.SharedInformerFactory) toolscache.SharedIndexInformer {
		return f.Core().V1().Pods().Informer()
	}},
	{framework.Node, func(f informers.SharedInformerFactory) toolscache.SharedIndexInformer {
		return f.Core().V1().Nodes().Informer()
	}},
	{framework.PersistentVolume, func(f informers.SharedInformerFactory) toolscache.SharedIndexInformer {
		return f.Core().V1().PersistentVolumes().Informer()
	}},
	{framework.PersistentVolumeClaim, func(f informers.SharedInformerFactory) toolscache.SharedIndexInformer {
		return f.Core().V1().PersistentVolumeClaims().Informer()
	}},
	{framework.StorageClass, func(f informers.SharedInformerFactory) toolscache.SharedIndexInformer {
		return f.Storage().V1().StorageClasses().Informer()
	}},
	{framework.CSINode, func(f informers.SharedInformerFactory) toolscache.SharedIndexInformer {
		return f.Storage().V1().CSINodes().Informer()
	}},
	{framework.CSIDriver, func(f informers.SharedInformerFactory) toolscache.SharedIndexInformer {
		return f.Storage().V1().CSIDrivers().Informer()
	}},
	{framework.CSIStorageCapacity, func(f informers.SharedInformerFactory) toolscache.SharedIndexInformer {
		return f.Storage().V1().CSIStorageCapacities().Informer()
	}},
	{framework.PriorityClass, func(f informers.SharedInformerFactory) toolscache.SharedIndexInformer {
		return f.Scheduling().V1().PriorityClasses().Informer()
	}},
	// The opt-in ones (see IsOptIn).
	{framework.ResourceClaim, func(f informers.SharedInformerFactory) toolscache.SharedIndexInformer {
		return f.Resource().V1().ResourceClaims().Informer()
	}},
	{framework.ResourceSlice, func(f informers.SharedInformerFactory) toolscache.SharedIndexInformer {
		return f.Resource().V1().ResourceSlices().Informer()
	}},
	{framework.DeviceClass, func(f informers.SharedInformerFactory) toolscache.SharedIndexInformer {
		return f.Resource().V1().DeviceClasses().Informer()
	}},
	{framework.ResourceClaimTemplate, func(f informers.SharedInformerFactory) toolscache.SharedIndexInformer {
		return f.Resource().V1().ResourceClaimTemplates().Informer()
	}},
}

// nativeResourceSet checks Options.Resources and returns the native
// resources it asks for, Pod and Node included; nil means all of them.
func nativeResourceSet(rs []framework.EventResource) (map[framework.EventResource]bool, error) {
	if rs == nil {
		return nil, nil
	}
	set := map[framework.EventResource]bool{framework.Pod: true, framework.Node: true}
	all := false
	for _, r := range rs {
		switch {
		case r == framework.WildCard:
			all = true
		case IsNative(r):
			set[r] = true
		case IsOptIn(r):
			// Started when named (Host.optIn), WildCard or not.
		case IsOptional(r):
			// Served by custom informers only.
		case r == framework.GangGroup || r == framework.QueueResource:
			// Raised by the cache, from what the event handler tells it
			// of the group objects and queues it watches.
		default:
			if _, err := eventhandlers.ParseDynamicResource(string(r)); err != nil {
				return nil, fmt.Errorf("resource %q in Options.Resources is neither a native resource (%v), %q, nor a dynamic one: %w",
					r, ResourceNames(), framework.WildCard, err)
			}
		}
	}
	if all {
		return nil, nil
	}
	return set, nil
}

// warnUnservedResources logs the dynamic resources of Options.Resources
// that no informer serves: neither a dynamic informer (gvrs) nor a custom
// one. Their events will never come. The caller holds runMu.
func (c *Host) warnUnservedResources(gvrs []schema.GroupVersionResource) {
	served := map[framework.EventResource]bool{}
	for _, gvr := range gvrs {
		served[eventhandlers.DynamicResourceName(gvr)] = true
	}
	for _, ci := range c.customInformers {
		served[ci.Resource] = true
	}
	for _, r := range c.opts.Resources {
		if r != framework.WildCard && r != framework.GangGroup && r != framework.QueueResource && !IsNative(r) && !IsOptIn(r) && !served[r] {
			// Dynamic and optional (Grant, ExternalWorkload) resources.
			klog.InfoS("Cluster events of a resource are needed, but no informer watches it; configure the event handler to watch it",
				"resource", r)
		}
	}
}

// watchesNative reports whether Run starts the native informer of r.
func (c *Host) watchesNative(r framework.EventResource) bool {
	if IsOptIn(r) {
		return c.optIn[r]
	}
	return c.nativeResources == nil || c.nativeResources[r]
}

// dynamicResources returns the resources h asks dynamic informers for,
// without duplicates.
func (c *Host) dynamicResources(h eventhandlers.Interface) ([]schema.GroupVersionResource, error) {
	requester, ok := h.(eventhandlers.DynamicResourceRequester)
	if !ok {
		return nil, nil
	}
	var gvrs []schema.GroupVersionResource
	seen := map[schema.GroupVersionResource]bool{}
	for _, gvr := range requester.DynamicResources() {
		if seen[gvr] {
			continue
		}
		if _, err := eventhandlers.ParseDynamicResource(string(eventhandlers.DynamicResourceName(gvr))); err != nil {
			return nil, fmt.Errorf("event handler asked for an invalid dynamic resource: %w", err)
		}
		seen[gvr] = true
		gvrs = append(gvrs, gvr)
	}
	if len(gvrs) > 0 && c.opts.DynamicClient == nil {
		names := make([]string, len(gvrs))
		for i, gvr := range gvrs {
			names[i] = string(eventhandlers.DynamicResourceName(gvr))
		}
		return nil, fmt.Errorf("event handler asked for dynamic resources %s but Options.DynamicClient is nil", strings.Join(names, ", "))
	}
	return gvrs, nil
}

// eventHandlerFor returns the informer event handler that dispatches
// events of resource r to h, behind the filters of r (pods and nodes).
func (c *Host) eventHandlerFor(r framework.EventResource, h eventhandlers.Interface) (toolscache.ResourceEventHandler, error) {
	funcs, err := c.dispatchers.Handler(h, r)
	if err != nil {
		return nil, err
	}
	switch {
	case r == framework.Pod && c.opts.PodFilter != nil:
		return toolscache.FilteringResourceEventHandler{FilterFunc: c.opts.PodFilter, Handler: funcs}, nil
	case r == framework.Node && c.opts.NodeFilter != nil:
		return c.opts.NodeFilter(funcs), nil
	case c.opts.ClaimObserver != nil && (r == framework.ResourceClaim || r == framework.ResourceClaimTemplate || r == framework.DeviceClass ||
		r == framework.ResourceSlice):
		return c.opts.ClaimObserver(r, funcs), nil
	}
	return funcs, nil
}

// WaitForHandlersSync blocks until every event handler Run registered has
// received its informer's initial list. When ctx ends first, the error
// names the handlers that have not synced.
func (c *Host) WaitForHandlersSync(ctx context.Context) error {
	c.runMu.Lock()
	started := c.started
	c.runMu.Unlock()
	if !started {
		return errors.New("waiting for event handlers to sync: the cache is not running")
	}
	err := wait.PollUntilContextCancel(ctx, syncPollInterval, true, func(context.Context) (bool, error) {
		synced, _ := c.HandlersSynced()
		return synced, nil
	})
	if err != nil {
		_, unsynced := c.HandlersSynced()
		return fmt.Errorf("waiting for event handlers to sync (not synced: %s): %w", strings.Join(unsynced, ", "), err)
	}
	return nil
}

// HandlersSynced reports whether every event handler Run registered has
// received its informer's initial list, and names those that have not,
// sorted. Before Run it reports false and no names. While the first
// discovery of the resources the handler asked to be discovered has not
// succeeded, "discovery" is among the names.
func (c *Host) HandlersSynced() (bool, []string) {
	c.runMu.Lock()
	started, regs, reporter, discovering := c.started, c.registrations, c.syncReporter, c.discovery.pending
	c.runMu.Unlock()
	if !started {
		return false, nil
	}
	var unsynced []string
	if discovering {
		unsynced = append(unsynced, discoverySyncName)
	}
	for _, r := range regs {
		if !r.reg.HasSynced() {
			unsynced = append(unsynced, r.name)
		}
	}
	if reporter != nil && !reporter.HasSynced() {
		unsynced = append(unsynced, reporter.SyncName())
	}
	sort.Strings(unsynced)
	return len(unsynced) == 0, unsynced
}

// HandlersStatus is the sync state of the event handlers Run registered.
type HandlersStatus struct {
	Running       bool                 `json:"running"`
	Synced        bool                 `json:"synced"`
	Registrations []RegistrationStatus `json:"registrations"`
}

// RegistrationStatus is the sync state of one registration.
type RegistrationStatus struct {
	Name   string `json:"name"`
	Synced bool   `json:"synced"`
}

// Handlers returns the sync state of each registration Run made, sorted
// by name. Unlike HandlersSynced it leaves out discovery and the
// handler's own sync state: it describes the informers.
func (c *Host) Handlers() HandlersStatus {
	c.runMu.Lock()
	started, regs := c.started, c.registrations
	c.runMu.Unlock()
	hs := HandlersStatus{Running: started, Synced: started, Registrations: make([]RegistrationStatus, 0, len(regs))}
	for _, r := range regs {
		synced := r.reg.HasSynced()
		hs.Synced = hs.Synced && synced
		hs.Registrations = append(hs.Registrations, RegistrationStatus{Name: r.name, Synced: synced})
	}
	sort.Slice(hs.Registrations, func(i, j int) bool { return hs.Registrations[i].Name < hs.Registrations[j].Name })
	return hs
}

// EventCounts returns what the dispatchers delivered so far, per resource
// and event.
func (c *Host) EventCounts() []EventCounts { return c.dispatchers.Counts() }

// StateRules are the rules of the running handler for what the cache
// records (eventhandlers.StateRules), nil when it has none of its own or
// Run has not been called.
func (c *Host) StateRules() eventhandlers.StateRules {
	c.runMu.Lock()
	defer c.runMu.Unlock()
	return c.stateRules
}

// CustomInformers returns the custom informers added so far.
func (c *Host) CustomInformers() []CustomInformer {
	c.runMu.Lock()
	defer c.runMu.Unlock()
	return slices.Clone(c.customInformers)
}

// Running reports whether Run has succeeded.
func (c *Host) Running() bool {
	c.runMu.Lock()
	defer c.runMu.Unlock()
	return c.started
}
