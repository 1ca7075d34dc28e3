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

package defaulthandler

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/klog/v2"

	"github.com/batch-scheduler/batch-scheduler/pkg/eventhandlers"
	"github.com/batch-scheduler/batch-scheduler/pkg/tenancy"
)

// Tenant queues (docs/queues.md) come from the project's own Queue API
// and from Volcano's (tenancy.Sources), each watched where the API
// server serves it, like the gang dialects' objects: the cache's dynamic
// informers deliver them to AddDynamic, UpdateDynamic and DeleteDynamic,
// and the handler reads each with its source's reader (pkg/tenancy) and
// reports the framework.QueueSpec to the cache
// (eventhandlers.TenantQueueCache). Reading tenant queues is pkg/tenancy's;
// this file only adapts the events.

func (h *Handler) tenantQueueSourceFor(gvr schema.GroupVersionResource) (tenancy.Source, bool) {
	if !h.queues {
		return tenancy.Source{}, false
	}
	return tenancy.SourceFor(gvr)
}

// setTenantQueue records the tenant queue obj (deleted: forgets it) in
// the cache. It reports whether gvr is a tenant queue resource.
func (h *Handler) setTenantQueue(gvr schema.GroupVersionResource, obj any, deleted bool) bool {
	r, ok := h.tenantQueueSourceFor(gvr)
	if !ok {
		return false
	}
	qc, ok := h.cache.(eventhandlers.TenantQueueCache)
	if !ok {
		return true
	}
	u, ok := eventhandlers.ObjectAs[*unstructured.Unstructured](obj)
	if !ok || u == nil {
		klog.ErrorS(nil, "Ignoring an event of a queue that is not unstructured", "resource", eventhandlers.DynamicResourceName(gvr), "type", fmt.Sprintf("%T", obj))
		return true
	}
	if r.Root != "" && u.GetName() == r.Root {
		// The root is everything the scheduler may use, not a queue.
		return true
	}
	if deleted {
		qc.SetTenantQueue(r.API, u.GetName(), nil)
		return true
	}
	spec := r.Spec(u)
	if spec.Err != nil {
		klog.InfoS("Queue is unusable; its jobs wait until it is fixed", "source", r.API, "queue", u.GetName(), "err", spec.Err)
	}
	qc.SetTenantQueue(r.API, u.GetName(), spec)
	return true
}
