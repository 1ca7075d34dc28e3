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
	"sort"
	"strconv"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/batch-scheduler/batch-scheduler/examples/allocator/internal/drf"
	"github.com/batch-scheduler/batch-scheduler/examples/allocator/internal/held"
	"github.com/batch-scheduler/batch-scheduler/pkg/resources"
)

// FrameworkStatus is what GET /allocation says of a framework: its
// weight, weighted dominant share and whether it is hungry, its grants by
// node as published, what more it is meant to get once others release it,
// what it holds and why, its revoked nodes (with the message), what its
// last report said, and the error of the last read if it failed.
type FrameworkStatus struct {
	Weight        float64 `json:"weight"`
	DominantShare float64 `json:"dominantShare"`
	Hungry        bool    `json:"hungry"`
	// Granted is the sum of Grants.
	Granted v1.ResourceList `json:"granted"`
	// Grants are the published Active grants, by node.
	Grants map[string]v1.ResourceList `json:"grants"`
	// Deferred is, by node, how much more the allocator means to grant
	// than it could publish: room other frameworks still hold (see their
	// Held), or a state file that could not be saved.
	Deferred map[string]v1.ResourceList `json:"deferred,omitempty"`
	// Held is, by node, what the framework may occupy there and why.
	Held    map[string]HeldStatus      `json:"held,omitempty"`
	Revoked map[string]string          `json:"revoked,omitempty"` // node -> message
	Unmet   v1.ResourceList            `json:"unmet,omitempty"`
	Used    map[string]v1.ResourceList `json:"used,omitempty"`
	// Synced is whether the last report read was synced; LastSyncedReport
	// is the time of the last synced one, which acknowledgments and usage
	// come from.
	Synced           bool         `json:"synced"`
	LastSyncedReport *metav1.Time `json:"lastSyncedReport,omitempty"`
	LastReport       *metav1.Time `json:"lastReport,omitempty"`
	LastError        string       `json:"lastError,omitempty"`
	// Unregistered marks a framework no longer registered that still
	// holds capacity: it keeps it until it is registered again and
	// acknowledges its grants' zero versions.
	Unregistered bool `json:"unregistered,omitempty"`
}

// HeldStatus is what a framework holds on a node: Held is, per resource,
// the larger of Believed (the most any version of its grant it may still
// apply gives) and Used (what its synced reports say it uses).
// Acknowledged is the resourceVersion of the grant its latest synced
// report applied; Unacknowledged lists the versions published since that
// it has not acknowledged ("0" is the value restored from the state
// file). Capacity held by one framework goes to no other.
type HeldStatus struct {
	Held           v1.ResourceList `json:"held"`
	Believed       v1.ResourceList `json:"believed,omitempty"`
	Used           v1.ResourceList `json:"used,omitempty"`
	Acknowledged   string          `json:"acknowledged,omitempty"`
	Unacknowledged []string        `json:"unacknowledged,omitempty"`
}

// Status is the body of GET /allocation: the last round's number and
// time, each node's allocatable and each framework's status.
type Status struct {
	Round      int64                      `json:"round"`
	Time       *metav1.Time               `json:"time,omitempty"`
	Nodes      map[string]v1.ResourceList `json:"nodes"` // allocatable
	Frameworks map[string]FrameworkStatus `json:"frameworks"`
}

// record updates the metrics and the status served at /allocation from
// the round's input, drf's result, and what was published and is held.
func (a *Allocator) record(in drf.Input, res drf.Result, revoked map[drf.Key]string, errs map[string]error,
	used, holding map[drf.Key]resources.Resource) {
	a.metrics.rounds.Inc()
	a.metrics.granted.Reset()
	a.metrics.held.Reset()
	a.metrics.heldUnacked.Reset()
	st := Status{
		Time:       &metav1.Time{Time: in.Now},
		Nodes:      map[string]v1.ResourceList{},
		Frameworks: map[string]FrameworkStatus{},
	}
	for _, n := range in.Nodes {
		st.Nodes[n.Name] = n.Allocatable.ToList()
	}
	newStatus := func() FrameworkStatus {
		return FrameworkStatus{Grants: map[string]v1.ResourceList{}}
	}
	for _, f := range in.Frameworks {
		fr := res.Frameworks[f.Name]
		fs := newStatus()
		fs.Weight, fs.DominantShare, fs.Hungry = f.Weight, fr.DominantShare, fr.Hungry
		if r := a.reports[f.Name]; r != nil && errs[f.Name] == nil {
			fs.Synced = r.Synced
		}
		if r := in.Reports[f.Name]; r != nil {
			fs.Unmet, fs.Used = r.Unmet, a.reports[f.Name].Used
			t := a.reports[f.Name].Time
			fs.LastReport = &t
		}
		if r := a.synced[f.Name]; r != nil {
			t := r.Time
			fs.LastSyncedReport = &t
		}
		if err := errs[f.Name]; err != nil {
			fs.LastError = err.Error()
		}
		st.Frameworks[f.Name] = fs
	}
	// What is published, and what drf wanted beyond it.
	granted := map[string]resources.Resource{}
	for _, g := range a.published {
		k, v := keyOf(g), valueOf(g)
		fs, ok := st.Frameworks[k.Framework]
		if !ok || v.IsZero() {
			continue
		}
		fs.Grants[k.Node] = v.ToList()
		sum := granted[k.Framework]
		sum.Add(v)
		granted[k.Framework] = sum
	}
	for k, g := range res.Grants {
		fs, ok := st.Frameworks[k.Framework]
		if !ok {
			continue
		}
		var pub resources.Resource
		if p := a.published[grantName(k)]; p != nil {
			pub = valueOf(p)
		}
		if d := g.Resources.Clone(); held.Exceeds(d, pub) {
			d.Sub(pub)
			if fs.Deferred == nil {
				fs.Deferred = map[string]v1.ResourceList{}
			}
			fs.Deferred[k.Node] = held.Positive(d).ToList()
			st.Frameworks[k.Framework] = fs
		}
	}
	// What is held, and why.
	keys := make([]drf.Key, 0, len(holding))
	for k := range holding {
		keys = append(keys, k)
	}
	for _, k := range a.ledger.Keys() {
		if _, ok := holding[k]; !ok && len(a.ledger.Unacknowledged(k)) > 0 {
			keys = append(keys, k)
		}
	}
	sort.Slice(keys, func(i, j int) bool { return grantName(keys[i]) < grantName(keys[j]) })
	heldSum := map[string]resources.Resource{}
	unacked := map[string]int{}
	for _, k := range keys {
		fs, ok := st.Frameworks[k.Framework]
		if !ok {
			fs = newStatus()
			fs.Unregistered = true
		}
		hs := HeldStatus{
			Held:     holding[k].ToList(),
			Believed: a.ledger.Believed(k, in.Now).ToList(),
			Used:     used[k].ToList(),
		}
		if rv, ok := a.ledger.Acknowledged(k); ok {
			hs.Acknowledged = strconv.FormatInt(rv, 10)
		}
		for _, rv := range a.ledger.Unacknowledged(k) {
			hs.Unacknowledged = append(hs.Unacknowledged, strconv.FormatInt(rv, 10))
		}
		if len(hs.Unacknowledged) > 0 {
			unacked[k.Framework]++
		}
		if fs.Held == nil {
			fs.Held = map[string]HeldStatus{}
		}
		fs.Held[k.Node] = hs
		st.Frameworks[k.Framework] = fs
		sum := heldSum[k.Framework]
		sum.Add(holding[k])
		heldSum[k.Framework] = sum
	}
	for name, fs := range st.Frameworks {
		fs.Granted = granted[name].ToList()
		st.Frameworks[name] = fs
		for r, q := range fs.Granted {
			a.metrics.granted.WithLabelValues(name, string(r)).Set(q.AsApproximateFloat64())
		}
		for r, q := range heldSum[name].ToList() {
			a.metrics.held.WithLabelValues(name, string(r)).Set(q.AsApproximateFloat64())
		}
		a.metrics.heldUnacked.WithLabelValues(name).Set(float64(unacked[name]))
	}
	for k, msg := range revoked {
		fs, ok := st.Frameworks[k.Framework]
		if !ok {
			continue
		}
		if fs.Revoked == nil {
			fs.Revoked = map[string]string{}
		}
		fs.Revoked[k.Node] = msg
		st.Frameworks[k.Framework] = fs
	}
	a.mu.Lock()
	st.Round = a.status.Round + 1
	a.status = st
	a.mu.Unlock()
}
