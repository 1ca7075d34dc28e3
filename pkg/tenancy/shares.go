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
	"sort"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/batch-scheduler/batch-scheduler/pkg/fairshare"
	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
	"github.com/batch-scheduler/batch-scheduler/pkg/resources"
)

// computeSharesLocked divides the capacity among the tenant queues (see
// pkg/fairshare), and hands the tenant queues' order (the OrderPolicy's)
// to the scheduling queue. prev is the last division; when a share moved,
// jobs that wait for their tenant queue's share are retried. The caller
// holds mu.
func (t *Tenants) computeSharesLocked(now time.Time, prev *shares, nodeCapacity resources.Resource) *shares {
	specs := t.effectiveSpecsLocked()
	capacity := nodeCapacity.Clone()
	// What jobs of tenant queues that do not exist use is not the tenant
	// queues' to share.
	valid := map[string]bool{}
	for _, sp := range specs {
		valid[sp.Name] = true
	}
	for name, u := range t.usage {
		if !valid[name] {
			capacity.Sub(u.Allocated)
		}
	}
	clampNegative(&capacity)

	in := make([]fairshare.Queue, 0, len(specs))
	invalid := map[string]error{}
	for _, sp := range specs {
		if sp.Err != nil {
			invalid[sp.Name] = fmt.Errorf("%s: %w", sp.Source, sp.Err)
			continue
		}
		q := fairshare.Queue{Name: sp.Name, Parent: sp.Parent, Weight: sp.Weight, Guarantee: fairshare.Vector(sp.Guarantee),
			Limit: fairshare.Vector(sp.Limit), Borrow: sp.Borrow, Lend: sp.Lend}
		if u := t.usage[sp.Name]; u != nil {
			d := u.Allocated.Clone()
			d.Add(u.Pending)
			q.Demand = fairshare.Vector(framework.AmountsOf(d))
		}
		in = append(in, q)
	}
	res := fairshare.Compute(fairshare.Vector(framework.AmountsOf(capacity)), in)
	snap := &framework.QueueSnapshot{Capacity: framework.AmountsOf(capacity), Queues: map[string]*framework.QueueState{}, Invalid: invalid}
	for name, err := range res.Invalid {
		snap.Invalid[name] = err
	}
	for _, sp := range specs {
		sh, ok := res.Shares[sp.Name]
		if !ok {
			// A spec with an error, or left out by the computation.
			if _, bad := snap.Invalid[sp.Name]; !bad {
				snap.Invalid[sp.Name] = errors.New("left out of the division of the capacity")
			}
			continue
		}
		snap.Queues[sp.Name] = &framework.QueueState{QueueSpec: *sp, Depth: sh.Depth,
			Guaranteed: framework.ResourceAmounts(sh.Guarantee), Entitlement: framework.ResourceAmounts(sh.Entitlement),
			FairShare: framework.ResourceAmounts(sh.FairShare)}
	}
	for name, q := range snap.Queues {
		if p, ok := snap.Queues[q.Parent]; ok {
			p.Children = append(p.Children, name)
		}
	}
	for _, q := range snap.Queues {
		sort.Strings(q.Children)
	}
	out := &shares{at: now, computed: now, specGen: t.specGen, demandGen: t.demandGen, askGen: t.askGen,
		capacity: nodeCapacity, snap: snap}
	t.queue.SetTenantQueueRanks(schedulingRanks(t.orderPolicy.Rank(t.withUsageLocked(snap))))
	if prev != nil && sharesMoved(prev.snap, snap) {
		t.queue.MoveAllToActiveOrBackoffQueue(framework.EventQueueChange, nil, &framework.QueueChange{})
	}
	return out
}

// sharesMoved reports whether any tenant queue's fair share, or the set
// of tenant queues, differs between a and b.
func sharesMoved(a, b *framework.QueueSnapshot) bool {
	if len(a.Queues) != len(b.Queues) || len(a.Invalid) != len(b.Invalid) {
		return true
	}
	for name, qa := range a.Queues {
		qb, ok := b.Queues[name]
		if !ok || !equalAmounts(qa.FairShare, qb.FairShare) {
			return true
		}
	}
	return false
}

// withUsageLocked returns a copy of snap with what the tenant queues use
// and wait for now: a tenant queue's Allocated and Pending include its
// subtree's. The caller holds mu.
func (t *Tenants) withUsageLocked(snap *framework.QueueSnapshot) *framework.QueueSnapshot {
	out := &framework.QueueSnapshot{Capacity: snap.Capacity, Invalid: snap.Invalid, Queues: make(map[string]*framework.QueueState, len(snap.Queues))}
	for name, q := range snap.Queues {
		cp := *q
		cp.Allocated, cp.Pending, cp.Releasing = framework.ResourceAmounts{}, framework.ResourceAmounts{}, framework.ResourceAmounts{}
		cp.PendingJobs, cp.RunningJobs = 0, 0
		out.Queues[name] = &cp
	}
	for tenant, w := range t.queue.RoomWaiters() {
		if tenant == "" {
			tenant = framework.DefaultQueue
		}
		if q, ok := out.Queues[tenant]; ok {
			w := w
			q.FirstWaiter = &w
		}
	}
	for name, u := range t.usage {
		q, ok := out.Queues[name]
		if !ok {
			continue
		}
		q.PendingJobs, q.RunningJobs = u.PendingJobs, u.RunningJobs
		for hops := 0; q != nil && hops <= len(out.Queues); hops++ {
			addResource(q.Allocated, &u.Allocated)
			addResource(q.Releasing, &u.Releasing)
			addResource(q.Pending, &u.Pending)
			q = out.Queues[q.Parent]
		}
	}
	return out
}

// addResource adds r to the amounts to, as framework.AmountsOf counts
// them (no pod count, no zero amounts).
func addResource(to framework.ResourceAmounts, r *resources.Resource) {
	add := func(name v1.ResourceName, v int64) {
		if v != 0 {
			to[name] = resources.AddSat(to[name], v)
		}
	}
	add(v1.ResourceCPU, r.MilliCPU)
	add(v1.ResourceMemory, r.Memory)
	add(v1.ResourceEphemeralStorage, r.EphemeralStorage)
	for name, v := range r.Scalar {
		add(name, v)
	}
}

func clampNegative(r *resources.Resource) {
	r.MilliCPU, r.Memory, r.EphemeralStorage, r.Pods = max(r.MilliCPU, 0), max(r.Memory, 0), max(r.EphemeralStorage, 0), max(r.Pods, 0)
	for k, v := range r.Scalar {
		if v < 0 {
			r.Scalar[k] = 0
		}
	}
}
