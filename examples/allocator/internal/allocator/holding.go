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

package allocator

import (
	"fmt"
	"sort"
	"strconv"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/batch-scheduler/batch-scheduler/examples/allocator/internal/drf"
	"github.com/batch-scheduler/batch-scheduler/examples/allocator/internal/frameworks"
	"github.com/batch-scheduler/batch-scheduler/examples/allocator/internal/held"
	"github.com/batch-scheduler/batch-scheduler/pkg/demand"
	"github.com/batch-scheduler/batch-scheduler/pkg/resources"
)

// This file is the allocator's side of the acknowledgment protocol
// (pkg/demand.Report's Synced and ObservedGrants): what each framework
// acknowledged, what it holds, and keeping the held capacity in the
// state file across restarts. All of it runs on the round goroutine.

// restore turns the state file's held entries into pseudo-versions of the
// ledger, counts them as what the file holds, and makes them the
// carry-over of the first round, so that frameworks find again the
// capacity they held before the restart.
func (a *Allocator) restore(entries []frameworks.Held) error {
	for _, h := range entries {
		f, n, err := frameworks.ParseGrantName(h.Grant)
		if err != nil {
			return fmt.Errorf("held: %w", err)
		}
		l, err := h.List()
		if err != nil {
			return fmt.Errorf("held: %w", err)
		}
		v := resources.FromList(l)
		if v.IsZero() {
			continue
		}
		k := drf.Key{Framework: f, Node: n}
		a.ledger.Restore(k, v)
		a.persisted[k] = v
		a.prev[k] = drf.Grant{Resources: v}
	}
	if len(entries) > 0 {
		klog.InfoS("Held capacity restored from the state file; it goes to no other framework until its holder acknowledges a new grant version",
			"grants", len(a.persisted))
	}
	return nil
}

// acknowledge applies, to every grant of a registered framework, the
// acknowledgment of the framework's latest synced report. A framework
// without one acknowledges nothing; one whose report this round could not
// be read, or was not synced, keeps the acknowledgments of its last
// synced report. An observedGrants value that is not a resourceVersion is
// logged and counts as absent.
func (a *Allocator) acknowledge(fws map[string]*framework) {
	for _, k := range a.ledger.Keys() {
		if fws[k.Framework] == nil {
			continue // no longer registered: nothing new can be learned
		}
		r := a.synced[k.Framework]
		if r == nil {
			continue
		}
		name := grantName(k)
		s, ok := r.ObservedGrants[name]
		if !ok {
			a.ledger.Acknowledge(k, 0, false)
			continue
		}
		rv, err := strconv.ParseInt(s, 10, 64)
		if err != nil || rv < 0 {
			klog.ErrorS(err, "A demand report acknowledges a grant with a resourceVersion that is not one; treating the grant as not acknowledged",
				"framework", k.Framework, "grant", name, "resourceVersion", s)
			a.metrics.badAcks.WithLabelValues(k.Framework).Inc()
			a.ledger.Acknowledge(k, 0, false)
			continue
		}
		a.ledger.Acknowledge(k, rv, true)
	}
}

// usage is, per framework and node, what the framework uses as far as
// the allocator knows: its latest synced report's Used, raised to what a
// later report that is not synced says (such a report may add to what is
// known, never lower it).
func (a *Allocator) usage() map[drf.Key]resources.Resource {
	out := map[drf.Key]resources.Resource{}
	add := func(f string, r *demand.Report) {
		for node, l := range r.Used {
			k := drf.Key{Framework: f, Node: node}
			out[k] = held.Max(out[k], resources.FromList(l))
		}
	}
	for f, r := range a.synced {
		add(f, r)
	}
	for f, r := range a.reports {
		if !r.Synced {
			add(f, r)
		}
	}
	return out
}

// holdings is held(f, n) for every framework and node where it is not
// zero: per resource, the larger of what the versions of its grant it
// may still apply allow (the ledger's Believed) and what it uses.
func (a *Allocator) holdings(now time.Time, used map[drf.Key]resources.Resource) map[drf.Key]resources.Resource {
	out := map[drf.Key]resources.Resource{}
	for _, k := range a.ledger.Keys() {
		if h := held.Max(a.ledger.Believed(k, now), used[k]); !h.IsZero() {
			out[k] = h
		}
	}
	for k, u := range used {
		if _, ok := out[k]; !ok && !u.IsZero() {
			out[k] = u
		}
	}
	return out
}

// drfReport is the report drf.Allocate gets for framework f: the demand
// of its latest report, with Used as usage knows it, and Synced when the
// framework has ever sent a synced report (its usage is known). nil when
// f has no report.
func (a *Allocator) drfReport(f string, used map[drf.Key]resources.Resource) *demand.Report {
	latest := a.reports[f]
	if latest == nil {
		return nil
	}
	r := *latest
	r.Synced = a.synced[f] != nil
	r.Used = map[string]v1.ResourceList{}
	for k, u := range used {
		if k.Framework == f {
			r.Used[k.Node] = u.ToList()
		}
	}
	return &r
}

// saveHeld writes the state file with held as the held section before
// grants grow into it. On error the file, and persisted, keep what they
// had.
func (a *Allocator) saveHeld(h map[drf.Key]resources.Resource) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	old := a.persisted
	a.persisted = h
	if err := a.saveLocked(); err != nil {
		a.persisted = old
		a.metrics.stateSaveErrors.Inc()
		return err
	}
	return nil
}

// persistAfter writes what frameworks hold after a round's publishing to
// the state file, if that differs from what the file has (usually lower:
// acknowledged shrinks, usage gone). A failure is logged; the file keeps
// its older values, which the next round writes over.
func (a *Allocator) persistAfter(h map[drf.Key]resources.Resource) {
	if a.opts.StateFile == "" {
		return
	}
	a.mu.Lock()
	same := sameHoldings(a.persisted, h)
	a.mu.Unlock()
	if same {
		return
	}
	if err := a.saveHeld(h); err != nil {
		klog.ErrorS(err, "Saving what frameworks hold to the state file failed; it keeps older values", "stateFile", a.opts.StateFile)
	}
}

// sameHoldings reports whether a and b hold the same amounts.
func sameHoldings(a, b map[drf.Key]resources.Resource) bool {
	if len(a) != len(b) {
		return false
	}
	for k, x := range a {
		y, ok := b[k]
		if !ok || held.Exceeds(x, y) || held.Exceeds(y, x) {
			return false
		}
	}
	return true
}

// heldEntries is the state file's held section for h, sorted by grant.
func heldEntries(h map[drf.Key]resources.Resource) []frameworks.Held {
	out := make([]frameworks.Held, 0, len(h))
	for k, v := range h {
		if !v.IsZero() {
			out = append(out, frameworks.HeldOf(grantName(k), v.ToList()))
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Grant < out[j].Grant })
	return out
}
