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

package drf

import (
	v1 "k8s.io/api/core/v1"

	"github.com/batch-scheduler/batch-scheduler/pkg/resources"
)

// vec is a set of non-negative resource amounts by name, CPU in
// millicores, everything else in its base unit. Absent means zero; the
// helpers never store a zero or negative amount.
type vec map[v1.ResourceName]int64

// toVec converts r, dropping zero and negative amounts.
func toVec(r resources.Resource) vec {
	v := vec{}
	v.put(v1.ResourceCPU, r.MilliCPU)
	v.put(v1.ResourceMemory, r.Memory)
	v.put(v1.ResourceEphemeralStorage, r.EphemeralStorage)
	v.put(v1.ResourcePods, r.Pods)
	for name, q := range r.Scalar {
		v.put(name, q)
	}
	return v
}

// listVec converts a ResourceList, dropping zero and negative amounts.
func listVec(l v1.ResourceList) vec {
	if len(l) == 0 {
		return vec{}
	}
	return toVec(resources.FromList(l))
}

// resource converts v back.
func (v vec) resource() resources.Resource {
	var r resources.Resource
	for name, q := range v {
		switch name {
		case v1.ResourceCPU:
			r.MilliCPU = q
		case v1.ResourceMemory:
			r.Memory = q
		case v1.ResourceEphemeralStorage:
			r.EphemeralStorage = q
		case v1.ResourcePods:
			r.Pods = q
		default:
			if r.Scalar == nil {
				r.Scalar = map[v1.ResourceName]int64{}
			}
			r.Scalar[name] = q
		}
	}
	return r
}

// put sets name to q, or removes it if q is not positive.
func (v vec) put(name v1.ResourceName, q int64) {
	if q > 0 {
		v[name] = q
	} else {
		delete(v, name)
	}
}

func (v vec) clone() vec {
	c := make(vec, len(v))
	for k, q := range v {
		c[k] = q
	}
	return c
}

// add adds o to v.
func (v vec) add(o vec) {
	for k, q := range o {
		v.put(k, v[k]+q)
	}
}

// sub subtracts o from v, flooring every amount at zero.
func (v vec) sub(o vec) {
	for k, q := range o {
		v.put(k, v[k]-q)
	}
}

// minus returns v - o, floored at zero.
func (v vec) minus(o vec) vec {
	c := v.clone()
	c.sub(o)
	return c
}

// min returns the smaller amount of v and o for every resource.
func (v vec) min(o vec) vec {
	c := vec{}
	for k, q := range v {
		c.put(k, min(q, o[k]))
	}
	return c
}

// max returns the larger amount of v and o for every resource.
func (v vec) max(o vec) vec {
	c := v.clone()
	for k, q := range o {
		c.put(k, max(q, c[k]))
	}
	return c
}

// fits reports whether every amount of request is at most v's.
func (v vec) fits(request vec) bool {
	for k, q := range request {
		if q > v[k] {
			return false
		}
	}
	return true
}

// covers reports whether v has something of every resource of o.
func (v vec) covers(o vec) bool {
	for k := range o {
		if v[k] <= 0 {
			return false
		}
	}
	return true
}

// overlaps reports whether v and o share a resource.
func (v vec) overlaps(o vec) bool {
	for k := range o {
		if v[k] > 0 {
			return true
		}
	}
	return false
}
