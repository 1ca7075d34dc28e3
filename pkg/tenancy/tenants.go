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
	"sync"
	"time"

	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
	"github.com/batch-scheduler/batch-scheduler/pkg/resources"
)

// DefaultRefresh is the default of Options.Refresh.
const DefaultRefresh = 200 * time.Millisecond

// demandRefresh is how often, at most, the shares are recomputed because
// what tenant queues that already ask for something ask for changed. A
// tenant queue that starts asking (it asked for nothing, no pod running
// or waiting, before: its first job waits, or a job moves to it) has its
// share recomputed at once, for that job's cycle.
const demandRefresh = 50 * time.Millisecond

// SchedulingQueue is what Tenants needs of the scheduling queue of
// pending jobs (pkg/schedulingqueue's SchedulingQueue implements it): the
// tenant queue of each job, the order of the tenant queues, the first job of
// each tenant queue that waits for room, and retrying waiting jobs. Its
// methods take the scheduling queue's lock, a leaf: they never call back
// into Tenants.
type SchedulingQueue interface {
	// SetJobTenantQueue records the tenant queue of job id ("" when the
	// job is gone).
	SetJobTenantQueue(id framework.JobID, tenantQueue string)
	// SetTenantQueueRanks sets the order of the tenant queues: the jobs
	// of a lower rank are popped first; nil ranks every tenant queue
	// equal. The default tenant queue is named "".
	SetTenantQueueRanks(ranks map[string]int)
	// RoomWaiters returns the first job of each tenant queue ("" for the
	// default one) that waits for room.
	RoomWaiters() map[string]framework.RoomWaiter
	// MoveAllToActiveOrBackoffQueue retries the waiting jobs event may
	// help.
	MoveAllToActiveOrBackoffQueue(event framework.ClusterEvent, oldObj, newObj any)
}

// Options configure Tenants.
type Options struct {
	// Clock dates the shares. Default: the real clock.
	Clock clock.PassiveClock
	// Refresh is how often, at most, the capacity the tenant queues share
	// is recounted and their shares recomputed for it; a change of a
	// tenant queue, or one that starts asking, recomputes the shares at
	// the next snapshot, and other changes of what the tenant queues ask
	// for within 50ms. Default: DefaultRefresh.
	Refresh time.Duration
	// OrderPolicy names the policy that orders the tenant queues for the
	// scheduling queue, one of OrderPolicies. Default: DefaultOrderPolicy.
	OrderPolicy string
	// OrderPolicies are the policies OrderPolicy may name. nil: the
	// in-tree ones (InTreeOrderPolicies).
	OrderPolicies OrderPolicies
}

// Tenants owns the tenant queues: the specs the event handlers report
// (SetQueue), what the jobs of each tenant queue use and wait for
// (ChangeJob), the division of the capacity among them (pkg/fairshare),
// their order for the scheduling queue (an OrderPolicy), and their status
// (Statuses). The cache holds one and feeds it; see the package
// documentation for its lock.
type Tenants struct {
	queue       SchedulingQueue
	clock       clock.PassiveClock
	refresh     time.Duration
	policyName  string
	orderPolicy OrderPolicy

	// mu guards everything below. See the package documentation for when
	// it is taken and what is called while it is held.
	mu sync.Mutex
	// specs hold the tenant queues handlers reported, by source and name
	// (SetQueue); specGen counts their changes.
	specs   map[string]map[string]*framework.QueueSpec
	specGen int64
	// watched is set by Watch: a job naming a tenant queue that no object
	// defines waits for it.
	watched bool
	// usage holds what the jobs of each tenant queue use and wait for.
	usage map[string]*Usage
	// demandGen counts changes of what the tenant queues ask for (their
	// allocated plus pending), askGen the tenant queues that start asking.
	demandGen, askGen int64
	// shares is the last division of the capacity.
	shares *shares
}

// shares is the last division of the capacity among the tenant queues.
type shares struct {
	// at is when it was computed, specGen the specGen it was computed for.
	at      time.Time
	specGen int64
	// demandGen and askGen are the generations it was computed for,
	// computed when; capacity the capacity it divided, recounted at most
	// every Options.Refresh (at).
	demandGen, askGen int64
	computed          time.Time
	capacity          resources.Resource
	// snap holds the shares; the usage in it is as of at, and Snapshot
	// refreshes it.
	snap *framework.QueueSnapshot
}

// New returns Tenants with no tenant queue, telling q about jobs' tenant
// queues and the tenant queues' order. An OrderPolicy that opts.OrderPolicies
// does not hold is an error.
func New(q SchedulingQueue, opts Options) (*Tenants, error) {
	if q == nil {
		return nil, errors.New("creating tenant queues: no scheduling queue")
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.Refresh == 0 {
		opts.Refresh = DefaultRefresh
	}
	if opts.Refresh < 0 {
		return nil, fmt.Errorf("creating tenant queues: negative refresh period %v", opts.Refresh)
	}
	if opts.OrderPolicy == "" {
		opts.OrderPolicy = DefaultOrderPolicy
	}
	if opts.OrderPolicies == nil {
		opts.OrderPolicies = InTreeOrderPolicies()
	}
	policy, err := opts.OrderPolicies.Lookup(opts.OrderPolicy)
	if err != nil {
		return nil, fmt.Errorf("creating tenant queues: %w", err)
	}
	return &Tenants{queue: q, clock: opts.Clock, refresh: opts.Refresh, policyName: opts.OrderPolicy, orderPolicy: policy,
		specs: map[string]map[string]*framework.QueueSpec{}, usage: map[string]*Usage{}}, nil
}

// OrderPolicy returns the name of the policy in use.
func (t *Tenants) OrderPolicy() string { return t.policyName }

// Refresh returns Options.Refresh, defaulted.
func (t *Tenants) Refresh() time.Duration { return t.refresh }

// SetQueue records what a tenant queue object of source (SourceOwn,
// SourceVolcano) says; spec nil forgets the tenant queue of name. Waiting
// jobs are retried (framework.EventQueueChange) when anything changed.
func (t *Tenants) SetQueue(source, name string, spec *framework.QueueSpec) {
	if spec != nil {
		cp := *spec
		cp.API = source
		spec = &cp
	}
	t.mu.Lock()
	bySource := t.specs[source]
	old, had := bySource[name]
	if (!had && spec == nil) || (had && spec != nil && sameSpec(old, spec)) {
		t.mu.Unlock()
		return
	}
	if spec == nil {
		delete(bySource, name)
		if len(bySource) == 0 {
			delete(t.specs, source)
		}
	} else {
		if bySource == nil {
			bySource = map[string]*framework.QueueSpec{}
			t.specs[source] = bySource
		}
		bySource[name] = spec
	}
	t.specGen++
	if len(t.specs) == 0 {
		// Tenant queues are off again: every job is equal.
		t.queue.SetTenantQueueRanks(nil)
	}
	t.mu.Unlock()
	klog.V(2).InfoS("Tenant queue changed", "source", source, "queue", name, "deleted", spec == nil)
	t.queue.MoveAllToActiveOrBackoffQueue(framework.EventQueueChange, nil, &framework.QueueChange{Queue: name})
}

func sameSpec(a, b *framework.QueueSpec) bool {
	errText := func(err error) string {
		if err == nil {
			return ""
		}
		return err.Error()
	}
	return a.Name == b.Name && a.Parent == b.Parent && a.Weight == b.Weight && a.Borrow == b.Borrow &&
		a.Lend == b.Lend && a.Reclaimable == b.Reclaimable && a.Source == b.Source && a.API == b.API &&
		equalAmounts(a.Guarantee, b.Guarantee) && equalAmounts(a.Limit, b.Limit) && errText(a.Err) == errText(b.Err)
}

func equalAmounts(a, b framework.ResourceAmounts) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// Watch records that tenant queues are watched: from now on a job that
// names a tenant queue no object defines sees the tenant queues (and
// waits for its own; see SnapshotFor).
func (t *Tenants) Watch() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.watched = true
}

// CapacityMayGrow makes the next snapshot recount the capacity: an event
// by which it may have grown happened, and the job it wakes must not be
// judged by the count before.
func (t *Tenants) CapacityMayGrow() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.shares != nil {
		t.shares.at = time.Time{}
	}
}

// Snapshot returns the tenant queues as a scheduling cycle sees them (see
// framework.QueueSnapshot), or nil while no tenant queue exists. The
// shares are recomputed when a tenant queue changed, and otherwise at
// most every Options.Refresh while what the tenant queues ask for or the
// capacity moves; what they use is current. capacity counts what the
// scheduler may use; it is called (only when the count is due) with
// Tenants' lock held, and must not call Tenants. The caller holds the
// lock that guards what capacity reads (the cache's, for reading).
func (t *Tenants) Snapshot(capacity func() resources.Resource) *framework.QueueSnapshot {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.snapshotLocked(false, capacity)
}

// SnapshotFor is Snapshot for a cycle of a job of tenantQueue: once
// tenant queues are watched (Watch), a job that names a tenant queue
// other than the default one sees the tenant queues even while none
// exists (the implicit default queue alone), so that it waits for its
// own.
func (t *Tenants) SnapshotFor(tenantQueue string, capacity func() resources.Resource) *framework.QueueSnapshot {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.snapshotLocked(t.watched && tenantQueue != framework.DefaultQueue, capacity)
}

// snapshotLocked is Snapshot; with always, it returns the tenant queues
// even while none exists. The caller holds mu.
func (t *Tenants) snapshotLocked(always bool, capacity func() resources.Resource) *framework.QueueSnapshot {
	if len(t.specs) == 0 && !always {
		return nil
	}
	now := t.clock.Now()
	s := t.shares
	stale := s == nil || now.Sub(s.at) >= t.refresh
	demandMoved := s != nil && s.demandGen != t.demandGen && now.Sub(s.computed) >= demandRefresh
	if stale || demandMoved || s.specGen != t.specGen || s.askGen != t.askGen {
		var c resources.Resource
		if stale {
			c = capacity()
		} else {
			c = s.capacity
		}
		t.shares = t.computeSharesLocked(now, s, c)
		if !stale {
			t.shares.at = s.at
		}
		s = t.shares
	}
	return t.withUsageLocked(s.snap)
}

// effectiveSpecsLocked returns the tenant queues in force: of every name,
// the spec of the first source in precedence (Sources), plus the implicit
// default queue when no source defines it. The caller holds mu.
func (t *Tenants) effectiveSpecsLocked() []*framework.QueueSpec {
	seen := map[string]bool{}
	var out []*framework.QueueSpec
	for _, src := range Sources {
		bySource := t.specs[src.API]
		names := make([]string, 0, len(bySource))
		for name := range bySource {
			names = append(names, name)
		}
		sort.Strings(names)
		for _, name := range names {
			if !seen[name] {
				seen[name] = true
				out = append(out, bySource[name])
			}
		}
	}
	if !seen[framework.DefaultQueue] {
		out = append(out, &framework.QueueSpec{Name: framework.DefaultQueue, Weight: 1, Borrow: true, Lend: true,
			Reclaimable: true, Source: "the implicit default queue"})
	}
	return out
}

// QueueStatus is one tenant queue as Tenants sees it, for the status
// writer (pkg/tenancy/status) and the metrics: its state (nil for a
// tenant queue left out) or why it is left out.
type QueueStatus struct {
	Name string
	// API is the API group the tenant queue comes from (SourceOwn,
	// SourceVolcano), empty for the implicit default queue.
	API   string
	State *framework.QueueState
	Err   error
}

// Statuses returns every tenant queue a source defines (each name once,
// as in force) and the implicit default queue, sorted by name; nil while
// no tenant queue exists. capacity is as for Snapshot.
func (t *Tenants) Statuses(capacity func() resources.Resource) []QueueStatus {
	t.mu.Lock()
	defer t.mu.Unlock()
	snap := t.snapshotLocked(false, capacity)
	if snap == nil {
		return nil
	}
	var out []QueueStatus
	for _, sp := range t.effectiveSpecsLocked() {
		out = append(out, QueueStatus{Name: sp.Name, API: sp.API, State: snap.Queues[sp.Name], Err: snap.Invalid[sp.Name]})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}
