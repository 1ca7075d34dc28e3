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
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/klog/v2"

	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
)

// FilterScope is what the filter path of one pod looks at.
type FilterScope struct {
	// All are the snapshot's nodes: the per-pod PreFilter plugins count
	// what they look at (a spread over zones, say) over all of them,
	// whichever nodes the pod may take.
	All []*framework.NodeInfo
	// Nodes are the nodes the pod may take; nil for All.
	Nodes []*framework.NodeInfo
	// First, when not nil, is a part of Nodes the Filter plugins try
	// first (the scheduling cycle's window of a large cluster); Nodes are
	// tried only when no node of First fits, so that a pod that fits
	// somewhere is placed and one that fits nowhere gets every node's
	// diagnosis.
	First []*framework.NodeInfo
	// Lookup, when not nil, finds a node of All by name: with it, a pod
	// whose nodes a framework.NodeNamer names (and Nodes nil) looks up
	// those nodes instead of going over All.
	Lookup func(name string) (*framework.NodeInfo, bool)
}

// PodFilterResult is what the filter path found for one pod.
type PodFilterResult struct {
	// PreFilter is the per-pod PreFilter plugins' rejection, naming its
	// plugin; nil when they passed (or none is enabled). After a
	// rejection no Filter plugin ran: Feasible and Diagnosis are empty.
	PreFilter *framework.Status
	// Feasible are the nodes that passed the Filter plugins, in order.
	Feasible []*framework.NodeInfo
	// Diagnosis records why each other node tried was rejected.
	Diagnosis Diagnosis
}

// FilterPod is the filter path of one pod, which the scheduling cycle
// and preemption's simulation (pkg/framework/preemption) share: the
// per-pod PreFilter plugins over scope.All, in state, then, unless they
// rejected the pod, the Filter plugins on the nodes of scope in parallel
// (FindFeasibleNodes). A rejection is a result; an error (a plugin's
// Error, ctx ending) names the pod.
func (f *Framework) FilterPod(ctx context.Context, state *framework.CycleState, pod *v1.Pod, scope FilterScope) (PodFilterResult, error) {
	var res PodFilterResult
	if f.HasPodPreFilterPlugins() {
		if st := f.RunPreFilterPodPlugins(ctx, state, pod, scope.All); !st.IsSuccess() {
			if !st.IsRejected() {
				return res, fmt.Errorf("pre-filter for pod %s: %w", klog.KObj(pod), st.AsError())
			}
			res.PreFilter = st
			return res, nil
		}
	}
	nodes := scope.Nodes
	if nodes == nil {
		nodes = scope.All
	}
	var left *leftOut
	if plugin, named, ok := f.namedNodes(pod); ok {
		picked := pickNamed(named, scope)
		left = &leftOut{plugin: plugin, named: named, count: len(nodes) - len(picked)}
		nodes, scope.First = picked, nil
	}
	var err error
	if scope.First != nil {
		res.Feasible, res.Diagnosis, err = f.FindFeasibleNodes(ctx, state, pod, scope.First)
		if err != nil {
			return PodFilterResult{}, fmt.Errorf("filtering nodes for pod %s: a window of %d of %d nodes: %w", klog.KObj(pod), len(scope.First), len(nodes), err)
		}
		if len(res.Feasible) > 0 {
			return res, nil
		}
	}
	res.Feasible, res.Diagnosis, err = f.FindFeasibleNodes(ctx, state, pod, nodes)
	if err != nil {
		return PodFilterResult{}, fmt.Errorf("filtering nodes for pod %s: %w", klog.KObj(pod), err)
	}
	if left != nil {
		res.Diagnosis.leaveOut(left.plugin, left.named, left.count)
	}
	return res, nil
}

// leftOut is what a framework.NodeNamer left out of one pod's filtering.
type leftOut struct {
	plugin string
	named  sets.Set[string]
	count  int
}

// namedNodes returns the nodes the profile's framework.NodeNamer plugins
// name for pod (those all of them name, when several do) and the first
// such plugin; false when none names any.
func (f *Framework) namedNodes(pod *v1.Pod) (string, sets.Set[string], bool) {
	var plugin string
	var named sets.Set[string]
	try := func(p framework.Plugin) {
		n, ok := p.(framework.NodeNamer)
		if !ok {
			return
		}
		names, ok := n.NodeNames(pod)
		switch {
		case !ok:
		case named == nil:
			plugin, named = p.Name(), names
		default:
			named = named.Intersection(names)
		}
	}
	for _, p := range f.preFilterPod {
		try(p)
	}
	for _, p := range f.filter {
		// A plugin at both points is asked twice: the same names.
		try(p)
	}
	return plugin, named, named != nil
}

// pickNamed returns the nodes of scope (its Nodes, else All) whose names
// are in named, in the scope's order; looked up by name when it may be.
func pickNamed(named sets.Set[string], scope FilterScope) []*framework.NodeInfo {
	if scope.Nodes == nil && scope.Lookup != nil && len(named) < len(scope.All) {
		out := make([]*framework.NodeInfo, 0, len(named))
		for _, name := range sets.List(named) {
			if ni, ok := scope.Lookup(name); ok {
				out = append(out, ni)
			}
		}
		return out
	}
	nodes := scope.Nodes
	if nodes == nil {
		nodes = scope.All
	}
	out := make([]*framework.NodeInfo, 0, min(len(named), len(nodes)))
	for _, ni := range nodes {
		if named.Has(ni.Name()) {
			out = append(out, ni)
		}
	}
	return out
}

// FitLine is the Filter plugins bound to one pod and one state
// (FilterPreparer.PrepareFilter run once), for a line of checks of the
// pod while the caller changes the nodes and keeps the state up to date
// through the PodPreFilterExtensions (preemption's victim search on one
// candidate node): PodFitsOn without preFilter, minus the binding of the
// plugins on every check.
type FitLine struct {
	f       *Framework
	state   *framework.CycleState
	pod     *v1.Pod
	filters []boundFilter
	timed   bool
}

// NewFitLine binds the active Filter plugins to pod and state.
func (f *Framework) NewFitLine(ctx context.Context, state *framework.CycleState, pod *v1.Pod) *FitLine {
	return &FitLine{f: f, state: state, pod: pod, filters: bindFilters(ctx, f.activeFilters(state), state, pod),
		timed: state.ShouldRecordPluginMetrics()}
}

// Fits reports whether the line's pod passes the Filter plugins on node,
// with the line's state as it is now: what PodFitsOn without preFilter
// says.
func (l *FitLine) Fits(ctx context.Context, node *framework.NodeInfo) (bool, error) {
	return fitVerdict(l.f.runFilters(ctx, l.filters, l.state, l.pod, node, l.timed), l.pod, node)
}

// PodFitsOn reports whether pod passes the Filter plugins on node in
// state: the check of one node of FilterPod's path, for a caller that
// changes the nodes between checks (preemption's victim search takes pods
// off node and puts them back). With preFilter set, the per-pod PreFilter
// plugins run again first, over all (the nodes as they are now), and
// their rejection is a misfit; without it, state holds their result,
// kept up to date by the caller (RunPreFilterPodAddPod,
// RunPreFilterPodRemovePod).
func (f *Framework) PodFitsOn(ctx context.Context, state *framework.CycleState, pod *v1.Pod, all []*framework.NodeInfo, node *framework.NodeInfo, preFilter bool) (bool, error) {
	if preFilter && f.HasPodPreFilterPlugins() {
		st := f.RunPreFilterPodPlugins(ctx, state, pod, all)
		if st.IsRejected() {
			return false, nil
		}
		if !st.IsSuccess() {
			return false, fmt.Errorf("pre-filter for pod %s: %w", klog.KObj(pod), st.AsError())
		}
	}
	return fitVerdict(f.RunFilterPlugins(ctx, state, pod, node), pod, node)
}

// fitVerdict reads the Filter plugins' status on node for pod: a fit, a
// misfit, or an error naming both.
func fitVerdict(st *framework.Status, pod *v1.Pod, node *framework.NodeInfo) (bool, error) {
	if st.IsSuccess() {
		return true, nil
	}
	if st.IsRejected() {
		return false, nil
	}
	return false, fmt.Errorf("filtering node %s for pod %s: %w", node.Name(), klog.KObj(pod), st.AsError())
}
