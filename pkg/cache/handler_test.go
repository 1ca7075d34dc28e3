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
	"slices"
	"sync"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/batch-scheduler/batch-scheduler/pkg/cache/informerhost"
	"github.com/batch-scheduler/batch-scheduler/pkg/eventhandlers"
	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
)

// nopHandler implements eventhandlers.Interface and does nothing.
type nopHandler struct{}

var _ eventhandlers.Interface = nopHandler{}

func (nopHandler) AddPod(any)                                          {}
func (nopHandler) UpdatePod(any, any)                                  {}
func (nopHandler) DeletePod(any)                                       {}
func (nopHandler) AddNode(any)                                         {}
func (nopHandler) UpdateNode(any, any)                                 {}
func (nopHandler) DeleteNode(any)                                      {}
func (nopHandler) AddPersistentVolume(any)                             {}
func (nopHandler) UpdatePersistentVolume(any, any)                     {}
func (nopHandler) DeletePersistentVolume(any)                          {}
func (nopHandler) AddPersistentVolumeClaim(any)                        {}
func (nopHandler) UpdatePersistentVolumeClaim(any, any)                {}
func (nopHandler) DeletePersistentVolumeClaim(any)                     {}
func (nopHandler) AddStorageClass(any)                                 {}
func (nopHandler) UpdateStorageClass(any, any)                         {}
func (nopHandler) DeleteStorageClass(any)                              {}
func (nopHandler) AddCSINode(any)                                      {}
func (nopHandler) UpdateCSINode(any, any)                              {}
func (nopHandler) DeleteCSINode(any)                                   {}
func (nopHandler) AddCSIDriver(any)                                    {}
func (nopHandler) UpdateCSIDriver(any, any)                            {}
func (nopHandler) DeleteCSIDriver(any)                                 {}
func (nopHandler) AddCSIStorageCapacity(any)                           {}
func (nopHandler) UpdateCSIStorageCapacity(any, any)                   {}
func (nopHandler) DeleteCSIStorageCapacity(any)                        {}
func (nopHandler) AddPriorityClass(any)                                {}
func (nopHandler) UpdatePriorityClass(any, any)                        {}
func (nopHandler) DeletePriorityClass(any)                             {}
func (nopHandler) AddDynamic(schema.GroupVersionResource, any)         {}
func (nopHandler) UpdateDynamic(schema.GroupVersionResource, any, any) {}
func (nopHandler) DeleteDynamic(schema.GroupVersionResource, any)      {}

// recorded is one event as the handler saw it.
type recorded struct {
	resource framework.EventResource
	event    string // "add", "update" or "delete"
	key      string
}

func (r recorded) String() string { return fmt.Sprintf("%s %s %s", r.resource, r.event, r.key) }

// recordingHandler records every event, forwards pods and nodes to the
// cache as a minimal handler would, and panics on the pod whose key is
// panicOn.
type recordingHandler struct {
	nopHandler
	cache   *SchedulerCache
	panicOn string

	mu     sync.Mutex
	events []recorded
	errs   []error
}

func newRecordingHandler(c *SchedulerCache) *recordingHandler { return &recordingHandler{cache: c} }

func (h *recordingHandler) record(r framework.EventResource, event string, obj any) {
	h.mu.Lock()
	h.events = append(h.events, recorded{resource: r, event: event, key: informerhost.KeyOf(obj)})
	h.mu.Unlock()
}

func (h *recordingHandler) check(err error) {
	if err != nil {
		h.mu.Lock()
		h.errs = append(h.errs, err)
		h.mu.Unlock()
	}
}

// has reports whether the event was recorded.
func (h *recordingHandler) has(r framework.EventResource, event, key string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Contains(h.events, recorded{resource: r, event: event, key: key})
}

// keysOf returns the keys of the recorded events of resource r.
func (h *recordingHandler) keysOf(r framework.EventResource) []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var keys []string
	for _, e := range h.events {
		if e.resource == r {
			keys = append(keys, e.event+" "+e.key)
		}
	}
	return keys
}

func (h *recordingHandler) errors() []error {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.errs)
}

func (h *recordingHandler) AddPod(obj any) {
	h.record(framework.Pod, informerhost.EventAdd, obj)
	if informerhost.KeyOf(obj) == h.panicOn {
		panic("recordingHandler: told to panic on " + h.panicOn)
	}
	pod, ok := eventhandlers.ObjectAs[*v1.Pod](obj)
	if !ok {
		return
	}
	if pod.Spec.NodeName != "" {
		h.check(h.cache.AddPod(pod))
	} else {
		h.check(h.cache.AddPendingPod(pod))
	}
}

func (h *recordingHandler) UpdatePod(oldObj, newObj any) {
	h.record(framework.Pod, informerhost.EventUpdate, newObj)
	oldPod, ok1 := eventhandlers.ObjectAs[*v1.Pod](oldObj)
	newPod, ok2 := eventhandlers.ObjectAs[*v1.Pod](newObj)
	if !ok1 || !ok2 {
		return
	}
	switch {
	case newPod.Spec.NodeName == "":
		h.check(h.cache.UpdatePendingPod(oldPod, newPod))
	case oldPod.Spec.NodeName == "":
		h.check(h.cache.RemovePendingPod(oldPod))
		h.check(h.cache.AddPod(newPod))
	default:
		h.check(h.cache.UpdatePod(oldPod, newPod))
	}
}

func (h *recordingHandler) DeletePod(obj any) {
	h.record(framework.Pod, informerhost.EventDelete, obj)
	pod, ok := eventhandlers.ObjectAs[*v1.Pod](obj)
	if !ok {
		return
	}
	if pod.Spec.NodeName != "" {
		h.check(deletePod(h.cache, pod))
	} else {
		h.check(h.cache.RemovePendingPod(pod))
	}
}

func (h *recordingHandler) AddNode(obj any) {
	h.record(framework.Node, informerhost.EventAdd, obj)
	if node, ok := eventhandlers.ObjectAs[*v1.Node](obj); ok {
		h.check(h.cache.AddOrUpdateNode(node))
	}
}

func (h *recordingHandler) UpdateNode(oldObj, newObj any) {
	h.record(framework.Node, informerhost.EventUpdate, newObj)
	if node, ok := eventhandlers.ObjectAs[*v1.Node](newObj); ok {
		h.check(h.cache.AddOrUpdateNode(node))
	}
}

func (h *recordingHandler) DeleteNode(obj any) {
	h.record(framework.Node, informerhost.EventDelete, obj)
	if node, ok := eventhandlers.ObjectAs[*v1.Node](obj); ok {
		h.check(h.cache.RemoveNode(node))
	}
}

func (h *recordingHandler) AddPersistentVolume(obj any) {
	h.record(framework.PersistentVolume, informerhost.EventAdd, obj)
}
func (h *recordingHandler) AddPersistentVolumeClaim(obj any) {
	h.record(framework.PersistentVolumeClaim, informerhost.EventAdd, obj)
}
func (h *recordingHandler) AddStorageClass(obj any) {
	h.record(framework.StorageClass, informerhost.EventAdd, obj)
}
func (h *recordingHandler) AddCSINode(obj any) {
	h.record(framework.CSINode, informerhost.EventAdd, obj)
}
func (h *recordingHandler) AddCSIDriver(obj any) {
	h.record(framework.CSIDriver, informerhost.EventAdd, obj)
}
func (h *recordingHandler) AddCSIStorageCapacity(obj any) {
	h.record(framework.CSIStorageCapacity, informerhost.EventAdd, obj)
}
func (h *recordingHandler) AddPriorityClass(obj any) {
	h.record(framework.PriorityClass, informerhost.EventAdd, obj)
}
func (h *recordingHandler) AddDynamic(gvr schema.GroupVersionResource, obj any) {
	h.record(eventhandlers.DynamicResourceName(gvr), informerhost.EventAdd, obj)
}
func (h *recordingHandler) UpdateDynamic(gvr schema.GroupVersionResource, _, newObj any) {
	h.record(eventhandlers.DynamicResourceName(gvr), informerhost.EventUpdate, newObj)
}
func (h *recordingHandler) DeleteDynamic(gvr schema.GroupVersionResource, obj any) {
	h.record(eventhandlers.DynamicResourceName(gvr), informerhost.EventDelete, obj)
}

// dynamicHandler also asks for dynamic resources and runs background work.
type dynamicHandler struct {
	*recordingHandler
	gvrs    []schema.GroupVersionResource
	running chan struct{}
}

var (
	_ eventhandlers.DynamicResourceRequester = &dynamicHandler{}
	_ eventhandlers.Runner                   = &dynamicHandler{}
)

func (h *dynamicHandler) DynamicResources() []schema.GroupVersionResource { return h.gvrs }

func (h *dynamicHandler) Run(ctx context.Context) {
	close(h.running)
	<-ctx.Done()
}
