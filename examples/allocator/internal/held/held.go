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

package held

import (
	"sort"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/batch-scheduler/batch-scheduler/examples/allocator/internal/drf"
	"github.com/batch-scheduler/batch-scheduler/pkg/resources"
)

// ExpirySkew is how long past its spec.expiresAt a version still counts:
// frameworks enforce expiry with their own clocks, which may run a little
// behind the allocator's.
const ExpirySkew = time.Second

// MaxVersions bounds the versions remembered per grant. A framework that
// never acknowledges (one without a demand report) would otherwise make
// the list grow with every renewal; past the bound the two oldest
// versions are merged into one that counts as both (see Publish).
const MaxVersions = 32

// Version is one published version of a grant.
type Version struct {
	// ResourceVersion is the version's metadata.resourceVersion; 0 for
	// the pseudo-version Restore makes of a state file's entry.
	ResourceVersion int64
	// Value is what the version lets the framework occupy: the grant's
	// resources when Active, zero when Revoked.
	Value resources.Resource
	// ExpiresAt is the version's spec.expiresAt; zero when it does not
	// expire. From ExpiresAt + ExpirySkew on, the version counts as zero.
	ExpiresAt time.Time
}

// valueAt is v's value at now.
func (v Version) valueAt(now time.Time) resources.Resource {
	if !v.ExpiresAt.IsZero() && !now.Before(v.ExpiresAt.Add(ExpirySkew)) {
		return resources.Resource{}
	}
	return v.Value
}

// record is what the ledger knows of one grant.
type record struct {
	versions []Version // by increasing ResourceVersion, none below the floor
	acked    int64     // valid when hasAck
	hasAck   bool
}

// floor is the index of the latest version at or below the acknowledged
// one, or -1 when there is none (nothing acknowledged, or everything
// remembered is newer).
func (r *record) floor() int {
	if !r.hasAck {
		return -1
	}
	i := sort.Search(len(r.versions), func(i int) bool { return r.versions[i].ResourceVersion > r.acked })
	return i - 1
}

// Ledger is, per grant (one per framework and node), the versions the
// framework may still believe and the one it acknowledged.
type Ledger struct {
	grants map[drf.Key]*record
}

// NewLedger returns an empty Ledger.
func NewLedger() *Ledger { return &Ledger{grants: map[drf.Key]*record{}} }

func (l *Ledger) get(k drf.Key) *record {
	r := l.grants[k]
	if r == nil {
		r = &record{}
		l.grants[k] = r
	}
	return r
}

// Restore records that, before a restart, the framework held h on k's
// node: a pseudo-version with ResourceVersion 0 and value h, below every
// version a new run publishes. So until the framework acknowledges a
// version published after the restart, Believed is at least h. Call it
// before any Publish of k.
func (l *Ledger) Restore(k drf.Key, h resources.Resource) {
	r := l.get(k)
	r.versions = append([]Version{{ResourceVersion: 0, Value: h.Clone()}}, r.versions...)
}

// Publish records a new version of k's grant. Versions must come in
// increasing ResourceVersion (the store's counter); one at or below the
// latest recorded is ignored and Publish returns false. Past MaxVersions
// the two oldest versions are merged into one with the newer one's
// ResourceVersion, the larger value and the later expiry: Believed can
// only grow by it, never shrink.
func (l *Ledger) Publish(k drf.Key, v Version) bool {
	r := l.get(k)
	if n := len(r.versions); n > 0 && v.ResourceVersion <= r.versions[n-1].ResourceVersion {
		return false
	}
	v.Value = v.Value.Clone()
	r.versions = append(r.versions, v)
	for len(r.versions) > MaxVersions {
		a, b := r.versions[0], r.versions[1]
		m := Version{ResourceVersion: b.ResourceVersion, Value: Max(a.Value, b.Value), ExpiresAt: a.ExpiresAt}
		if a.ExpiresAt.IsZero() || b.ExpiresAt.IsZero() {
			m.ExpiresAt = time.Time{}
		} else if b.ExpiresAt.After(a.ExpiresAt) {
			m.ExpiresAt = b.ExpiresAt
		}
		r.versions = append([]Version{m}, r.versions[2:]...)
	}
	return true
}

// Acknowledge sets the resourceVersion of k's grant that the framework's
// latest synced report says it applied; ok false means the report names
// none (or a value that is not a resourceVersion). Versions below the
// floor are forgotten: the framework will not apply them again. It does
// nothing for a grant the Ledger has no record of.
func (l *Ledger) Acknowledge(k drf.Key, rv int64, ok bool) {
	r := l.grants[k]
	if r == nil {
		return
	}
	r.acked, r.hasAck = rv, ok
	if f := r.floor(); f > 0 {
		r.versions = append([]Version(nil), r.versions[f:]...)
	}
}

// Forget drops k's record. The allocator calls it once k's grant is
// deleted, which it does only when Believed is zero.
func (l *Ledger) Forget(k drf.Key) { delete(l.grants, k) }

// Keys returns the grants the Ledger has a record of, by framework then
// node.
func (l *Ledger) Keys() []drf.Key {
	keys := make([]drf.Key, 0, len(l.grants))
	for k := range l.grants {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].Framework != keys[j].Framework {
			return keys[i].Framework < keys[j].Framework
		}
		return keys[i].Node < keys[j].Node
	})
	return keys
}

// Believed is, per resource, the most that any version of k's grant the
// framework may still apply lets it occupy at now: the maximum of the
// values of the floor version and every later one (of every version when
// there is no floor). Zero for a grant without a record.
func (l *Ledger) Believed(k drf.Key, now time.Time) resources.Resource {
	r := l.grants[k]
	if r == nil {
		return resources.Resource{}
	}
	var b resources.Resource
	for _, v := range r.versions[max(r.floor(), 0):] {
		b = Max(b, v.valueAt(now))
	}
	return b
}

// Acknowledged returns the resourceVersion of k's grant the framework's
// latest synced report acknowledged, and whether there is one.
func (l *Ledger) Acknowledged(k drf.Key) (int64, bool) {
	r := l.grants[k]
	if r == nil {
		return 0, false
	}
	return r.acked, r.hasAck
}

// Unacknowledged returns, increasing, the resourceVersions of the
// versions of k's grant newer than the acknowledged one (all remembered
// versions when none is): those the framework has not been seen to apply.
// 0 stands for the pseudo-version of Restore.
func (l *Ledger) Unacknowledged(k drf.Key) []int64 {
	r := l.grants[k]
	if r == nil {
		return nil
	}
	var out []int64
	for _, v := range r.versions {
		if !r.hasAck || v.ResourceVersion > r.acked {
			out = append(out, v.ResourceVersion)
		}
	}
	return out
}

// Claim is one framework's part of a node for Clamp.
type Claim struct {
	// Framework names the framework; Clamp decides in name order.
	Framework string
	// Held is what the framework may occupy on the node before the new
	// version: its held capacity.
	Held resources.Resource
	// Want is the value of the version the allocator means to publish;
	// zero when it publishes none.
	Want resources.Resource
}

// Clamp returns, for each claim in the order given, the value its new
// version may have: Want, lowered (per resource) where it would raise the
// framework's held capacity above what room the others leave. Deciding
// the claims in framework name order, claim c may have up to
//
//	max(c.Held, allocatable − Σ held' of the others)
//
// where held' of a claim already decided is max(Held, its result) and
// held' of one not yet decided is its Held. So, if the claims' Held sum
// to at most allocatable, max(Held, result) sums to at most allocatable
// too: two frameworks growing on one node cannot both take the same room.
// A version never has to go below what its framework already holds.
func Clamp(allocatable resources.Resource, claims []Claim) []resources.Resource {
	order := make([]int, len(claims))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(i, j int) bool { return claims[order[i]].Framework < claims[order[j]].Framework })
	next := make([]resources.Resource, len(claims)) // held'
	for i, c := range claims {
		next[i] = c.Held
	}
	out := make([]resources.Resource, len(claims))
	for _, i := range order {
		others := resources.Resource{}
		for j := range claims {
			if j != i {
				others.Add(next[j])
			}
		}
		room := allocatable.Clone()
		room.Sub(others)
		limit := Max(claims[i].Held, room)
		out[i] = zip(claims[i].Want, limit, func(want, lim int64) int64 { return max(min(want, lim), 0) })
		next[i] = Max(claims[i].Held, out[i])
	}
	return out
}

// Max returns, per resource, the larger amount of a and b (a scalar
// resource only one lists counts as zero in the other).
func Max(a, b resources.Resource) resources.Resource {
	return zip(a, b, func(x, y int64) int64 { return max(x, y) })
}

// Exceeds reports whether a has more of some resource than b (a scalar
// resource b does not list counts as zero there).
func Exceeds(a, b resources.Resource) bool {
	exceeds := false
	zip(a, b, func(x, y int64) int64 {
		exceeds = exceeds || x > y
		return 0
	})
	return exceeds
}

// Positive returns a with every negative amount raised to zero.
func Positive(a resources.Resource) resources.Resource {
	return zip(a, resources.Resource{}, func(x, _ int64) int64 { return max(x, 0) })
}

// zip applies op to a's and b's amounts of every resource either has; a
// scalar resource absent on one side is zero there. Scalar results that
// are zero are left out.
func zip(a, b resources.Resource, op func(x, y int64) int64) resources.Resource {
	r := resources.Resource{
		MilliCPU:         op(a.MilliCPU, b.MilliCPU),
		Memory:           op(a.Memory, b.Memory),
		EphemeralStorage: op(a.EphemeralStorage, b.EphemeralStorage),
		Pods:             op(a.Pods, b.Pods),
	}
	put := func(name v1.ResourceName, q int64) {
		if q == 0 {
			return
		}
		if r.Scalar == nil {
			r.Scalar = map[v1.ResourceName]int64{}
		}
		r.Scalar[name] = q
	}
	for name, x := range a.Scalar {
		put(name, op(x, b.Scalar[name]))
	}
	for name, y := range b.Scalar {
		if _, ok := a.Scalar[name]; !ok {
			put(name, op(0, y))
		}
	}
	return r
}
