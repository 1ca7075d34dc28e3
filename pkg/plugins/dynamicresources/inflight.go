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

package dynamicresources

import (
	"strconv"
	"sync"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/types"
)

// inFlight tracks the allocations this scheduler decided (Reserve) but the
// informer does not show yet: from Reserve until Unreserve, or until
// every pod reserved on the claim has been written to the claim's
// reservedFor and the informer caught up (see pendingView.caughtUp: it
// shows the claim allocated, or our write or a later version, e.g. the
// claim deallocated again once its pods finished). Later pods of
// the same gang, in the same cycle, and later cycles count its devices
// as taken, and a pod sharing the claim reuses its allocation.
//
// mu guards byClaim and the claims in it. It is taken for short map
// operations only, never while calling the API server, the allocator or a
// lister.
type inFlight struct {
	mu      sync.Mutex
	byClaim map[types.UID]*pendingClaim
}

// pendingClaim is one claim's allocation in flight.
type pendingClaim struct {
	namespace, name string
	allocation      *resourceapi.AllocationResult
	// consumers are the pods reserved on the claim in flight: false until
	// Bind wrote the pod into the claim's reservedFor, true after.
	consumers map[types.UID]bool
	// writtenRV is the claim's resourceVersion after Bind's last write.
	writtenRV string
}

func newInFlight() *inFlight {
	return &inFlight{byClaim: map[types.UID]*pendingClaim{}}
}

// allocation returns the allocation in flight for the claim uid, or nil.
// The result is shared: do not modify it.
func (f *inFlight) allocation(uid types.UID) *resourceapi.AllocationResult {
	f.mu.Lock()
	defer f.mu.Unlock()
	if p := f.byClaim[uid]; p != nil {
		return p.allocation
	}
	return nil
}

// reserve records pod as a consumer of claim's allocation in flight. With
// a non-nil allocation it starts the claim's entry: it reports false when
// another allocation of the claim is in flight already. With nil it joins
// the entry there is (a pod sharing the claim) and reports false when
// there is none.
func (f *inFlight) reserve(claim *resourceapi.ResourceClaim, allocation *resourceapi.AllocationResult, pod types.UID) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	p := f.byClaim[claim.UID]
	if allocation != nil {
		if p != nil && p.allocation != allocation {
			return false
		}
		if p == nil {
			p = &pendingClaim{namespace: claim.Namespace, name: claim.Name, allocation: allocation, consumers: map[types.UID]bool{}}
			f.byClaim[claim.UID] = p
		}
	}
	if p == nil {
		return false
	}
	if _, ok := p.consumers[pod]; !ok {
		p.consumers[pod] = false
	}
	return true
}

// written notes that Bind wrote pod into the claim's reservedFor, and the
// claim's resourceVersion after the write.
func (f *inFlight) written(uid, pod types.UID, rv string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if p := f.byClaim[uid]; p != nil {
		if _, ok := p.consumers[pod]; ok {
			p.consumers[pod] = true
		}
		if p.writtenRV == "" || newerRV(rv, p.writtenRV) {
			p.writtenRV = rv
		}
	}
}

// created moves the entry of an in-memory claim (a pod's
// extended-resource claim, under its temporary uid) to claim, the object
// Bind created for it, so that the entry is forgotten once the informer
// shows that claim (pendingView.caughtUp).
func (f *inFlight) created(uid types.UID, claim *resourceapi.ResourceClaim) {
	f.mu.Lock()
	defer f.mu.Unlock()
	p := f.byClaim[uid]
	if p == nil {
		return
	}
	delete(f.byClaim, uid)
	p.namespace, p.name = claim.Namespace, claim.Name
	f.byClaim[claim.UID] = p
}

// newerRV reports whether resourceVersion a is newer than b. Resource
// versions are opaque, but the API server's are etcd revisions: they are
// compared as numbers where both are; otherwise only equality is known.
func newerRV(a, b string) bool {
	na, errA := strconv.ParseUint(a, 10, 64)
	nb, errB := strconv.ParseUint(b, 10, 64)
	return errA == nil && errB == nil && na > nb
}

// release drops pod from the claim's consumers, and the entry once it has
// none: the allocation was either never written, or written and undone
// by the caller.
func (f *inFlight) release(uid, pod types.UID) {
	f.mu.Lock()
	defer f.mu.Unlock()
	p := f.byClaim[uid]
	if p == nil {
		return
	}
	delete(p.consumers, pod)
	if len(p.consumers) == 0 {
		delete(f.byClaim, uid)
	}
}

// pendingView is a copy of one entry, for reading outside the lock.
type pendingView struct {
	uid             types.UID
	namespace, name string
	allocation      *resourceapi.AllocationResult
	allWritten      bool
	writtenRV       string
}

// list returns a copy of the entries.
func (f *inFlight) list() []pendingView {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]pendingView, 0, len(f.byClaim))
	for uid, p := range f.byClaim {
		all := true
		for _, w := range p.consumers {
			all = all && w
		}
		out = append(out, pendingView{uid: uid, namespace: p.namespace, name: p.name, allocation: p.allocation, allWritten: all, writtenRV: p.writtenRV})
	}
	return out
}

// caughtUp reports whether the informer's copy of the claim (nil: none)
// shows what entry p held: every consumer is written and the informer has
// the claim allocated, or holds our last write or a newer version, or no
// longer has the claim.
func (p pendingView) caughtUp(cur *resourceapi.ResourceClaim) bool {
	if !p.allWritten {
		return false
	}
	if cur == nil || cur.UID != p.uid || cur.Status.Allocation != nil {
		return true
	}
	return cur.ResourceVersion == p.writtenRV || newerRV(cur.ResourceVersion, p.writtenRV)
}

// forget drops the entry of uid once the informer shows what it held,
// unless it changed since list (a consumer joined).
func (f *inFlight) forget(uid types.UID) {
	f.mu.Lock()
	defer f.mu.Unlock()
	p := f.byClaim[uid]
	if p == nil {
		return
	}
	for _, w := range p.consumers {
		if !w {
			return
		}
	}
	delete(f.byClaim, uid)
}
