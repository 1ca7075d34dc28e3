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
	"fmt"
	"runtime/debug"
	"sort"
	"sync"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/runtime/schema"
	toolscache "k8s.io/client-go/tools/cache"
	k8smetrics "k8s.io/component-base/metrics"
	"k8s.io/klog/v2"

	"github.com/batch-scheduler/batch-scheduler/pkg/eventhandlers"
	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
	"github.com/batch-scheduler/batch-scheduler/pkg/metrics"
)

// Event names, the "event" label of the dispatch metrics and of
// EventCounts.
const (
	EventAdd    = "add"
	EventUpdate = "update"
	EventDelete = "delete"
)

// handlerMethods are the three methods of a handler for one resource.
type handlerMethods struct {
	add    func(obj any)
	update func(oldObj, newObj any)
	delete func(obj any)
}

// nativeMethods maps each native resource to the handler's methods for it.
// It is the one place that knows which method handles which resource:
// the Host (host.go) registers every informer's handler, native or
// custom, through Dispatchers.Handler, which reads it.
var nativeMethods = map[framework.EventResource]func(h eventhandlers.Interface) handlerMethods{
	framework.Pod: podMethods,
	framework.Node: func(h eventhandlers.Interface) handlerMethods {
		return handlerMethods{h.AddNode, h.UpdateNode, h.DeleteNode}
	},
	framework.PersistentVolume: func(h eventhandlers.Interface) handlerMethods {
		return handlerMethods{h.AddPersistentVolume, h.UpdatePersistentVolume, h.DeletePersistentVolume}
	},
	framework.PersistentVolumeClaim: func(h eventhandlers.Interface) handlerMethods {
		return handlerMethods{h.AddPersistentVolumeClaim, h.UpdatePersistentVolumeClaim, h.DeletePersistentVolumeClaim}
	},
	framework.StorageClass: func(h eventhandlers.Interface) handlerMethods {
		return handlerMethods{h.AddStorageClass, h.UpdateStorageClass, h.DeleteStorageClass}
	},
	framework.CSINode: func(h eventhandlers.Interface) handlerMethods {
		return handlerMethods{h.AddCSINode, h.UpdateCSINode, h.DeleteCSINode}
	},
	framework.CSIDriver: func(h eventhandlers.Interface) handlerMethods {
		return handlerMethods{h.AddCSIDriver, h.UpdateCSIDriver, h.DeleteCSIDriver}
	},
	framework.CSIStorageCapacity: func(h eventhandlers.Interface) handlerMethods {
		return handlerMethods{h.AddCSIStorageCapacity, h.UpdateCSIStorageCapacity, h.DeleteCSIStorageCapacity}
	},
	framework.PriorityClass: func(h eventhandlers.Interface) handlerMethods {
		return handlerMethods{h.AddPriorityClass, h.UpdatePriorityClass, h.DeletePriorityClass}
	},
}

// podMethods returns the handler's pod methods. The informers keep a
// bound pod as a *framework.PodRecord (StripForScheduler); a handler that
// does not take records (eventhandlers.PodRecordHandler) is given a
// *v1.Pod made from each one, tombstones included.
func podMethods(h eventhandlers.Interface) handlerMethods {
	if r, ok := h.(eventhandlers.PodRecordHandler); ok && r.TakesPodRecords(h) {
		return handlerMethods{h.AddPod, h.UpdatePod, h.DeletePod}
	}
	return handlerMethods{
		add:    func(obj any) { h.AddPod(podOfRecord(obj)) },
		update: func(oldObj, newObj any) { h.UpdatePod(podOfRecord(oldObj), podOfRecord(newObj)) },
		delete: func(obj any) { h.DeletePod(podOfRecord(obj)) },
	}
}

// podOfRecord returns a pod made from obj when obj is a record (or a
// tombstone holding one; the tombstone is rebuilt around the pod), and
// obj otherwise.
func podOfRecord(obj any) any {
	switch o := obj.(type) {
	case *framework.PodRecord:
		if o != nil {
			return o.Pod()
		}
	case toolscache.DeletedFinalStateUnknown:
		if r, ok := o.Obj.(*framework.PodRecord); ok && r != nil {
			return toolscache.DeletedFinalStateUnknown{Key: o.Key, Obj: r.Pod()}
		}
	}
	return obj
}

// optionalMethods maps each resource whose handler methods are an optional
// interface (not part of eventhandlers.Interface) to those methods. Only
// custom informers serve these resources; the lookup fails, naming the
// missing interface, when the handler does not implement it.
var optionalMethods = map[framework.EventResource]func(h eventhandlers.Interface) (handlerMethods, error){
	framework.Grant: func(h eventhandlers.Interface) (handlerMethods, error) {
		g, ok := h.(eventhandlers.GrantEventHandler)
		if !ok {
			return handlerMethods{}, fmt.Errorf("event handler %T does not implement eventhandlers.GrantEventHandler, needed for resource %q", h, framework.Grant)
		}
		return handlerMethods{g.AddGrant, g.UpdateGrant, g.DeleteGrant}, nil
	},
	framework.ExternalWorkload: func(h eventhandlers.Interface) (handlerMethods, error) {
		w, ok := h.(eventhandlers.ExternalWorkloadEventHandler)
		if !ok {
			return handlerMethods{}, fmt.Errorf("event handler %T does not implement eventhandlers.ExternalWorkloadEventHandler, needed for resource %q", h, framework.ExternalWorkload)
		}
		return handlerMethods{w.AddExternalWorkload, w.UpdateExternalWorkload, w.DeleteExternalWorkload}, nil
	},
}

// optInMethods maps each opt-in native resource (Dynamic Resource
// Allocation's, see eventhandlers.ResourceClaimEventHandler) to the
// handler's methods for it, from an optional interface. A handler
// without the interface gets no-op methods (ok false): the informer
// still runs and syncs for the plugins' listers.
var optInMethods = map[framework.EventResource]func(h eventhandlers.Interface) (m handlerMethods, ok bool){
	framework.ResourceClaim: func(h eventhandlers.Interface) (handlerMethods, bool) {
		if c, ok := h.(eventhandlers.ResourceClaimEventHandler); ok {
			return handlerMethods{c.AddResourceClaim, c.UpdateResourceClaim, c.DeleteResourceClaim}, true
		}
		return noopMethods, false
	},
	framework.ResourceSlice: func(h eventhandlers.Interface) (handlerMethods, bool) {
		if s, ok := h.(eventhandlers.ResourceSliceEventHandler); ok {
			return handlerMethods{s.AddResourceSlice, s.UpdateResourceSlice, s.DeleteResourceSlice}, true
		}
		return noopMethods, false
	},
	framework.DeviceClass: func(h eventhandlers.Interface) (handlerMethods, bool) {
		if c, ok := h.(eventhandlers.DeviceClassEventHandler); ok {
			return handlerMethods{c.AddDeviceClass, c.UpdateDeviceClass, c.DeleteDeviceClass}, true
		}
		return noopMethods, false
	},
	// Only the cache reads templates (Options.ClaimObserver): no job
	// waits for one, so the handler is not told.
	framework.ResourceClaimTemplate: func(eventhandlers.Interface) (handlerMethods, bool) {
		return noopMethods, true
	},
}

// noopMethods ignore every event.
var noopMethods = handlerMethods{add: func(any) {}, update: func(any, any) {}, delete: func(any) {}}

// dynamicMethods returns the handler's methods for the dynamic resource gvr.
func dynamicMethods(h eventhandlers.Interface, gvr schema.GroupVersionResource) handlerMethods {
	return handlerMethods{
		add:    func(obj any) { h.AddDynamic(gvr, obj) },
		update: func(oldObj, newObj any) { h.UpdateDynamic(gvr, oldObj, newObj) },
		delete: func(obj any) { h.DeleteDynamic(gvr, obj) },
	}
}

// methodsFor resolves the handler's methods for resource r: a native
// resource or a dynamic one named "<plural>.<version>.<group>".
func methodsFor(h eventhandlers.Interface, r framework.EventResource) (handlerMethods, error) {
	if err := CheckResource(r); err != nil {
		return handlerMethods{}, err
	}
	if native, ok := nativeMethods[r]; ok {
		return native(h), nil
	}
	if optional, ok := optionalMethods[r]; ok {
		return optional(h)
	}
	if optIn, ok := optInMethods[r]; ok {
		m, implemented := optIn(h)
		if !implemented {
			klog.InfoS("The event handler does not handle this resource: its informer runs for the plugins' listers, but its events retry no job",
				"resource", r, "handler", fmt.Sprintf("%T", h))
		}
		return m, nil
	}
	gvr, err := eventhandlers.ParseDynamicResource(string(r))
	if err != nil {
		return handlerMethods{}, err
	}
	return dynamicMethods(h, gvr), nil
}

// IsNative reports whether r is a native resource: one of
// eventhandlers.Interface's own methods handle it.
func IsNative(r framework.EventResource) bool { return nativeMethods[r] != nil }

// IsOptional reports whether r is handled by an optional interface of the
// handler (Grant, ExternalWorkload); only custom informers serve these.
func IsOptional(r framework.EventResource) bool { return optionalMethods[r] != nil }

// IsOptIn reports whether r is an opt-in native resource: its informer
// runs only when Options.Resources names it.
func IsOptIn(r framework.EventResource) bool { return optInMethods[r] != nil }

// ResourceNames returns the native (opt-in ones included) and optional
// resources, sorted.
func ResourceNames() []string {
	names := make([]string, 0, len(nativeMethods)+len(optInMethods)+len(optionalMethods))
	for r := range nativeMethods {
		names = append(names, string(r))
	}
	for r := range optInMethods {
		names = append(names, string(r))
	}
	for r := range optionalMethods {
		names = append(names, string(r))
	}
	sort.Strings(names)
	return names
}

// eventStats counts one (resource, event) pair: in Prometheus, with the
// counters resolved once at wiring time, and in atomics for the dump.
type eventStats struct {
	handledCounter, panicCounter k8smetrics.CounterMetric
	handled, panics              atomic.Int64
}

// resourceStats are the eventStats of one resource.
type resourceStats struct {
	add, update, delete eventStats
}

// Dispatchers deliver informer events to an event handler's methods, one
// dispatcher per registration, counting every event per resource and event
// (in Prometheus and for the dump) and isolating the informer from a
// handler that panics. It holds the statistics of every resource
// dispatched so far; informers of the same resource (a native and a custom
// one) share them.
type Dispatchers struct {
	metrics *metrics.Metrics

	// mu guards byResource. It is only taken while wiring and dumping,
	// never on the event path, which holds a *resourceStats directly.
	mu         sync.Mutex
	byResource map[framework.EventResource]*resourceStats
}

// NewDispatchers returns Dispatchers that report to m.
func NewDispatchers(m *metrics.Metrics) *Dispatchers {
	return &Dispatchers{metrics: m, byResource: map[framework.EventResource]*resourceStats{}}
}

// forResource returns the statistics of r, creating them on first use.
// Informers of the same resource (a native and a custom one) share them.
func (d *Dispatchers) forResource(r framework.EventResource) *resourceStats {
	d.mu.Lock()
	defer d.mu.Unlock()
	if s, ok := d.byResource[r]; ok {
		return s
	}
	s := &resourceStats{}
	for _, e := range []struct {
		stats *eventStats
		event string
	}{{&s.add, EventAdd}, {&s.update, EventUpdate}, {&s.delete, EventDelete}} {
		e.stats.handledCounter = d.metrics.EventsHandled.WithLabelValues(string(r), e.event)
		e.stats.panicCounter = d.metrics.HandlerPanics.WithLabelValues(string(r), e.event)
	}
	d.byResource[r] = s
	return s
}

// EventCounts is what the dispatcher delivered for one resource and event.
type EventCounts struct {
	Resource string `json:"resource"`
	Event    string `json:"event"`
	Handled  int64  `json:"handled"`
	Panics   int64  `json:"panics"`
}

// Counts returns the counts of every (resource, event), sorted.
func (d *Dispatchers) Counts() []EventCounts {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make([]EventCounts, 0, 3*len(d.byResource))
	for r, s := range d.byResource {
		for _, e := range []struct {
			stats *eventStats
			event string
		}{{&s.add, EventAdd}, {&s.update, EventUpdate}, {&s.delete, EventDelete}} {
			out = append(out, EventCounts{Resource: string(r), Event: e.event,
				Handled: e.stats.handled.Load(), Panics: e.stats.panics.Load()})
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Resource != out[j].Resource {
			return out[i].Resource < out[j].Resource
		}
		return out[i].Event < out[j].Event
	})
	return out
}

// dispatcher delivers the events of one resource to the handler's methods,
// counting each event and isolating the informer from panics.
type dispatcher struct {
	resource framework.EventResource
	methods  handlerMethods
	stats    *resourceStats
}

func (d *Dispatchers) newDispatcher(r framework.EventResource, m handlerMethods) *dispatcher {
	return &dispatcher{resource: r, methods: m, stats: d.forResource(r)}
}

// Handler returns the informer event handler that delivers the events of
// resource r (a native one, Grant or ExternalWorkload, or a dynamic one
// named "<plural>.<version>.<group>") to h's methods for it. It fails when
// r is none of those, or h lacks the optional interface r needs.
func (d *Dispatchers) Handler(h eventhandlers.Interface, r framework.EventResource) (toolscache.ResourceEventHandlerFuncs, error) {
	m, err := methodsFor(h, r)
	if err != nil {
		return toolscache.ResourceEventHandlerFuncs{}, err
	}
	return d.newDispatcher(r, m).handlerFuncs(), nil
}

// handlerFuncs returns the dispatcher as an informer event handler.
func (d *dispatcher) handlerFuncs() toolscache.ResourceEventHandlerFuncs {
	return toolscache.ResourceEventHandlerFuncs{
		AddFunc:    d.onAdd,
		UpdateFunc: d.onUpdate,
		DeleteFunc: d.onDelete,
	}
}

func (d *dispatcher) onAdd(obj any) {
	d.count(&d.stats.add)
	defer d.recoverPanic(&d.stats.add, EventAdd, obj)
	d.methods.add(obj)
}

func (d *dispatcher) onUpdate(oldObj, newObj any) {
	d.count(&d.stats.update)
	defer d.recoverPanic(&d.stats.update, EventUpdate, newObj)
	d.methods.update(oldObj, newObj)
}

func (d *dispatcher) onDelete(obj any) {
	d.count(&d.stats.delete)
	defer d.recoverPanic(&d.stats.delete, EventDelete, obj)
	d.methods.delete(obj)
}

func (d *dispatcher) count(s *eventStats) {
	s.handled.Add(1)
	s.handledCounter.Inc()
}

// recoverPanic, deferred around a handler call, turns a panic into a log
// line and a count, so that the informer goes on delivering events.
func (d *dispatcher) recoverPanic(s *eventStats, event string, obj any) {
	r := recover()
	if r == nil {
		return
	}
	s.panics.Add(1)
	s.panicCounter.Inc()
	klog.ErrorS(fmt.Errorf("panic: %v", r), "Event handler panicked; event dropped",
		"resource", d.resource, "event", event, "key", KeyOf(obj), "stack", string(debug.Stack()))
}

// KeyOf returns the informer key of obj, tombstones included, for logs.
func KeyOf(obj any) string {
	key, err := toolscache.DeletionHandlingMetaNamespaceKeyFunc(obj)
	if err != nil {
		return fmt.Sprintf("<%T>", obj)
	}
	return key
}

// CheckResource reports whether the dispatch table maps r to handler
// methods, without needing a handler.
func CheckResource(r framework.EventResource) error {
	if _, ok := nativeMethods[r]; ok {
		return nil
	}
	if _, ok := optionalMethods[r]; ok {
		return nil
	}
	if _, ok := optInMethods[r]; ok {
		return nil
	}
	if _, err := eventhandlers.ParseDynamicResource(string(r)); err != nil {
		return fmt.Errorf("no event handler methods for resource %q: it is neither a native resource (%v) nor a dynamic one: %w",
			r, ResourceNames(), err)
	}
	return nil
}
