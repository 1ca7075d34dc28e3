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
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/batch-scheduler/batch-scheduler/examples/allocator/internal/drf"
	"github.com/batch-scheduler/batch-scheduler/pkg/resources"
)

var (
	t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	k  = drf.Key{Framework: "a", Node: "n1"}
)

func cpu(milli int64) resources.Resource { return resources.Resource{MilliCPU: milli} }

func TestBelieved(t *testing.T) {
	type ack struct {
		rv int64
		ok bool
	}
	tests := []struct {
		name     string
		restore  int64 // pseudo-version's cpu; 0: none
		versions []Version
		ack      *ack
		now      time.Time
		want     int64
		unacked  []int64
	}{
		{name: "nothing recorded", want: 0},
		{name: "no acknowledgment: every version",
			versions: []Version{{ResourceVersion: 10, Value: cpu(4000)}, {ResourceVersion: 12, Value: cpu(1000)}},
			want:     4000, unacked: []int64{10, 12}},
		{name: "shrink not yet acknowledged",
			versions: []Version{{ResourceVersion: 10, Value: cpu(4000)}, {ResourceVersion: 12, Value: cpu(1000)}},
			ack:      &ack{10, true}, want: 4000, unacked: []int64{12}},
		{name: "shrink acknowledged",
			versions: []Version{{ResourceVersion: 10, Value: cpu(4000)}, {ResourceVersion: 12, Value: cpu(1000)}},
			ack:      &ack{12, true}, want: 1000},
		{name: "acknowledged between versions: the floor is the one below",
			versions: []Version{{ResourceVersion: 10, Value: cpu(4000)}, {ResourceVersion: 12, Value: cpu(1000)}},
			ack:      &ack{11, true}, want: 4000, unacked: []int64{12}},
		{name: "acknowledged below every version: every version",
			versions: []Version{{ResourceVersion: 10, Value: cpu(4000)}, {ResourceVersion: 12, Value: cpu(1000)}},
			ack:      &ack{3, true}, want: 4000, unacked: []int64{10, 12}},
		{name: "grow not yet acknowledged",
			versions: []Version{{ResourceVersion: 10, Value: cpu(1000)}, {ResourceVersion: 12, Value: cpu(3000)}},
			ack:      &ack{10, true}, want: 3000, unacked: []int64{12}},
		{name: "Revoked (zero) acknowledged",
			versions: []Version{{ResourceVersion: 10, Value: cpu(4000)}, {ResourceVersion: 12}},
			ack:      &ack{12, true}, want: 0},
		{name: "expired versions count zero, after the skew",
			versions: []Version{{ResourceVersion: 10, Value: cpu(4000), ExpiresAt: t0.Add(-ExpirySkew)},
				{ResourceVersion: 12, Value: cpu(1000), ExpiresAt: t0.Add(-ExpirySkew + time.Nanosecond)}},
			now: t0, want: 1000, unacked: []int64{10, 12}},
		{name: "restored: held until a new version is acknowledged",
			restore: 3000, versions: []Version{{ResourceVersion: 100, Value: cpu(1000)}},
			ack: &ack{50, true}, want: 3000, unacked: []int64{100}},
		{name: "restored, new version acknowledged",
			restore: 3000, versions: []Version{{ResourceVersion: 100, Value: cpu(1000)}},
			ack: &ack{100, true}, want: 1000},
		{name: "restored, nothing acknowledged",
			restore: 3000, versions: []Version{{ResourceVersion: 100, Value: cpu(1000)}},
			want: 3000, unacked: []int64{0, 100}},
		{name: "acknowledgment withdrawn: every version remembered",
			versions: []Version{{ResourceVersion: 10, Value: cpu(4000)}, {ResourceVersion: 12, Value: cpu(1000)}},
			ack:      &ack{0, false}, want: 4000, unacked: []int64{10, 12}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := NewLedger()
			if tt.restore > 0 {
				l.Restore(k, cpu(tt.restore))
			}
			for _, v := range tt.versions {
				if !l.Publish(k, v) {
					t.Fatalf("Publish(%d) refused", v.ResourceVersion)
				}
			}
			if tt.ack != nil {
				l.Acknowledge(k, tt.ack.rv, tt.ack.ok)
			}
			now := tt.now
			if now.IsZero() {
				now = t0
			}
			if got := l.Believed(k, now).MilliCPU; got != tt.want {
				t.Errorf("Believed = %dm, want %dm", got, tt.want)
			}
			if got := l.Unacknowledged(k); !reflect.DeepEqual(got, tt.unacked) {
				t.Errorf("Unacknowledged = %v, want %v", got, tt.unacked)
			}
		})
	}
}

func TestLedgerForgetsBelowTheFloor(t *testing.T) {
	l := NewLedger()
	l.Publish(k, Version{ResourceVersion: 10, Value: cpu(4000)})
	l.Publish(k, Version{ResourceVersion: 12, Value: cpu(1000)})
	l.Acknowledge(k, 12, true)
	// The framework acknowledged 12: it will never apply 10 again, so an
	// older acknowledgment arriving later (a stale report) cannot bring 10
	// back.
	l.Acknowledge(k, 10, true)
	if got := l.Believed(k, t0).MilliCPU; got != 1000 {
		t.Errorf("Believed after 10 was forgotten = %dm, want 1000m", got)
	}
	if l.Publish(k, Version{ResourceVersion: 12, Value: cpu(9000)}) {
		t.Errorf("Publish accepted a version not above the latest")
	}
	l.Forget(k)
	if got := l.Believed(k, t0); !got.IsZero() || len(l.Keys()) != 0 {
		t.Errorf("after Forget: Believed %v, keys %v", got, l.Keys())
	}
}

// Past MaxVersions old versions merge; Believed never drops because of
// it, whatever is acknowledged.
func TestLedgerMergeOnlyHoldsMore(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	exact := NewLedger()
	exact.grants[k] = &record{}
	merged := NewLedger()
	var rvs []int64
	for i := range 3 * MaxVersions {
		rv := int64(10 + 2*i)
		rvs = append(rvs, rv)
		v := Version{ResourceVersion: rv, Value: cpu(r.Int64N(8000))}
		exact.grants[k].versions = append(exact.grants[k].versions, v) // unbounded
		merged.Publish(k, v)
	}
	if n := len(merged.grants[k].versions); n > MaxVersions {
		t.Fatalf("%d versions remembered, want at most %d", n, MaxVersions)
	}
	for _, ack := range append(rvs, 0, 1, 11) {
		e, m := *exact.grants[k], *merged.grants[k]
		e.acked, e.hasAck, m.acked, m.hasAck = ack, true, ack, true
		le, lm := &Ledger{grants: map[drf.Key]*record{k: &e}}, &Ledger{grants: map[drf.Key]*record{k: &m}}
		if Exceeds(le.Believed(k, t0), lm.Believed(k, t0)) {
			t.Errorf("acknowledged %d: merged Believed %v below exact %v", ack, lm.Believed(k, t0), le.Believed(k, t0))
		}
	}
}

func TestClamp(t *testing.T) {
	tests := []struct {
		name   string
		alloc  int64
		claims []Claim
		want   []int64
	}{
		{name: "room for everyone", alloc: 4000,
			claims: []Claim{{Framework: "a", Want: cpu(2000)}, {Framework: "b", Want: cpu(2000)}},
			want:   []int64{2000, 2000}},
		{name: "two grows on one node: first by name takes the room", alloc: 4000,
			claims: []Claim{{Framework: "b", Want: cpu(3000)}, {Framework: "a", Want: cpu(3000)}},
			want:   []int64{1000, 3000}},
		{name: "an unacknowledged shrink keeps its room", alloc: 4000,
			claims: []Claim{{Framework: "a", Held: cpu(3000), Want: cpu(1000)}, {Framework: "b", Held: cpu(1000), Want: cpu(3000)}},
			want:   []int64{1000, 1000}},
		{name: "a framework may rise within what it holds", alloc: 4000,
			claims: []Claim{{Framework: "a", Held: cpu(3000), Want: cpu(3000)}, {Framework: "b", Held: cpu(2000), Want: cpu(2000)}},
			want:   []int64{3000, 2000}},
		{name: "held without a new version counts", alloc: 4000,
			claims: []Claim{{Framework: "z", Held: cpu(3500)}, {Framework: "a", Want: cpu(4000)}},
			want:   []int64{0, 500}},
		{name: "over-committed node: nobody rises", alloc: 2000,
			claims: []Claim{{Framework: "a", Held: cpu(2000), Want: cpu(2500)}, {Framework: "b", Held: cpu(1000), Want: cpu(1500)}},
			want:   []int64{2000, 1000}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Clamp(cpu(tt.alloc), tt.claims)
			for i, g := range got {
				if g.MilliCPU != tt.want[i] {
					t.Errorf("claim %d (%s): %dm, want %dm", i, tt.claims[i].Framework, g.MilliCPU, tt.want[i])
				}
			}
		})
	}
}

// Whatever is wanted, held capacity after Clamp stays within allocatable
// when it was before, and no claim is lowered below its Held or Want.
func TestClampProperties(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	some := func(n int64) resources.Resource {
		return resources.Resource{MilliCPU: r.Int64N(n), Memory: r.Int64N(n << 20), Pods: r.Int64N(n / 1000)}
	}
	for i := range 2000 {
		alloc := some(16000)
		left := alloc.Clone()
		var claims []Claim
		for j := range 1 + r.IntN(5) {
			h := zip(some(8000), left, func(x, y int64) int64 { return max(min(x, y), 0) })
			left.Sub(h)
			claims = append(claims, Claim{Framework: fmt.Sprint("f", r.IntN(9), j), Held: h, Want: some(12000)})
		}
		got := Clamp(alloc, claims)
		var sum resources.Resource
		for j, c := range claims {
			sum.Add(Max(c.Held, got[j]))
			if Exceeds(got[j], c.Want) {
				t.Fatalf("input %d: claim %d got %v above its Want %v", i, j, got[j], c.Want)
			}
			if Exceeds(c.Want.Min(c.Held), got[j]) {
				t.Fatalf("input %d: claim %d got %v below min(Want, Held) %v", i, j, got[j], c.Want.Min(c.Held))
			}
		}
		if Exceeds(sum, alloc) {
			t.Fatalf("input %d: held after Clamp sums to %v, above allocatable %v: %+v -> %v", i, sum, alloc, claims, got)
		}
	}
}
