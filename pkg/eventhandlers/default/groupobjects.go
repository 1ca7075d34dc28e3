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
	"context"
	"fmt"
	"slices"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/klog/v2"

	"github.com/batch-scheduler/batch-scheduler/pkg/dialects"
	"github.com/batch-scheduler/batch-scheduler/pkg/eventhandlers"
	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
	"github.com/batch-scheduler/batch-scheduler/pkg/podgroups"
	"github.com/batch-scheduler/batch-scheduler/pkg/tenancy"
)

// The objects that define gangs, those of the gang dialects and the
// owners gangs are inferred from (the handler's table of dialects,
// pkg/dialects, says which and how to read them), are watched by the cache, which asks
// discovery which of them the API server serves (the handler is an
// eventhandlers.DiscoveredResourceRequester), and reach the handler
// through AddDynamic, UpdateDynamic and DeleteDynamic. The handler runs
// no informer of its own.

// DiscoveredResources implements eventhandlers.DiscoveredResourceRequester:
// the resources of the gang dialects of the handler's table (unless
// disabled, or the handler has no API server) and of the owner kinds of
// Args.OwnerGangs, each watched where the API server serves it. The slice
// is the caller's.
func (h *Handler) DiscoveredResources() []eventhandlers.DiscoveredResource {
	out := make([]eventhandlers.DiscoveredResource, 0, len(h.groupResources))
	for _, r := range h.groupResources {
		out = append(out, eventhandlers.DiscoveredResource{GVR: r.GVR, Transform: r.Transform, FirstServedVersionOnly: r.FirstServedOnly})
	}
	if h.queues {
		for _, r := range tenancy.Sources {
			out = append(out, eventhandlers.DiscoveredResource{GVR: r.Resource})
		}
	}
	return out
}

// groupResourceFor returns the group resource of gvr, if it is one the
// handler asked for. The list is fixed when the handler is built, so no
// lock is needed.
func (h *Handler) groupResourceFor(gvr schema.GroupVersionResource) (dialects.Watch, bool) {
	for _, r := range h.groupResources {
		if r.GVR == gvr {
			return r, true
		}
	}
	return dialects.Watch{}, false
}

// OwnerKinds returns the owner kinds the handler infers gangs from (see
// Args.OwnerGangs), none when the cache cannot infer them.
func (h *Handler) OwnerKinds() framework.OwnerKinds { return h.owners }

var (
	_ eventhandlers.Runner                      = (*Handler)(nil)
	_ eventhandlers.DiscoveredResourceRequester = (*Handler)(nil)
)

// Run implements eventhandlers.Runner: it writes the status of the gang
// dialects' PodGroups (pkg/podgroups) until ctx ends (without gang
// dialects, it only waits for ctx). An embedder that overrides Run must
// call the embedded one.
func (h *Handler) Run(ctx context.Context) {
	if h.statusWriter != nil {
		h.statusWriter.Run(ctx)
		return
	}
	<-ctx.Done()
}

// newStatusWriter returns the writer of the PodGroups' status, by the
// status rules of the handler's table, through a client of the API server
// h.dialectConfig reaches; nil without gang dialects or when the cache
// cannot tell a gang's state.
func (h *Handler) newStatusWriter() (*podgroups.Writer, error) {
	if h.dialectConfig == nil {
		return nil, nil
	}
	jobs, ok := h.cache.(eventhandlers.JobSource)
	if !ok {
		klog.InfoS("The cache does not give jobs out; the status of PodGroups is not written")
		return nil, nil
	}
	client, err := dynamic.NewForConfig(h.dialectConfig)
	if err != nil {
		return nil, fmt.Errorf("creating the client that writes the status of PodGroups: %w", err)
	}
	return podgroups.New(client, jobs, h.dialects.StatusRules()), nil
}

// setGroup records the policy of obj (nil: deleted) in the cache. It
// reports whether gvr is a group resource.
func (h *Handler) setGroup(gvr schema.GroupVersionResource, obj any, deleted bool) bool {
	r, ok := h.groupResourceFor(gvr)
	if !ok {
		return false
	}
	u, ok := eventhandlers.ObjectAs[*unstructured.Unstructured](obj)
	if !ok || u == nil {
		klog.ErrorS(nil, "Ignoring an event of a gang group object that is not unstructured", "resource", eventhandlers.DynamicResourceName(gvr), "type", fmt.Sprintf("%T", obj))
		return true
	}
	h.setRuntimeBound(r, u, deleted)
	gc, ok := h.cache.(eventhandlers.GroupPolicyCache)
	if !ok {
		return true
	}
	var p *framework.GroupPolicy
	if !deleted {
		p = r.Policy(u)
	}
	if p != nil && p.Err != nil {
		klog.V(2).InfoS("Gang group object gives no usable quorum", "kind", r.Kind, "object", klog.KObj(u), "err", p.Err)
	}
	klog.V(4).InfoS("Gang group object changed", "kind", r.Kind, "object", klog.KObj(u), "deleted", deleted, "policy", p)
	gc.SetGroupPolicy(r.Kind, u.GetNamespace(), u.GetName(), p)
	if h.statusWriter != nil {
		h.statusWriter.ObjectChanged(r.Kind, gvr, u, deleted)
	}
	return true
}

// setRuntimeBound records in the cache what u, an owner of pods of r's
// kind, says about when its pods end (see dialects.Dialect.Runtime);
// nothing for a kind that says nothing, or a cache that does not keep it.
func (h *Handler) setRuntimeBound(r dialects.Watch, u *unstructured.Unstructured, deleted bool) {
	if r.Runtime == nil {
		return
	}
	rc, ok := h.cache.(eventhandlers.RuntimeBoundCache)
	if !ok {
		return
	}
	var b *framework.RuntimeBound
	if !deleted {
		b = r.Runtime(u)
	}
	if b != nil {
		klog.V(5).InfoS("Owner bounds the runtime of its pods", "kind", r.Kind, "object", klog.KObj(u),
			"start", b.Start, "limit", b.Limit, "err", b.Err)
	}
	rc.SetRuntimeBound(u.GetNamespace(), u.GetName(), b)
}

// noteGang tells the status writer that pod, a pod of a gang as the
// informer delivered it, changed, after the cache has it.
func (h *Handler) noteGang(pod *v1.Pod) {
	if h.statusWriter == nil {
		return
	}
	if refs := h.dialects.Explicit(pod); len(refs) > 0 {
		h.statusWriter.GangChanged(refs[0].Kind, pod.Namespace, refs[0].Name)
	}
}

// groupKindsOf lists the kinds of rs, for logs.
func groupKindsOf(rs []dialects.Watch) []string {
	var out []string
	for _, r := range rs {
		if k := string(r.Kind); !slices.Contains(out, k) {
			out = append(out, k)
		}
	}
	return out
}
