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
	"fmt"
	"maps"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
	"github.com/batch-scheduler/batch-scheduler/pkg/resources"
)

// Claim devices: the devices of a pod's own ResourceClaims
// (spec.resourceClaims, made from a ResourceClaimTemplate or named) count
// against the pod's queue (framework.TaskInfo.ClaimDevices), under the
// resource name of their DeviceClass: its spec.extendedResourceName, else
// deviceclass.resource.kubernetes.io/<class>. The cache counts them from
// the ResourceClaims, ResourceClaimTemplates and DeviceClasses its
// informer host shows it (informerhost.Options.ClaimObserver) before the
// event handler sees them; they run only while the DRA informers do
// (an enabled plugin registers ResourceClaim events). It keeps what it
// reads of them in claimObjects, under mu, and recounts the tasks whose
// claim or template changed (or every task with claims, when a class's
// extendedResourceName changed), replacing them in their job so that the
// tenant queues' usage follows (changeJobLocked).
//
// A claim a pod makes from a template is counted from the template until
// the pod's status names the claim made from it and the cache has seen
// that claim; from the claim afterwards. Per request of a claim's spec:
//
//   - exactly, allocationMode ExactCount (the default): count devices
//     (default 1) of exactly.deviceClassName;
//   - exactly, allocationMode All: the devices the claim's allocation
//     holds for the request, 0 while the claim is not allocated (a
//     template's never is);
//   - firstAvailable: the first sub-request's class and count (the
//     alternatives may differ; the first is the preferred one), All as
//     above.
//
// A claim named by several pods (a shared resourceClaimName) is counted
// once per pod. A request that cannot be counted (no class, a negative
// count, an unknown mode) is left out and logged.

// claimKey names a ResourceClaim or, with template set, a
// ResourceClaimTemplate.
type claimKey struct {
	template        bool
	namespace, name string
}

// claimObjects is what the cache knows of the objects claim devices are
// counted from, and which tasks read which claims and templates. mu
// guards it.
type claimObjects struct {
	claims    map[claimKey]*resourceapi.ResourceClaim
	templates map[claimKey]*resourceapi.ResourceClaimTemplate
	// extendedNames maps each DeviceClass that has a
	// spec.extendedResourceName to it.
	extendedNames map[string]v1.ResourceName
	// users are the tasks whose pods name each claim or template, and
	// reads the reverse: the claims and templates each pod names.
	users map[claimKey]map[types.UID]struct{}
	reads map[types.UID][]claimKey
	// devices are the DeviceClasses and ResourceSlices the device totals
	// of the capacity are counted from (devices.go).
	devices deviceObjects
}

func newClaimObjects() claimObjects {
	return claimObjects{
		claims:        map[claimKey]*resourceapi.ResourceClaim{},
		templates:     map[claimKey]*resourceapi.ResourceClaimTemplate{},
		extendedNames: map[string]v1.ResourceName{},
		users:         map[claimKey]map[types.UID]struct{}{},
		reads:         map[types.UID][]claimKey{},
		devices:       newDeviceObjects(),
	}
}

// deviceResourceName is the resource name the devices of class count
// under, given the classes' extended resource names.
func deviceResourceName(class string, extendedNames map[string]v1.ResourceName) v1.ResourceName {
	if n, ok := extendedNames[class]; ok {
		return n
	}
	return v1.ResourceName(resourceapi.ResourceDeviceClassPrefix + class)
}

// claimSpecDevices adds to out the devices spec asks for, each under
// nameOf(its class). alloc is the claim's allocation (nil for a template
// or a claim not allocated), read for allocationMode All. It returns
// what it could not count, one line per request.
func claimSpecDevices(spec *resourceapi.ResourceClaimSpec, alloc *resourceapi.AllocationResult,
	nameOf func(class string) v1.ResourceName, out *resources.Resource) []string {
	var problems []string
	for i := range spec.Devices.Requests {
		r := &spec.Devices.Requests[i]
		var class string
		var mode resourceapi.DeviceAllocationMode
		var count int64
		var resultName string
		switch {
		case r.Exactly != nil:
			class, mode, count, resultName = r.Exactly.DeviceClassName, r.Exactly.AllocationMode, r.Exactly.Count, r.Name
		case len(r.FirstAvailable) > 0:
			s := &r.FirstAvailable[0]
			class, mode, count, resultName = s.DeviceClassName, s.AllocationMode, s.Count, r.Name+"/"+s.Name
		default:
			problems = append(problems, fmt.Sprintf("request %q has neither exactly nor firstAvailable", r.Name))
			continue
		}
		if class == "" {
			problems = append(problems, fmt.Sprintf("request %q names no device class", r.Name))
			continue
		}
		var n int64
		switch mode {
		case "", resourceapi.DeviceAllocationModeExactCount:
			switch {
			case count == 0:
				n = 1
			case count < 0:
				problems = append(problems, fmt.Sprintf("request %q asks for a negative count %d", r.Name, count))
				continue
			default:
				n = count
			}
		case resourceapi.DeviceAllocationModeAll:
			if alloc != nil {
				for j := range alloc.Devices.Results {
					if alloc.Devices.Results[j].Request == resultName {
						n++
					}
				}
			}
		default:
			problems = append(problems, fmt.Sprintf("request %q has an unknown allocation mode %q", r.Name, mode))
			continue
		}
		if n == 0 {
			continue
		}
		if out.Scalar == nil {
			out.Scalar = map[v1.ResourceName]int64{}
		}
		name := nameOf(class)
		out.Scalar[name] = resources.AddSat(out.Scalar[name], n)
	}
	return problems
}

// generatedClaimName is the name of the claim made from the template of
// pod's claim entry name, as the pod's status names it; "" before.
func generatedClaimName(pod *v1.Pod, name string) string {
	for _, s := range pod.Status.ResourceClaimStatuses {
		if s.Name == name && s.ResourceClaimName != nil {
			return *s.ResourceClaimName
		}
	}
	return ""
}

// claimDevicesLocked counts the devices of pod's own claims from what the
// cache knows of them: zero (nil Scalar) when pod has none, or none known
// yet. The caller holds mu.
func (c *SchedulerCache) claimDevicesLocked(pod *v1.Pod) resources.Resource {
	var out resources.Resource
	if len(pod.Spec.ResourceClaims) == 0 {
		return out
	}
	nameOf := func(class string) v1.ResourceName { return deviceResourceName(class, c.claimObjs.extendedNames) }
	for i := range pod.Spec.ResourceClaims {
		pc := &pod.Spec.ResourceClaims[i]
		var spec *resourceapi.ResourceClaimSpec
		var alloc *resourceapi.AllocationResult
		var source string
		switch {
		case pc.ResourceClaimName != nil:
			claim, ok := c.claimObjs.claims[claimKey{namespace: pod.Namespace, name: *pc.ResourceClaimName}]
			if !ok {
				continue
			}
			spec, alloc, source = &claim.Spec, claim.Status.Allocation, "ResourceClaim "+claim.Name
		case pc.ResourceClaimTemplateName != nil:
			if gen := generatedClaimName(pod, pc.Name); gen != "" {
				if claim, ok := c.claimObjs.claims[claimKey{namespace: pod.Namespace, name: gen}]; ok {
					spec, alloc, source = &claim.Spec, claim.Status.Allocation, "ResourceClaim "+claim.Name
					break
				}
			}
			tmpl, ok := c.claimObjs.templates[claimKey{template: true, namespace: pod.Namespace, name: *pc.ResourceClaimTemplateName}]
			if !ok {
				continue
			}
			spec, source = &tmpl.Spec.Spec, "ResourceClaimTemplate "+tmpl.Name
		default:
			continue
		}
		for _, p := range claimSpecDevices(spec, alloc, nameOf, &out) {
			klog.InfoS("A device request of a pod's claim is not counted against its queue",
				"pod", klog.KObj(pod), "claim", pc.Name, "source", source, "problem", p)
		}
	}
	return out
}

// claimKeysOf returns the claims and templates pod's claims are counted
// from: the claims it names, the templates it names and the claims made
// from them that its status names.
func claimKeysOf(pod *v1.Pod) []claimKey {
	if pod == nil || len(pod.Spec.ResourceClaims) == 0 {
		return nil
	}
	keys := make([]claimKey, 0, len(pod.Spec.ResourceClaims))
	for i := range pod.Spec.ResourceClaims {
		pc := &pod.Spec.ResourceClaims[i]
		switch {
		case pc.ResourceClaimName != nil:
			keys = append(keys, claimKey{namespace: pod.Namespace, name: *pc.ResourceClaimName})
		case pc.ResourceClaimTemplateName != nil:
			keys = append(keys, claimKey{template: true, namespace: pod.Namespace, name: *pc.ResourceClaimTemplateName})
			if gen := generatedClaimName(pod, pc.Name); gen != "" {
				keys = append(keys, claimKey{namespace: pod.Namespace, name: gen})
			}
		}
	}
	return keys
}

// indexClaimsLocked records which claims and templates the task of the
// pod with uid is counted from: pod's (nil: the task is gone). The
// caller holds mu.
func (c *SchedulerCache) indexClaimsLocked(uid types.UID, pod *v1.Pod) {
	o := &c.claimObjs
	old := o.reads[uid]
	keys := claimKeysOf(pod)
	if len(old) == 0 && len(keys) == 0 {
		return
	}
	for _, k := range old {
		if set := o.users[k]; set != nil {
			delete(set, uid)
			if len(set) == 0 {
				delete(o.users, k)
			}
		}
	}
	if len(keys) == 0 {
		delete(o.reads, uid)
		return
	}
	o.reads[uid] = keys
	for _, k := range keys {
		set := o.users[k]
		if set == nil {
			set = map[types.UID]struct{}{}
			o.users[k] = set
		}
		set[uid] = struct{}{}
	}
}

// claimInputs are what claimDevicesLocked reads of a pod: its claims and
// their statuses.
type claimInputs struct {
	claims   []v1.PodResourceClaim
	statuses []v1.PodResourceClaimStatus
}

// claimInputsOfTask reads them of t's pod, or of the record of a bound
// one, without making a pod of it.
func claimInputsOfTask(t *framework.TaskInfo) claimInputs {
	if r := t.Record(); r != nil {
		return claimInputs{r.ResourceClaims(), r.ResourceClaimStatuses()}
	}
	return claimInputs{t.Pod.Spec.ResourceClaims, t.Pod.Status.ResourceClaimStatuses}
}

// same reports whether a and b, of two versions of one pod, agree.
func (a claimInputs) same(b claimInputs) bool {
	if len(a.claims) == 0 && len(b.claims) == 0 {
		return true
	}
	return apiequality.Semantic.DeepEqual(a.claims, b.claims) &&
		apiequality.Semantic.DeepEqual(a.statuses, b.statuses)
}

// claimDevicesFor returns the claim devices of pod for a task that
// replaces old (nil: none): old's when the pod's claims did not change
// (a change of the objects they are counted from recounts the tasks
// itself, see setClaimObject), counted again otherwise. The caller holds
// mu.
func (c *SchedulerCache) claimDevicesFor(old *framework.TaskInfo, pod *v1.Pod) map[v1.ResourceName]int64 {
	if old != nil && claimInputsOfTask(old).same(claimInputs{pod.Spec.ResourceClaims, pod.Status.ResourceClaimStatuses}) {
		return old.ClaimDevices
	}
	return c.claimDevicesLocked(pod).Scalar
}

// claimObserver is the cache's informerhost.Options.ClaimObserver: it
// records every ResourceClaim, ResourceClaimTemplate, DeviceClass and
// ResourceSlice, recounts the tasks they change and the devices the
// classes select (devices.go), before passing the event on to next.
func (c *SchedulerCache) claimObserver(r framework.EventResource, next toolscache.ResourceEventHandler) toolscache.ResourceEventHandler {
	return &claimObjectHandler{cache: c, next: next}
}

// claimObjectHandler is what claimObserver returns.
type claimObjectHandler struct {
	cache *SchedulerCache
	next  toolscache.ResourceEventHandler
}

var _ toolscache.ResourceEventHandler = &claimObjectHandler{}

func (h *claimObjectHandler) OnAdd(obj any, isInInitialList bool) {
	h.cache.setClaimObject(obj, false)
	h.next.OnAdd(obj, isInInitialList)
}

func (h *claimObjectHandler) OnUpdate(oldObj, newObj any) {
	h.cache.setClaimObject(newObj, false)
	h.next.OnUpdate(oldObj, newObj)
}

func (h *claimObjectHandler) OnDelete(obj any) {
	h.cache.setClaimObject(unwrapTombstone(obj), true)
	h.next.OnDelete(obj)
}

// setClaimObject records obj, a ResourceClaim, ResourceClaimTemplate,
// DeviceClass or ResourceSlice (deleted: forgets it), and recounts the
// claim devices of the tasks it may change and the devices the classes
// select. When a task's count changed, the jobs waiting for room in their
// queue are retried (framework.EventQueueChange): a queue's usage may have
// shrunk. When the devices the classes select changed, the next snapshot
// of the tenant queues recounts the capacity (Tenants.CapacityMayGrow),
// and the same jobs are retried: their shares may have grown. Anything
// else is ignored.
func (c *SchedulerCache) setClaimObject(obj any, deleted bool) {
	c.mu.Lock()
	o := &c.claimObjs
	var affected map[types.UID]struct{}
	devicesChanged := false
	switch x := obj.(type) {
	case *resourceapi.ResourceClaim:
		k := claimKey{namespace: x.Namespace, name: x.Name}
		if deleted {
			delete(o.claims, k)
		} else {
			o.claims[k] = x
		}
		affected = o.users[k]
	case *resourceapi.ResourceClaimTemplate:
		k := claimKey{template: true, namespace: x.Namespace, name: x.Name}
		if deleted {
			delete(o.templates, k)
		} else {
			o.templates[k] = x
		}
		affected = o.users[k]
	case *resourceapi.ResourceSlice:
		devicesChanged = c.setDeviceSliceLocked(x, deleted)
	case *resourceapi.DeviceClass:
		devicesChanged = c.setDeviceClassLocked(x, deleted)
		before, had := o.extendedNames[x.Name]
		var now v1.ResourceName
		has := !deleted && x.Spec.ExtendedResourceName != nil && *x.Spec.ExtendedResourceName != ""
		if has {
			now = v1.ResourceName(*x.Spec.ExtendedResourceName)
			o.extendedNames[x.Name] = now
		} else {
			delete(o.extendedNames, x.Name)
		}
		if had != has || before != now {
			// Rare: every task with claims is recounted.
			affected = make(map[types.UID]struct{}, len(o.reads))
			for uid := range o.reads {
				affected[uid] = struct{}{}
			}
		}
	}
	changed := c.recountClaimDevicesLocked(affected)
	c.mu.Unlock()
	if devicesChanged {
		c.tenants.CapacityMayGrow()
	}
	if changed || devicesChanged {
		c.queue.MoveAllToActiveOrBackoffQueue(framework.EventQueueChange, nil, &framework.QueueChange{})
	}
}

// recountClaimDevicesLocked counts the claim devices of the tasks of the
// pods with uids again and replaces the tasks whose count changed;
// it reports whether any did. The caller holds mu for writing.
func (c *SchedulerCache) recountClaimDevicesLocked(uids map[types.UID]struct{}) bool {
	changed := false
	for uid := range uids {
		t, ok := c.tasks[uid]
		if !ok {
			continue
		}
		d := c.claimDevicesLocked(t.PodObject()).Scalar
		if maps.Equal(d, t.ClaimDevices) {
			continue
		}
		klog.V(4).InfoS("Claim devices of a pod recounted", "pod", klog.KObj(t), "devices", d, "was", t.ClaimDevices)
		c.replaceClaimDevicesLocked(t, d)
		changed = true
	}
	return changed
}

// replaceClaimDevicesLocked replaces t, the cache's task of its pod, with
// a copy whose ClaimDevices are d, wherever t is: its job (keeping the
// tenant queues' usage in step), the index of tasks without a job record,
// its node. Node accounting does not change: it reads Requests only.
func (c *SchedulerCache) replaceClaimDevicesLocked(t *framework.TaskInfo, d map[v1.ResourceName]int64) {
	nt := *t
	nt.ClaimDevices = d
	uid := t.GetUID()
	c.tasks[uid] = &nt
	if KeepsJobRecord(&nt) {
		if job, ok := c.jobs[nt.Job]; ok {
			c.setJobTaskLocked(job, &nt)
		}
	} else {
		c.jobless.replace(&nt)
	}
	if nt.OnNode() {
		if info, item := c.accountedNodeLocked(nt.NodeName); info != nil && info.RemoveTask(uid) {
			info.AddTask(&nt)
			c.releaseNodeLocked(info, item)
		}
	}
}
