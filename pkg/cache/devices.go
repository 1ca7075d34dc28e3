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
	"maps"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/dynamic-resource-allocation/cel"
	"k8s.io/klog/v2"

	"github.com/batch-scheduler/batch-scheduler/pkg/resources"
)

// Device totals: the devices published in ResourceSlices count in the
// capacity the tenant queues share (capacityLocked), so that their
// weights divide DRA-only devices too. Each DeviceClass counts the
// devices its spec.selectors select (all of them must match; a class
// without selectors selects every device), under
// deviceclass.resource.kubernetes.io/<class> and, when it has one, under
// its spec.extendedResourceName, the names claim devices count under
// (claims.go). For the extendedResourceName, a device on a node whose
// allocatable lists that name (more than zero, as the DynamicResources
// plugin reads it: a device plugin serves it there) is left out, since
// the node's allocatable counts it already.
//
// Only listed nodes count, as for the nodes' allocatable: a device on a
// node the cache does not list (not seen yet, outside the node selector,
// a placeholder) is left out; a device of a slice (or, with
// perDeviceNodeSelection, of its own) that has no single node (a node
// selector, all nodes) counts once. Of each pool (driver and pool name),
// only the slices of its highest spec.pool.generation count; older ones
// are stale.
//
// The cache keeps, under mu in claimObjs, every DeviceClass's compiled
// selectors and, per ResourceSlice, how many of its devices each class
// selects per node. A slice's event recounts that slice against every
// class; a class's change of selectors recounts every slice against that
// class; the totals are summed from these counts when the capacity is
// recounted (at most every tenancy.Options.Refresh, and at the next
// snapshot after a slice or class changed the counts). The selectors are
// CEL, compiled and evaluated by k8s.io/dynamic-resource-allocation/cel
// as the DynamicResources plugin's allocator does. A selector that does
// not compile, or fails on a device, selects nothing (that device, or
// every device while it does not compile); it is logged once per version
// of the class.

// celCacheSize bounds the compiled selectors the device totals keep
// beside their classes.
const celCacheSize = 64

// poolKey names a pool of devices: pool names are the driver's.
type poolKey struct{ driver, pool string }

// deviceClassEntry is what the device totals read of a DeviceClass.
type deviceClassEntry struct {
	// implicit is deviceclass.resource.kubernetes.io/<class>, extended
	// its spec.extendedResourceName ("" without one).
	implicit, extended v1.ResourceName
	// selectors are its spec.selectors, compiled their compilations,
	// broken why one of them does not compile (nil when all do).
	selectors []resourceapi.DeviceSelector
	compiled  []cel.CompilationResult
	broken    error
	// logged is set once a problem of its selectors has been logged.
	logged bool
}

// sliceEntry is what the device totals read of a ResourceSlice.
type sliceEntry struct {
	slice      *resourceapi.ResourceSlice
	pool       poolKey
	generation int64
	// counts holds, per class and node ("" for devices on no single
	// node), how many of the slice's devices the class selects; classes
	// and nodes without any are left out.
	counts map[string]map[string]int64
}

// deviceObjects is what the cache knows of DeviceClasses and
// ResourceSlices for the device totals (part of claimObjects, guarded by
// mu).
type deviceObjects struct {
	classes map[string]*deviceClassEntry
	slices  map[string]*sliceEntry
	// generations holds the highest generation of each pool's slices.
	generations map[poolKey]int64
	celCache    *cel.Cache
}

func newDeviceObjects() deviceObjects {
	return deviceObjects{
		classes:     map[string]*deviceClassEntry{},
		slices:      map[string]*sliceEntry{},
		generations: map[poolKey]int64{},
		celCache:    cel.NewCache(celCacheSize, cel.Features{}),
	}
}

// newDeviceClassEntry compiles class's selectors.
func (o *deviceObjects) newDeviceClassEntry(class *resourceapi.DeviceClass) *deviceClassEntry {
	e := &deviceClassEntry{implicit: v1.ResourceName(resourceapi.ResourceDeviceClassPrefix + class.Name), selectors: class.Spec.Selectors}
	if n := class.Spec.ExtendedResourceName; n != nil && *n != "" {
		e.extended = v1.ResourceName(*n)
	}
	for i, s := range class.Spec.Selectors {
		if s.CEL == nil {
			e.broken = fmt.Errorf("DeviceClass %s: selector #%d has no CEL expression", class.Name, i)
			break
		}
		expr := o.celCache.GetOrCompile(s.CEL.Expression)
		if expr.Error != nil {
			e.broken = fmt.Errorf("DeviceClass %s: selector #%d: CEL compile error: %w", class.Name, i, expr.Error)
			break
		}
		e.compiled = append(e.compiled, expr)
	}
	return e
}

// selects reports whether class e, named class, selects device of
// driver. A problem is logged once per entry.
func (e *deviceClassEntry) selects(class, driver string, device *resourceapi.Device) bool {
	if e.broken != nil {
		e.logOnce(class, e.broken)
		return false
	}
	for i := range e.compiled {
		ok, _, err := e.compiled[i].DeviceMatches(context.Background(),
			cel.Device{Driver: driver, Attributes: device.Attributes, Capacity: device.Capacity})
		if err != nil {
			e.logOnce(class, fmt.Errorf("DeviceClass %s: selector #%d on device %s/%s: CEL runtime error: %w",
				class, i, driver, device.Name, cel.EnhanceRuntimeError(err)))
			return false
		}
		if !ok {
			return false
		}
	}
	return true
}

func (e *deviceClassEntry) logOnce(class string, err error) {
	if e.logged {
		return
	}
	e.logged = true
	klog.InfoS("A selector of a DeviceClass cannot be evaluated: the devices it fails on are not counted in the capacity the queues share",
		"deviceClass", class, "err", err)
}

// deviceNode is the node device of slice is on, "" when it has no single
// node.
func deviceNode(slice *resourceapi.ResourceSlice, device *resourceapi.Device) string {
	if slice.Spec.PerDeviceNodeSelection != nil && *slice.Spec.PerDeviceNodeSelection {
		if device.NodeName != nil {
			return *device.NodeName
		}
		return ""
	}
	if slice.Spec.NodeName != nil {
		return *slice.Spec.NodeName
	}
	return ""
}

// countSlice adds to counts the devices of slice that class e (named
// class) selects, by node. Devices without a name are left out.
func countSlice(counts map[string]map[string]int64, slice *resourceapi.ResourceSlice, class string, e *deviceClassEntry) {
	for i := range slice.Spec.Devices {
		d := &slice.Spec.Devices[i]
		if d.Name == "" || !e.selects(class, slice.Spec.Driver, d) {
			continue
		}
		byNode := counts[class]
		if byNode == nil {
			byNode = map[string]int64{}
			counts[class] = byNode
		}
		byNode[deviceNode(slice, d)]++
	}
}

// setDeviceSliceLocked records slice (deleted: forgets it) and reports
// whether the device counts changed. The caller holds mu for writing.
func (c *SchedulerCache) setDeviceSliceLocked(slice *resourceapi.ResourceSlice, deleted bool) bool {
	o := &c.claimObjs.devices
	old := o.slices[slice.Name]
	if deleted {
		if old == nil {
			return false
		}
		delete(o.slices, slice.Name)
		o.updateGeneration(old.pool)
		return true
	}
	if old != nil && apiequality.Semantic.DeepEqual(old.slice.Spec, slice.Spec) {
		old.slice = slice
		return false
	}
	e := &sliceEntry{slice: slice, pool: poolKey{driver: slice.Spec.Driver, pool: slice.Spec.Pool.Name},
		generation: slice.Spec.Pool.Generation, counts: map[string]map[string]int64{}}
	for class, ce := range o.classes {
		countSlice(e.counts, slice, class, ce)
	}
	genBefore, hadPool := o.generations[e.pool]
	o.slices[slice.Name] = e
	o.updateGeneration(e.pool)
	if old == nil {
		// A newer generation makes the pool's other slices stale.
		return len(e.counts) > 0 || (hadPool && o.generations[e.pool] != genBefore)
	}
	if old.pool != e.pool {
		o.updateGeneration(old.pool)
	}
	return old.pool != e.pool || old.generation != e.generation || !equalCounts(old.counts, e.counts)
}

// updateGeneration sets the highest generation of pool's slices.
func (o *deviceObjects) updateGeneration(pool poolKey) {
	found := false
	var gen int64
	for _, s := range o.slices {
		if s.pool == pool && (!found || s.generation > gen) {
			found, gen = true, s.generation
		}
	}
	if found {
		o.generations[pool] = gen
	} else {
		delete(o.generations, pool)
	}
}

func equalCounts(a, b map[string]map[string]int64) bool {
	return maps.EqualFunc(a, b, func(x, y map[string]int64) bool { return maps.Equal(x, y) })
}

// setDeviceClassLocked records class (deleted: forgets it), recounting
// every slice against it when its selectors changed, and reports whether
// the device totals may have changed. The caller holds mu for writing.
func (c *SchedulerCache) setDeviceClassLocked(class *resourceapi.DeviceClass, deleted bool) bool {
	o := &c.claimObjs.devices
	old := o.classes[class.Name]
	if deleted {
		if old == nil {
			return false
		}
		delete(o.classes, class.Name)
		changed := false
		for _, s := range o.slices {
			if _, ok := s.counts[class.Name]; ok {
				delete(s.counts, class.Name)
				changed = true
			}
		}
		return changed
	}
	if old != nil && apiequality.Semantic.DeepEqual(old.selectors, class.Spec.Selectors) {
		var ext v1.ResourceName
		if n := class.Spec.ExtendedResourceName; n != nil {
			ext = v1.ResourceName(*n)
		}
		if ext == old.extended {
			return false
		}
		// Only the names change: the counts stand.
		old.extended = ext
		return true
	}
	e := o.newDeviceClassEntry(class)
	o.classes[class.Name] = e
	for _, s := range o.slices {
		delete(s.counts, class.Name)
		countSlice(s.counts, s.slice, class.Name, e)
	}
	return true
}

// addDeviceTotalsLocked adds the device totals to total. The caller holds
// mu (for reading or writing).
func (c *SchedulerCache) addDeviceTotalsLocked(total *resources.Resource) {
	o := &c.claimObjs.devices
	for _, s := range o.slices {
		if s.generation < o.generations[s.pool] {
			continue
		}
		for class, byNode := range s.counts {
			e := o.classes[class]
			if e == nil {
				continue
			}
			for node, n := range byNode {
				var listed *nodeItem
				if node != "" {
					item, ok := c.nodes[node]
					if !ok || item.info.Placeholder {
						continue
					}
					listed = item
				}
				addScalar(total, e.implicit, n)
				if e.extended != "" && (listed == nil || listed.info.Schedulable.Scalar[e.extended] <= 0) {
					addScalar(total, e.extended, n)
				}
			}
		}
	}
}

func addScalar(r *resources.Resource, name v1.ResourceName, n int64) {
	if n <= 0 {
		return
	}
	if r.Scalar == nil {
		r.Scalar = map[v1.ResourceName]int64{}
	}
	r.Scalar[name] = resources.AddSat(r.Scalar[name], n)
}
