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
	"strings"
	"sync"
	"sync/atomic"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"

	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
)

// CycleState keys the framework itself uses.
const (
	// skipFilterKey holds the PreFilter plugins that returned Skip in this
	// cycle: their Filter is not called.
	skipFilterKey framework.StateKey = "framework.batch-scheduler.io/skip-filter-plugins"
	// skipScoreKey holds the PreScore plugins that returned Skip for the
	// current pod: their Score is not called.
	skipScoreKey framework.StateKey = "framework.batch-scheduler.io/skip-score-plugins"
	// skipPodFilterKey holds the PodPreFilter plugins that returned Skip
	// for the current pod: their Filter is not called for it.
	skipPodFilterKey framework.StateKey = "framework.batch-scheduler.io/skip-pod-filter-plugins"
)

// pluginSet is a set of plugin names kept in CycleState. A set is never
// changed once written: each run that skips plugins builds and writes a
// new one.
type pluginSet sets.Set[string]

// Clone implements StateData. The set is shared, not copied: it does not
// change (the victim search clones the cycle state once per node it
// searches).
func (s pluginSet) Clone() framework.StateData { return s }

// skipped returns the set stored under key, or an empty one.
func skipped(state *framework.CycleState, key framework.StateKey) pluginSet {
	if state == nil {
		return nil
	}
	if d, ok := state.Read(key); ok {
		if s, ok := d.(pluginSet); ok {
			return s
		}
	}
	return nil
}

// attribute returns a copy of s that names plugin, leaving s untouched: a
// plugin may return the same *Status from concurrent calls. A status that
// names plugin already is returned as it is: a Status is not changed once
// made, and a plugin that rejects every node with one status (a pod too
// large for any) then costs no copy per node.
func attribute(s *framework.Status, plugin string) *framework.Status {
	if s == nil || s.Plugin() == plugin {
		return s
	}
	c := *s
	return c.WithPlugin(plugin)
}

// pluginError turns a plugin's Error (or any unexpected) status into an
// Error status whose message says which plugin failed doing what.
func pluginError(s *framework.Status, plugin, format string, args ...any) *framework.Status {
	err := fmt.Errorf("%s: %w", fmt.Sprintf(format, args...), s.AsError())
	return framework.AsStatus(err).WithPlugin(plugin)
}

// RunPreFilterPlugins runs the PreFilter plugins for job, in order. The
// first rejection or error stops the run and is returned, naming its
// plugin; an Error status's message also says which plugin failed. A
// plugin that returns Skip has its Filter skipped for the rest of the
// cycle. state must not be nil.
func (f *Framework) RunPreFilterPlugins(ctx context.Context, state *framework.CycleState, job *framework.Job) (st *framework.Status) {
	defer f.observePoint(metricPreFilter, time.Now(), &st)
	skip := sets.New[string]()
	defer func() { state.Write(skipFilterKey, pluginSet(skip)) }()
	for _, pl := range f.preFilter {
		start := f.pluginClock(state)
		s := pl.PreFilter(ctx, state, job)
		f.observePlugin(start, pl.Name(), metricPreFilter, s)
		switch {
		case s.IsSuccess():
		case s.IsSkip():
			skip.Insert(pl.Name())
		case s.IsRejected():
			return attribute(s, pl.Name())
		default:
			return pluginError(s, pl.Name(), "running PreFilter plugin %q for job %s", pl.Name(), job.ID)
		}
	}
	return nil
}

// RunPreFilterPodPlugins runs the PodPreFilter plugins for pod, in order,
// against nodes (see framework.PodPreFilterPlugin). The first rejection or
// error stops the run and is returned, naming its plugin. A plugin that
// returns Skip has its Filter skipped for this pod. state must not be nil.
func (f *Framework) RunPreFilterPodPlugins(ctx context.Context, state *framework.CycleState, pod *v1.Pod, nodes []*framework.NodeInfo) (st *framework.Status) {
	defer f.observePoint(metricPreFilterPod, time.Now(), &st)
	skip := sets.New[string]()
	defer func() {
		state.Write(skipPodFilterKey, pluginSet(skip))
		state.Write(podPreFilterRunKey, f.newPodPreFilterRun(pod, st.IsSuccess(), skip))
	}()
	for _, pl := range f.preFilterPod {
		start := f.pluginClock(state)
		s := pl.PreFilterPod(ctx, state, pod, nodes)
		f.observePlugin(start, pl.Name(), metricPreFilterPod, s)
		switch {
		case s.IsSuccess():
		case s.IsSkip():
			skip.Insert(pl.Name())
		case s.IsRejected():
			return attribute(s, pl.Name())
		default:
			return pluginError(s, pl.Name(), "running PreFilterPod of plugin %q for pod %s", pl.Name(), klog.KObj(pod))
		}
	}
	return nil
}

// RunPlacementPlugins asks the Placement plugins, in order, where job's
// pods are to be placed together (see framework.PlacementPlugin): the
// first plan of a plugin that does not return Skip, nil when every plugin
// skips (or none is enabled). A rejection or error is returned naming its
// plugin.
func (f *Framework) RunPlacementPlugins(ctx context.Context, state *framework.CycleState, job *framework.Job, nodes []*framework.NodeInfo) (_ *framework.PlacementPlan, plugin string, st *framework.Status) {
	if len(f.placement) == 0 {
		return nil, "", nil
	}
	defer f.observePoint(metricPlacement, time.Now(), &st)
	for _, pl := range f.placement {
		start := f.pluginClock(state)
		plan, s := pl.Placements(ctx, state, job, nodes)
		f.observePlugin(start, pl.Name(), metricPlacement, s)
		switch {
		case s.IsSkip():
			continue
		case s.IsSuccess():
			if plan == nil {
				plan = &framework.PlacementPlan{Anywhere: true}
			}
			return plan, pl.Name(), nil
		case s.IsRejected():
			return nil, pl.Name(), attribute(s, pl.Name())
		default:
			return nil, pl.Name(), pluginError(s, pl.Name(), "running Placements of plugin %q for job %s", pl.Name(), job.ID)
		}
	}
	return nil, "", nil
}

// HasPodPreFilterPlugins reports whether any plugin runs per pod before
// Filter; when none does, the nodes need not be listed for it.
func (f *Framework) HasPodPreFilterPlugins() bool { return len(f.preFilterPod) > 0 }

// RunFilterPlugins runs the Filter plugins for pod on node, in order, and
// stops at the first one that does not pass. A rejection is returned as
// the plugin gave it, naming the plugin; an error becomes an Error status
// naming the plugin and the node. Skip counts as passing.
func (f *Framework) RunFilterPlugins(ctx context.Context, state *framework.CycleState, pod *v1.Pod, node *framework.NodeInfo) *framework.Status {
	return f.runFilters(ctx, bindFilters(ctx, f.activeFilters(state), state, pod), state, pod, node, state.ShouldRecordPluginMetrics())
}

// boundFilter is an active Filter plugin for one pod: fn is its
// NodeFilter when it is a framework.FilterPreparer, else nil and its
// Filter runs.
type boundFilter struct {
	pl framework.FilterPlugin
	fn framework.NodeFilter
}

// bindFilters prepares filters for pod: each FilterPreparer reads its
// per-pod data once, here, rather than on every node.
func bindFilters(ctx context.Context, filters []framework.FilterPlugin, state *framework.CycleState, pod *v1.Pod) []boundFilter {
	bound := make([]boundFilter, len(filters))
	for i, pl := range filters {
		bound[i].pl = pl
		if p, ok := pl.(framework.FilterPreparer); ok {
			bound[i].fn = p.PrepareFilter(ctx, state, pod)
		}
	}
	return bound
}

// activeFilters returns the Filter plugins that PreFilter and PreFilterPod
// did not skip for the current pod. FindFeasibleNodes computes it once
// per pod rather than once per node.
func (f *Framework) activeFilters(state *framework.CycleState) []framework.FilterPlugin {
	skip, skipPod := skipped(state, skipFilterKey), skipped(state, skipPodFilterKey)
	if len(skip) == 0 && len(skipPod) == 0 {
		return f.filter
	}
	active := make([]framework.FilterPlugin, 0, len(f.filter))
	for _, pl := range f.filter {
		if !skip.Has(pl.Name()) && !skipPod.Has(pl.Name()) {
			active = append(active, pl)
		}
	}
	return active
}

// runFilters is RunFilterPlugins with the plugins to run given.
// timed says whether each plugin call is timed for the plugin metrics.
func (f *Framework) runFilters(ctx context.Context, filters []boundFilter, state *framework.CycleState, pod *v1.Pod, node *framework.NodeInfo, timed bool) *framework.Status {
	for _, b := range filters {
		pl := b.pl
		var start time.Time
		if timed && f.metrics != nil {
			start = time.Now()
		}
		var s *framework.Status
		if b.fn != nil {
			s = b.fn(ctx, node)
		} else {
			s = pl.Filter(ctx, state, pod, node)
		}
		f.observePlugin(start, pl.Name(), metricFilter, s)
		switch {
		case s.IsSuccess() || s.IsSkip():
		case s.IsRejected():
			return attribute(s, pl.Name())
		default:
			return pluginError(s, pl.Name(), "running Filter plugin %q for pod %s on node %q", pl.Name(), klog.KObj(pod), node.Name())
		}
	}
	return nil
}

// Has reports whether name is in s; a nil s has nothing.
func (s pluginSet) Has(name string) bool { return sets.Set[string](s).Has(name) }

// FindFeasibleNodes runs the Filter plugins for pod on every node, in
// parallel, and returns the nodes that pass, in the order of nodes. The
// diagnosis records why each other node was rejected. An Error from any
// plugin (or ctx ending) stops the search and is returned as err, naming
// the plugin and the node; feasible and diagnosis are then empty.
func (f *Framework) FindFeasibleNodes(ctx context.Context, state *framework.CycleState, pod *v1.Pod, nodes []*framework.NodeInfo) (_ []*framework.NodeInfo, _ Diagnosis, err error) {
	if f.metrics != nil {
		start := time.Now()
		defer func() {
			st := framework.AsStatus(err)
			f.observePoint(metricFilter, start, &st)
		}()
	}
	// The diagnosis's maps are made by its first rejection (add): most
	// pods fit on every node of their window.
	var diagnosis Diagnosis
	if len(nodes) == 0 {
		return nil, diagnosis, nil
	}
	buf := getStatuses(len(nodes))
	defer putStatuses(buf)
	statuses := *buf
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		errOnce  sync.Once
		firstErr *framework.Status
		done     atomic.Int64
	)
	filters := bindFilters(ctx, f.activeFilters(state), state, pod)
	sampled := state.ShouldRecordPluginMetrics()
	f.parallelize(ctx, len(nodes), func(i int) {
		s := f.runFilters(ctx, filters, state, pod, nodes[i], sampled && i%perNodeTimingStride == 0)
		if s.Code() == framework.Error {
			errOnce.Do(func() {
				firstErr = s
				cancel()
			})
			return
		}
		statuses[i] = s
		done.Add(1)
	})
	if firstErr != nil {
		return nil, Diagnosis{}, firstErr.AsError()
	}
	if done.Load() < int64(len(nodes)) {
		// The caller's context ended before every node was tried.
		return nil, Diagnosis{}, fmt.Errorf("filtering nodes for pod %s: %w", klog.KObj(pod), context.Cause(ctx))
	}
	fit := 0
	for _, s := range statuses {
		if s.IsSuccess() {
			fit++
		}
	}
	var feasible []*framework.NodeInfo
	if fit > 0 {
		feasible = make([]*framework.NodeInfo, 0, fit)
	}
	if rejected := len(nodes) - fit; rejected > 0 {
		// Sized once: grown node by node, it would be copied as often as
		// it doubled, on every pod that fits nowhere.
		diagnosis.grow(rejected)
	}
	for i, s := range statuses {
		if s.IsSuccess() {
			feasible = append(feasible, nodes[i])
			continue
		}
		diagnosis.add(nodes[i].Name(), s)
	}
	return feasible, diagnosis, nil
}

// parallelize runs work for each of n pieces on f.parallelism goroutines,
// until done or ctx ends.
func (f *Framework) parallelize(ctx context.Context, n int, work func(i int)) {
	workers := min(f.parallelism, n)
	// Chunks amortise the per-piece channel receive when there are many
	// nodes per worker, while keeping the tail short.
	chunk := max(1, min(n/(workers*4), 64))
	workqueue.ParallelizeUntil(ctx, workers, n, work, workqueue.WithChunkSize(chunk))
}

// RunPreScorePlugins runs the PreScore plugins for pod with the nodes that
// passed Filter, in order. A plugin that returns Skip has its Score
// skipped for this pod; any status other than Success or Skip stops the
// run and is returned as an Error naming the plugin.
func (f *Framework) RunPreScorePlugins(ctx context.Context, state *framework.CycleState, pod *v1.Pod, nodes []*framework.NodeInfo) (st *framework.Status) {
	defer f.observePoint(metricPreScore, time.Now(), &st)
	skip := sets.New[string]()
	defer func() { state.Write(skipScoreKey, pluginSet(skip)) }()
	for _, pl := range f.preScore {
		start := f.pluginClock(state)
		s := pl.PreScore(ctx, state, pod, nodes)
		f.observePlugin(start, pl.Name(), metricPreScore, s)
		switch {
		case s.IsSuccess():
		case s.IsSkip():
			skip.Insert(pl.Name())
		default:
			return pluginError(s, pl.Name(), "running PreScore plugin %q for pod %s", pl.Name(), klog.KObj(pod))
		}
	}
	return nil
}

// RunReservePlugins tells the Reserve plugins, in order, that pod is
// placed on nodeName. When one fails, it unreserves pod in reverse order
// on every plugin whose Reserve was called, including the failing one (its
// Reserve may have done part of its work, and Unreserve is idempotent), and
// returns the failure naming the plugin; the caller must not unreserve
// again. A rejection keeps its code; anything else becomes an Error.
func (f *Framework) RunReservePlugins(ctx context.Context, state *framework.CycleState, pod *v1.Pod, nodeName string) (st *framework.Status) {
	defer f.observePoint(metricReserve, time.Now(), &st)
	for i, pl := range f.reserve {
		start := f.pluginClock(state)
		s := pl.Reserve(ctx, state, pod, nodeName)
		f.observePlugin(start, pl.Name(), metricReserve, s)
		if s.IsSuccess() || s.IsSkip() {
			continue
		}
		if s.IsRejected() {
			s = attribute(s, pl.Name())
		} else {
			s = pluginError(s, pl.Name(), "running Reserve plugin %q for pod %s on node %q", pl.Name(), klog.KObj(pod), nodeName)
		}
		klog.FromContext(ctx).V(4).Info("Reserve failed; unreserving", "pod", klog.KObj(pod), "node", nodeName, "plugin", pl.Name(), "status", s)
		f.unreserve(ctx, state, pod, nodeName, f.reserve[:i+1])
		return s
	}
	return nil
}

// RunUnreservePlugins undoes RunReservePlugins: it calls every Reserve
// plugin's Unreserve, in reverse order.
func (f *Framework) RunUnreservePlugins(ctx context.Context, state *framework.CycleState, pod *v1.Pod, nodeName string) {
	f.unreserve(ctx, state, pod, nodeName, f.reserve)
}

func (f *Framework) unreserve(ctx context.Context, state *framework.CycleState, pod *v1.Pod, nodeName string, plugins []framework.ReservePlugin) {
	var st *framework.Status // Unreserve cannot fail
	defer f.observePoint(metricUnreserve, time.Now(), &st)
	for i := len(plugins) - 1; i >= 0; i-- {
		start := f.pluginClock(state)
		plugins[i].Unreserve(ctx, state, pod, nodeName)
		f.observePlugin(start, plugins[i].Name(), metricUnreserve, nil)
	}
}

// RunPermitPlugins asks the Permit plugins, in order, whether job's
// placements (pod UID → node name) may be bound. The first rejection or
// error stops the run and is returned naming its plugin; Skip counts as
// approval.
func (f *Framework) RunPermitPlugins(ctx context.Context, state *framework.CycleState, job *framework.Job, placements map[string]string) (st *framework.Status) {
	defer f.observePoint(metricPermit, time.Now(), &st)
	for _, pl := range f.permit {
		start := f.pluginClock(state)
		s := pl.Permit(ctx, state, job, placements)
		f.observePlugin(start, pl.Name(), metricPermit, s)
		switch {
		case s.IsSuccess() || s.IsSkip():
		case s.IsRejected():
			return attribute(s, pl.Name())
		default:
			return pluginError(s, pl.Name(), "running Permit plugin %q for job %s", pl.Name(), job.ID)
		}
	}
	return nil
}

// PermitOutOfReach reports whether a Permit plugin that is a
// framework.QuorumPermit says it must reject job, with placed of its
// pending pods placed and left still to try; false when none is.
func (f *Framework) PermitOutOfReach(job *framework.Job, placed, left int) bool {
	for _, pl := range f.permit {
		if q, ok := pl.(framework.QuorumPermit); ok && q.OutOfReach(job, placed, left) {
			return true
		}
	}
	return false
}

// HasPostFilterPlugins reports whether any PostFilter plugin is enabled.
func (f *Framework) HasPostFilterPlugins() bool { return len(f.postFilter) > 0 }

// RunPostFilterPlugins runs the PostFilter plugins for job, whose cycle
// found no placement, in order, until one succeeds (it is making room; its
// result is returned) or fails (an Error naming it). A rejection hands on
// to the next plugin. When none succeeds, the status is Unschedulable,
// with the messages of the plugins that gave one, and the result carries
// the last non-empty message of a plugin, if any; waitOn names the plugins
// that rejected with Unschedulable rather than UnschedulableAndUnresolvable
// (the events they registered may let them make room later).
func (f *Framework) RunPostFilterPlugins(ctx context.Context, state *framework.CycleState, job *framework.Job, room framework.RoomMaker) (res *framework.PostFilterResult, st *framework.Status, waitOn []string) {
	defer f.observePoint(metricPostFilter, time.Now(), &st)
	var last *framework.PostFilterResult
	var reasons []string
	pr, perPlugin := room.(framework.PluginRoomMaker)
	for _, pl := range f.postFilter {
		r := room
		if perPlugin {
			r = pr.ForPlugin(pl.Name())
		}
		start := f.pluginClock(state)
		res, s := pl.PostFilter(ctx, state, job, r)
		f.observePlugin(start, pl.Name(), metricPostFilter, s)
		switch {
		case s.IsSuccess():
			return res, nil, nil
		case s.IsRejected() || s.IsSkip():
			if res != nil && res.Message != "" {
				last = res
			}
			if s.IsRejected() && s.Message() != "" {
				reasons = append(reasons, pl.Name()+": "+s.Message())
			}
			if s.Code() == framework.Unschedulable {
				waitOn = append(waitOn, pl.Name())
			}
		default:
			return res, pluginError(s, pl.Name(), "running PostFilter plugin %q for job %s", pl.Name(), job.ID), nil
		}
	}
	return last, framework.NewStatus(framework.Unschedulable, reasons...), waitOn
}

// RunBindPlugins binds pod to nodeName with the first Bind plugin that does
// not return Skip, and returns its status naming it (nil on success; a
// failure as an Error). When every plugin skips, the pod is not bound and
// the result is an Error.
func (f *Framework) RunBindPlugins(ctx context.Context, state *framework.CycleState, pod *v1.Pod, nodeName string) (st *framework.Status) {
	defer f.observePoint(metricBind, time.Now(), &st)
	for _, pl := range f.bind {
		start := f.pluginClock(state)
		s := pl.Bind(ctx, state, pod, nodeName)
		f.observePlugin(start, pl.Name(), metricBind, s)
		switch {
		case s.IsSkip():
			continue
		case s.IsSuccess():
			return nil
		default:
			return pluginError(s, pl.Name(), "running Bind plugin %q for pod %s on node %q", pl.Name(), klog.KObj(pod), nodeName)
		}
	}
	return framework.AsStatus(fmt.Errorf("binding pod %s to node %q: every Bind plugin (%s) skipped it",
		klog.KObj(pod), nodeName, strings.Join(f.enabled[BindPoint].Names(), ", ")))
}
