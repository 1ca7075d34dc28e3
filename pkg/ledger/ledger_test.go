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

package ledger

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/batch-scheduler/batch-scheduler/pkg/apis/batchscheduler/v1alpha1"
	"github.com/batch-scheduler/batch-scheduler/pkg/ledger/ledgertest"
	"github.com/batch-scheduler/batch-scheduler/pkg/resources"
)

func cpuEntry(placer, name string, milli int64) v1alpha1.LedgerEntry {
	return v1alpha1.LedgerEntry{Placer: placer, Kind: "vm", Name: name,
		Resources: v1.ResourceList{v1.ResourceCPU: *resource.NewMilliQuantity(milli, resource.DecimalSI)}}
}

// place is the change of a placer that adds e if it fits allocatable.
func place(allocatable int64, e v1alpha1.LedgerEntry) Change {
	return func(l *v1alpha1.NodeLedger) error {
		if short := Short(resources.Resource{MilliCPU: allocatable}, Usage(l), resources.FromList(e.Resources)); len(short) > 0 {
			return fmt.Errorf("%s does not fit: %v", e.Name, short)
		}
		Put(l, e)
		return nil
	}
}

// Two placers, each with its own Ledgers, commit as fast as they can to
// one node of 8 CPUs: whatever the interleaving, the ledger never holds
// more than fits, and every commit that returned nil is in it.
func TestRacingPlacersNeverOvercommit(t *testing.T) {
	c := ledgertest.NewClient()
	placers := []*Ledgers{New(c), New(c)}
	const alloc = 8000
	var wg sync.WaitGroup
	var mu sync.Mutex
	committed := map[string]bool{}
	for p, l := range placers {
		for g := range 4 {
			wg.Go(func() {
				rng := rand.New(rand.NewPCG(uint64(p), uint64(g)))
				for i := range 25 {
					name := fmt.Sprintf("p%d-g%d-%d", p, g, i)
					e := cpuEntry(fmt.Sprintf("placer-%d", p), name, 500+rng.Int64N(3)*500)
					err := l.Commit(t.Context(), "n1", Create, place(alloc, e))
					if err == nil {
						mu.Lock()
						committed[name] = true
						mu.Unlock()
					} else if errors.Is(err, ErrConflicts) || apierrors.IsConflict(err) {
						t.Errorf("commit %s: %v", name, err)
					}
					if rng.IntN(3) == 0 {
						// Release something of ours.
						_ = l.Commit(t.Context(), "n1", Existing, func(l *v1alpha1.NodeLedger) error {
							RemoveIf(l, func(e *v1alpha1.LedgerEntry) bool { return e.Placer == fmt.Sprintf("placer-%d", p) && rng.IntN(2) == 0 })
							return nil
						})
					}
				}
			})
		}
	}
	wg.Wait()
	final, err := c.Get(t.Context(), "n1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if u := Usage(final); u.MilliCPU > alloc {
		t.Errorf("the ledger holds %dm cpu, above the node's %dm", u.MilliCPU, alloc)
	}
	if len(committed) == 0 {
		t.Error("nothing was committed")
	}
	t.Logf("%d commits succeeded; %d writes, %d conflicts", len(committed), c.Writes.Load(), c.Conflicts.Load())
}

// A conflicting write between the read and the write makes the change run
// again on the new ledger, where it may no longer fit.
func TestConflictRunsTheChangeAgain(t *testing.T) {
	c := ledgertest.NewClient()
	l := New(c)
	if err := l.Commit(t.Context(), "n1", Create, place(4000, cpuEntry("a", "first", 2000))); err != nil {
		t.Fatal(err)
	}
	other := New(c)
	var fired atomic.Bool
	c.BeforeWrite = func(*v1alpha1.NodeLedger) {
		if fired.CompareAndSwap(false, true) {
			if err := other.Commit(context.Background(), "n1", Existing, place(4000, cpuEntry("b", "sneaky", 2000))); err != nil {
				t.Errorf("the competing commit: %v", err)
			}
		}
	}
	calls := 0
	err := l.Commit(t.Context(), "n1", Existing, func(nl *v1alpha1.NodeLedger) error {
		calls++
		return place(4000, cpuEntry("a", "second", 2000))(nl)
	})
	if err == nil || calls != 2 {
		t.Fatalf("Commit = %v after %d runs of the change; want it refused on its second run (the competing VM took the room)", err, calls)
	}
	final, _ := c.Get(t.Context(), "n1", metav1.GetOptions{})
	if u := Usage(final); u.MilliCPU != 4000 || Find(final, Key{Kind: "vm", Name: "sneaky"}) == nil {
		t.Errorf("final ledger %+v: want first and sneaky, 4 cpu", final.Spec.Entries)
	}
}

// Concurrent commits to one node are written together: a burst costs far
// fewer writes than commits.
func TestGroupCommit(t *testing.T) {
	c := ledgertest.NewClient()
	l := New(c)
	if err := l.Commit(t.Context(), "n1", Create, func(*v1alpha1.NodeLedger) error { return nil }); err != nil {
		t.Fatal(err)
	}
	release := make(chan struct{})
	var blocked sync.Once
	var firstBatch atomic.Int64
	c.BeforeWrite = func(nl *v1alpha1.NodeLedger) {
		blocked.Do(func() {
			firstBatch.Store(int64(len(nl.Spec.Entries)))
			<-release
		})
	}
	var wg sync.WaitGroup
	const n = 50
	errs := make(chan error, n)
	for i := range n {
		wg.Go(func() {
			errs <- l.Commit(t.Context(), "n1", Existing, place(1_000_000, cpuEntry("a", fmt.Sprintf("e%d", i), 100)))
		})
	}
	// The first write waits until every other commit is queued behind it.
	for {
		l.mu.Lock()
		queued := len(l.nodes["n1"].queue)
		l.mu.Unlock()
		if int64(queued)+firstBatch.Load() >= n {
			break
		}
		runtime.Gosched()
	}
	close(release)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	final, _ := c.Get(t.Context(), "n1", metav1.GetOptions{})
	if len(final.Spec.Entries) != n {
		t.Errorf("%d entries, want %d", len(final.Spec.Entries), n)
	}
	if w := c.Writes.Load(); w > 3 {
		t.Errorf("%d writes for %d concurrent commits; want them batched (at most 3)", w, n)
	}
}

func TestCommitModesAndRejections(t *testing.T) {
	c := ledgertest.NewClient()
	l := New(c)
	if err := l.Commit(t.Context(), "n1", Existing, func(*v1alpha1.NodeLedger) error { return nil }); !errors.Is(err, ErrNoLedger) {
		t.Errorf("Existing on a node without a ledger = %v, want ErrNoLedger", err)
	}
	if _, err := c.Get(t.Context(), "n1", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the ledger was created by a commit in mode Existing: %v", err)
	}
	boom := errors.New("boom")
	if err := l.Commit(t.Context(), "n1", Create, func(nl *v1alpha1.NodeLedger) error {
		Join(nl, "x", nl.CreationTimestamp.Time)
		return boom
	}); !errors.Is(err, boom) {
		t.Errorf("a rejecting change = %v, want its error", err)
	}
	if _, err := c.Get(t.Context(), "n1", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("a rejected change created the ledger: %v", err)
	}
	// A change that makes the ledger invalid is refused, not written.
	if err := l.Commit(t.Context(), "n1", Create, func(nl *v1alpha1.NodeLedger) error {
		nl.Spec.Entries = append(nl.Spec.Entries, v1alpha1.LedgerEntry{Kind: "vm", Name: "no-placer"})
		return nil
	}); err == nil {
		t.Error("an invalid ledger was written")
	}
	// A garbage ledger in the API server is not committed to.
	c.Put(&v1alpha1.NodeLedger{ObjectMeta: metav1.ObjectMeta{Name: "n2"},
		Spec: v1alpha1.NodeLedgerSpec{Entries: []v1alpha1.LedgerEntry{cpuEntry("a", "dup", 1), cpuEntry("a", "dup", 1)}}})
	if err := l.Commit(t.Context(), "n2", Existing, place(8000, cpuEntry("a", "x", 1))); err == nil {
		t.Error("committed to an invalid ledger")
	}
}

func TestMaxAttempts(t *testing.T) {
	c := ledgertest.NewClient()
	l := New(c, WithMaxAttempts(3))
	if err := l.Commit(t.Context(), "n1", Create, func(*v1alpha1.NodeLedger) error { return nil }); err != nil {
		t.Fatal(err)
	}
	// Another placer writes before each of this one's writes.
	c.BeforeWrite = func(*v1alpha1.NodeLedger) { c.Bump("n1") }
	err := l.Commit(t.Context(), "n1", Existing, place(1_000_000, cpuEntry("a", "a", 1)))
	if !errors.Is(err, ErrConflicts) {
		t.Errorf("Commit through endless conflicts = %v, want ErrConflicts", err)
	}
	if c.Writes.Load() != 4 {
		t.Errorf("%d writes, want 1 + 3 attempts", c.Writes.Load())
	}
}

// A placer refused on a stale copy calls Forget and commits again: the
// second commit reads the ledger anew even when the Forget came while the
// first commit's batch was still being recorded (the refusal is answered
// before the drain records what it saw, and it must not record the copy
// the placer just learned is stale).
func TestForgetDuringTheWriteIsKept(t *testing.T) {
	c := ledgertest.NewClient()
	l := New(c)
	if err := l.Commit(t.Context(), "n1", Create, place(4000, cpuEntry("a", "first", 1000))); err != nil {
		t.Fatal(err)
	}
	// Another placer adds an entry that l does not see.
	if err := New(c).Commit(t.Context(), "n1", Existing, place(4000, cpuEntry("b", "other", 1000))); err != nil {
		t.Fatal(err)
	}
	stale := errors.New("refused on what l remembers")
	err := l.Commit(t.Context(), "n1", Existing, func(nl *v1alpha1.NodeLedger) error {
		// The placer learns the ledger changed while its batch is
		// being written.
		l.Forget("n1")
		return stale
	})
	if !errors.Is(err, stale) {
		t.Fatalf("first commit = %v, want the change's refusal", err)
	}
	var saw []string
	err = l.Commit(t.Context(), "n1", Existing, func(nl *v1alpha1.NodeLedger) error {
		for _, e := range nl.Spec.Entries {
			saw = append(saw, e.Name)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(saw) != 2 {
		t.Errorf("the commit after Forget saw entries %v, want both (read anew)", saw)
	}
}
