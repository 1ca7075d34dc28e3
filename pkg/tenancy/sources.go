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

package tenancy

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/batch-scheduler/batch-scheduler/pkg/apis/batchscheduler/v1alpha1"
	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
)

// Tenant queues (docs/queues.md) come from the project's own Queue API
// and from Volcano's. An event handler watches the resources of Sources
// where the API server serves them, reads each object with its Source's
// Spec, and reports the result to the cache (eventhandlers.TenantQueueCache),
// which hands it to Tenants.SetQueue.

// The sources of tenant queues: the API group of the objects that define
// them (framework.QueueSpec.API). When both define a tenant queue of the
// same name, the first in Sources wins.
const (
	SourceOwn     = "batch-scheduler.io"
	SourceVolcano = "scheduling.volcano.sh"
)

// VolcanoRootQueue is the Queue Volcano creates as the root of its
// hierarchy; its children name it as their parent.
const VolcanoRootQueue = "root"

// Source is one API whose objects define tenant queues.
type Source struct {
	// API is the API group (SourceOwn, SourceVolcano).
	API string
	// Resource is the resource of the objects.
	Resource schema.GroupVersionResource
	// Spec reads one object; a spec with Err set is reported all the
	// same, so that its jobs wait with the reason.
	Spec func(u *unstructured.Unstructured) *framework.QueueSpec
	// Root, when set, names the object that stands for the root of the
	// tenant queues, not a tenant queue of its own: it is ignored.
	Root string
}

// Sources are the sources of tenant queues in the order of precedence.
var Sources = []Source{
	{API: SourceOwn, Resource: v1alpha1.SchemeGroupVersion.WithResource(v1alpha1.QueuesResource), Spec: OwnQueueSpec},
	{API: SourceVolcano, Resource: schema.GroupVersionResource{Group: SourceVolcano, Version: "v1beta1", Resource: "queues"},
		Spec: VolcanoQueueSpec, Root: VolcanoRootQueue},
}

// SourceFor returns the source whose resource is gvr.
func SourceFor(gvr schema.GroupVersionResource) (Source, bool) {
	for _, s := range Sources {
		if s.Resource == gvr {
			return s, true
		}
	}
	return Source{}, false
}

// OwnQueueSpec reads a Queue of this project.
func OwnQueueSpec(u *unstructured.Unstructured) *framework.QueueSpec {
	spec := &framework.QueueSpec{Name: u.GetName(), Source: "Queue " + u.GetName(), Weight: 1, Borrow: true, Lend: true, Reclaimable: true}
	var q v1alpha1.Queue
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &q); err != nil {
		spec.Err = fmt.Errorf("%s is invalid: %w", spec.Source, queueDecodeError(u, err))
		return spec
	}
	if errs := v1alpha1.ValidateQueue(&q); len(errs) > 0 {
		spec.Err = fmt.Errorf("%s is invalid: %w", spec.Source, errs.ToAggregate())
		return spec
	}
	spec.Parent = q.Spec.Parent
	if q.Spec.Weight > 0 {
		spec.Weight = int64(q.Spec.Weight)
	}
	spec.Guarantee = framework.AmountsOfList(q.Spec.Guaranteed)
	if q.Spec.Limit != nil {
		spec.Limit = framework.AmountsOfList(q.Spec.Limit)
		// A resource the limit names at zero is limited to zero.
		for name := range q.Spec.Limit {
			if rn := limitName(name); rn != "" {
				if _, ok := spec.Limit[rn]; !ok {
					spec.Limit[rn] = 0
				}
			}
		}
	}
	spec.Borrow = boolOr(q.Spec.Borrow, true)
	spec.Lend = boolOr(q.Spec.Lend, true)
	spec.Reclaimable = boolOr(q.Spec.Reclaimable, true)
	return spec
}

// queueDecodeError is err, an error decoding the Queue u, prefixed with
// the field of u's spec it is about: the converter's errors name none
// (e.g. "unrecognized type: int32" for a weight that is a string).
func queueDecodeError(u *unstructured.Unstructured, err error) error {
	raw, ok := u.Object["spec"]
	if !ok {
		return err
	}
	fields, ok := raw.(map[string]any)
	if !ok {
		return fmt.Errorf("spec: %w", err)
	}
	for _, name := range slices.Sorted(maps.Keys(fields)) {
		var one v1alpha1.QueueSpec
		if ferr := runtime.DefaultUnstructuredConverter.FromUnstructured(map[string]any{name: fields[name]}, &one); ferr != nil {
			return fmt.Errorf("spec.%s: %w", name, ferr)
		}
	}
	return err
}

// limitName is the name a limit's resource is accounted under; empty for
// the pod count, which queues do not share.
func limitName(name v1.ResourceName) v1.ResourceName {
	if name == v1.ResourcePods {
		return ""
	}
	return name
}

func boolOr(b *bool, def bool) bool {
	if b == nil {
		return def
	}
	return *b
}

// VolcanoQueueSpec reads a scheduling.volcano.sh/v1beta1 Queue:
// spec.weight, spec.capability (the limit), spec.guarantee.resource (the
// guarantee; spec.deserved, which Volcano's capacity plugin reclaims up
// to, counts as the guarantee where it is larger), spec.reclaimable and
// spec.parent ("root" is the root).
func VolcanoQueueSpec(u *unstructured.Unstructured) *framework.QueueSpec {
	name := u.GetName()
	spec := &framework.QueueSpec{Name: name, Source: "Queue.scheduling.volcano.sh " + name, Weight: 1, Borrow: true, Lend: true, Reclaimable: true}
	var errs []error
	if w, found, err := unstructured.NestedInt64(u.Object, "spec", "weight"); err != nil {
		errs = append(errs, fmt.Errorf("spec.weight: %w", err))
	} else if found {
		if w < 0 || w > v1alpha1.MaxQueueWeight {
			errs = append(errs, fmt.Errorf("spec.weight: %d is not between 1 and %d", w, v1alpha1.MaxQueueWeight))
		} else if w > 0 {
			spec.Weight = w
		}
	}
	readList := func(path ...string) v1.ResourceList {
		m, found, err := unstructured.NestedMap(u.Object, path...)
		if err != nil || !found {
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", joinPath(path), err))
			}
			return nil
		}
		rl := v1.ResourceList{}
		for rn, raw := range m {
			var text string
			switch v := raw.(type) {
			case string:
				text = v
			case int64:
				text = strconv.FormatInt(v, 10)
			case float64:
				text = strconv.FormatFloat(v, 'f', -1, 64)
			default:
				errs = append(errs, fmt.Errorf("%s[%s]: %v is not a quantity", joinPath(path), rn, raw))
				continue
			}
			q, err := resource.ParseQuantity(text)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s[%s]: %w", joinPath(path), rn, err))
				continue
			}
			if q.Sign() < 0 {
				errs = append(errs, fmt.Errorf("%s[%s]: %s is negative", joinPath(path), rn, q.String()))
				continue
			}
			rl[v1.ResourceName(rn)] = q
		}
		return rl
	}
	if limit := readList("spec", "capability"); limit != nil {
		spec.Limit = framework.AmountsOfList(limit)
		for rn := range limit {
			if n := limitName(rn); n != "" {
				if _, ok := spec.Limit[n]; !ok {
					spec.Limit[n] = 0
				}
			}
		}
	}
	spec.Guarantee = framework.AmountsOfList(readList("spec", "guarantee", "resource"))
	for rn, v := range framework.AmountsOfList(readList("spec", "deserved")) {
		spec.Guarantee[rn] = max(spec.Guarantee[rn], v)
	}
	if r, found, err := unstructured.NestedBool(u.Object, "spec", "reclaimable"); err != nil {
		errs = append(errs, fmt.Errorf("spec.reclaimable: %w", err))
	} else if found {
		spec.Reclaimable = r
	}
	if p, found, err := unstructured.NestedString(u.Object, "spec", "parent"); err != nil {
		errs = append(errs, fmt.Errorf("spec.parent: %w", err))
	} else if found && p != VolcanoRootQueue {
		spec.Parent = p
	}
	if len(errs) > 0 {
		spec.Err = fmt.Errorf("%s is invalid: %w", spec.Source, errors.Join(errs...))
	}
	return spec
}

func joinPath(path []string) string { return strings.Join(path, ".") }
