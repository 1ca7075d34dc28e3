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

	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
	"k8s.io/apimachinery/pkg/util/sets"
)

// Diagnosis explains why FindFeasibleNodes rejected nodes for a pod.
type Diagnosis struct {
	// NodeToStatus is each rejected node's status, by node name. The
	// status names the plugin that rejected the node.
	NodeToStatus map[string]*framework.Status
	// ReasonCounts counts the rejected nodes per reason. A node whose
	// status has several reasons counts once for each.
	ReasonCounts map[string]int

	// rejecting are the plugins that rejected at least one node.
	rejecting sets.Set[string]

	// named, when not nil, are the only nodes a framework.NodeNamer let
	// the pod take; absent is the status of every other node (not
	// filtered, not in NodeToStatus), absentCount how many of the nodes
	// considered those were.
	named       sets.Set[string]
	absent      *framework.Status
	absentCount int
}

// StatusOf returns the status node was rejected with: its own, or the
// status of a node a framework.NodeNamer left out; nil when it was not
// rejected (or not tried).
func (d Diagnosis) StatusOf(node string) *framework.Status {
	if s := d.NodeToStatus[node]; s != nil {
		return s
	}
	if d.named != nil && !d.named.Has(node) {
		return d.absent
	}
	return nil
}

// leaveOut records that plugin named the only nodes the pod may take,
// which left out count of the nodes considered.
func (d *Diagnosis) leaveOut(plugin string, named sets.Set[string], count int) {
	d.named, d.absentCount = named, count
	d.absent = framework.NewStatus(framework.UnschedulableAndUnresolvable, fmt.Sprintf("node(s) didn't satisfy plugin(s) [%s]", plugin)).WithPlugin(plugin)
	if count > 0 {
		if d.rejecting == nil {
			d.rejecting = sets.New[string]()
		}
		d.rejecting.Insert(plugin)
	}
}

// RejectingPlugins returns the names of the plugins that rejected at least
// one node, sorted: the pod may fit after one of their registered events
// (see Framework.EventsToRegisterFor).
func (d Diagnosis) RejectingPlugins() []string { return sets.List(d.rejecting) }

// add records that node was rejected with s.
func (d *Diagnosis) add(node string, s *framework.Status) {
	if d.NodeToStatus == nil {
		d.NodeToStatus = map[string]*framework.Status{}
	}
	if d.ReasonCounts == nil {
		d.ReasonCounts = map[string]int{}
	}
	if d.rejecting == nil {
		d.rejecting = sets.New[string]()
	}
	d.NodeToStatus[node] = s
	reasons := s.Reasons()
	if len(reasons) == 0 {
		// A bare rejection still counts, under its code.
		reasons = []string{s.Code().String()}
	}
	for _, r := range reasons {
		d.ReasonCounts[r]++
	}
	if p := s.Plugin(); p != "" && !d.rejecting.Has(p) {
		d.rejecting.Insert(p)
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
	type reasonCount struct {
		reason string
		count  int
	}
	counts := make([]reasonCount, 0, len(d.ReasonCounts)+1)
	for r, c := range d.ReasonCounts {
		counts = append(counts, reasonCount{r, c})
	}
	if d.absentCount > 0 {
		counts = append(counts, reasonCount{d.absent.Message(), d.absentCount})
	}
	slices.SortFunc(counts, func(a, b reasonCount) int {
		if c := cmp.Compare(b.count, a.count); c != 0 {
			return c
		}
		return strings.Compare(a.reason, b.reason)
	})
	available := max(numNodes-len(d.NodeToStatus)-d.absentCount, 0)
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
