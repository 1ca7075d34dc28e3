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

package runtime

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
)

// Diagnosis explains why FindFeasibleNodes rejected nodes for a pod.
//
// A pod that fits nowhere is rejected by every node of its window (5,000
// on a large cluster), and such pods are retried often (a preemptor,
// every time a victim goes), so recording a rejection costs no hashing:
// the rejections are kept in the order tried, the reasons and plugins
// in short lists, and the index by node name is built only when a
// caller asks for one node's status (StatusOf).
type Diagnosis struct {
	// rejected are the rejected nodes with their statuses, in the order
	// tried. The status names the plugin that rejected the node.
	rejected []rejection
	// index maps rejected's nodes to their statuses, built on the first
	// StatusOf; copies of the Diagnosis share it.
	index *rejectionIndex
	// reasons counts the rejected nodes per reason; a node whose status
	// has several reasons counts once for each. Few reasons are distinct,
	// so a list searched in order beats a map; reasonAt indexes it once
	// it grows past maxListedReasons.
	reasons  []reasonCount
	reasonAt map[string]int
	// rejecting are the plugins that rejected at least one node.
	rejecting []string
	// unresolvable counts the rejections UnschedulableAndUnresolvable.
	unresolvable int

	// named, when not nil, are the only nodes a framework.NodeNamer let
	// the pod take; absent is the status of every other node (not
	// filtered, not among rejected), absentCount how many of the nodes
	// considered those were.
	named       sets.Set[string]
	absent      *framework.Status
	absentCount int
}

type rejection struct {
	node   string
	status *framework.Status
}

type rejectionIndex struct {
	once   sync.Once
	byNode map[string]*framework.Status
}

type reasonCount struct {
	reason string
	count  int
}

// maxListedReasons is how many distinct reasons are searched in order
// before they are indexed.
const maxListedReasons = 8

// StatusOf returns the status node was rejected with: its own, or the
// status of a node a framework.NodeNamer left out; nil when it was not
// rejected (or not tried). It is safe to call from several goroutines.
func (d Diagnosis) StatusOf(node string) *framework.Status {
	if d.index != nil {
		d.index.once.Do(func() {
			d.index.byNode = make(map[string]*framework.Status, len(d.rejected))
			for _, r := range d.rejected {
				d.index.byNode[r.node] = r.status
			}
		})
		if s := d.index.byNode[node]; s != nil {
			return s
		}
	}
	if d.named != nil && !d.named.Has(node) {
		return d.absent
	}
	return nil
}

// Unresolvable reports whether node rejected the pod as
// UnschedulableAndUnresolvable (a node selector, say), or was left out
// by a framework.NodeNamer: evicting pods cannot make it fit there.
// Preemption asks it of every candidate node; when no rejection was
// unresolvable, it answers without indexing the rejections.
func (d Diagnosis) Unresolvable(node string) bool {
	if d.named != nil && !d.named.Has(node) {
		return true
	}
	if d.unresolvable == 0 {
		return false
	}
	st := d.StatusOf(node)
	return st != nil && st.Code() == framework.UnschedulableAndUnresolvable
}

// Rejected returns how many of the nodes tried rejected the pod (the
// nodes a framework.NodeNamer left out not counted).
func (d Diagnosis) Rejected() int { return len(d.rejected) }

// ReasonCounts returns how many rejected nodes gave each reason; a node
// whose status has several reasons counts once for each. Nil when none
// was rejected.
func (d Diagnosis) ReasonCounts() map[string]int {
	if len(d.reasons) == 0 {
		return nil
	}
	out := make(map[string]int, len(d.reasons))
	for _, rc := range d.reasons {
		out[rc.reason] = rc.count
	}
	return out
}

// leaveOut records that plugin named the only nodes the pod may take,
// which left out count of the nodes considered.
func (d *Diagnosis) leaveOut(plugin string, named sets.Set[string], count int) {
	d.named, d.absentCount = named, count
	d.absent = framework.NewStatus(framework.UnschedulableAndUnresolvable, fmt.Sprintf("node(s) didn't satisfy plugin(s) [%s]", plugin)).WithPlugin(plugin)
	if count > 0 {
		d.notePlugin(plugin)
	}
}

// RejectingPlugins returns the names of the plugins that rejected at least
// one node, sorted: the pod may fit after one of their registered events
// (see Framework.EventsToRegisterFor).
func (d Diagnosis) RejectingPlugins() []string {
	out := slices.Clone(d.rejecting)
	slices.Sort(out)
	return out
}

// grow makes room for n rejections.
func (d *Diagnosis) grow(n int) {
	d.rejected = slices.Grow(d.rejected, n)
}

// add records that node was rejected with s.
func (d *Diagnosis) add(node string, s *framework.Status) {
	if d.index == nil {
		d.index = &rejectionIndex{}
	}
	d.rejected = append(d.rejected, rejection{node: node, status: s})
	if s.Code() == framework.UnschedulableAndUnresolvable {
		d.unresolvable++
	}
	reasons := s.Reasons()
	if len(reasons) == 0 {
		// A bare rejection still counts, under its code.
		d.countReason(s.Code().String())
	}
	for _, r := range reasons {
		d.countReason(r)
	}
	if p := s.Plugin(); p != "" {
		d.notePlugin(p)
	}
}

// countReason counts one more node rejected for reason.
func (d *Diagnosis) countReason(reason string) {
	if d.reasonAt != nil {
		if i, ok := d.reasonAt[reason]; ok {
			d.reasons[i].count++
			return
		}
	} else {
		for i := range d.reasons {
			if d.reasons[i].reason == reason {
				d.reasons[i].count++
				return
			}
		}
	}
	d.reasons = append(d.reasons, reasonCount{reason: reason, count: 1})
	switch {
	case d.reasonAt != nil:
		d.reasonAt[reason] = len(d.reasons) - 1
	case len(d.reasons) > maxListedReasons:
		d.reasonAt = make(map[string]int, 2*len(d.reasons))
		for i, rc := range d.reasons {
			d.reasonAt[rc.reason] = i
		}
	}
}

// notePlugin records that plugin rejected a node. Few plugins reject.
func (d *Diagnosis) notePlugin(plugin string) {
	if !slices.Contains(d.rejecting, plugin) {
		d.rejecting = append(d.rejecting, plugin)
	}
}

// Message renders the diagnosis as kube-scheduler does for a pod that
// fits nowhere, given how many nodes were considered:
//
//	0/5 nodes are available: 3 Insufficient cpu, 2 node(s) had untolerated taint(s).
//
// Reasons are sorted by count, most frequent first, then by text. The
// number of available nodes is numNodes less the rejected ones.
func (d Diagnosis) Message(numNodes int) string {
	counts := make([]reasonCount, 0, len(d.reasons)+1)
	counts = append(counts, d.reasons...)
	if d.absentCount > 0 {
		counts = append(counts, reasonCount{d.absent.Message(), d.absentCount})
	}
	slices.SortFunc(counts, func(a, b reasonCount) int {
		if c := cmp.Compare(b.count, a.count); c != 0 {
			return c
		}
		return strings.Compare(a.reason, b.reason)
	})
	available := max(numNodes-len(d.rejected)-d.absentCount, 0)
	msg := fmt.Sprintf("%d/%d nodes are available", available, numNodes)
	if len(counts) == 0 {
		return msg + "."
	}
	parts := make([]string, len(counts))
	for i, rc := range counts {
		parts[i] = fmt.Sprintf("%d %s", rc.count, rc.reason)
	}
	return msg + ": " + strings.Join(parts, ", ") + "."
}
