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

package noderesources

import (
	"context"
	"fmt"
	"sort"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/klog/v2"

	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
	"github.com/batch-scheduler/batch-scheduler/pkg/plugins/pluginutil"
	"github.com/batch-scheduler/batch-scheduler/pkg/resources"
)

// Name is the plugin's name in the registry and in profiles.
const Name = "NodeResourcesFit"

// Reasons a pod does not fit, besides "Insufficient <resource>".
const (
	// ErrReasonTooManyPods: the node's pod count is used up.
	ErrReasonTooManyPods = "Too many pods"
	// ErrReasonNoGrant: the node is capped at zero for this scheduler
	// (two-level scheduling: the allocator granted nothing here).
	ErrReasonNoGrant = "No grant on node"
	// ErrReasonGrantExhausted prefixes the resources the node's cap lacks:
	// "Grant exhausted: cpu".
	ErrReasonGrantExhausted = "Grant exhausted: "
)

// stateKey is where PreFilter keeps the pods' requests.
const stateKey framework.StateKey = Name + "/requests"

// Fit filters nodes on free resources and scores them by allocation.
type Fit struct {
	args  Args
	score func(requested, schedulable int64) int64
}

var (
	_ framework.PreFilterPlugin   = &Fit{}
	_ framework.FilterPreparer    = &Fit{}
	_ framework.ScorePreparer     = &Fit{}
	_ framework.EnqueueExtensions = &Fit{}
)

// New is the plugin's framework.PluginFactory; see the package
// documentation for its args.
func New(_ context.Context, args runtime.Object, _ framework.Handle) (framework.Plugin, error) {
	a, err := decodeArgs(args)
	if err != nil {
		return nil, err
	}
	return NewWithArgs(a)
}

// NewWithArgs builds the plugin from args, for callers that configure it in
// code. Args are defaulted and validated.
func NewWithArgs(args Args) (*Fit, error) {
	args, err := complete(args)
	if err != nil {
		return nil, err
	}
	f := &Fit{args: args, score: leastAllocatedScore}
	if args.ScoringStrategy == MostAllocated {
		f.score = mostAllocatedScore
	}
	return f, nil
}

// Name implements framework.Plugin.
func (*Fit) Name() string { return Name }

// RejectsForRoom implements framework.RoomRejecter: a pod it rejects
// waits for resources on the nodes.
func (*Fit) RejectsForRoom() bool { return true }

// Args returns the plugin's defaulted args.
func (f *Fit) Args() Args {
	a := f.args
	a.Resources = append([]ResourceWeight(nil), f.args.Resources...)
	return a
}

// EventsToRegister implements framework.EnqueueExtensions. Freed
// resources (a pod deleted, finished or resized down, external usage that
// shrank) may
// help any job this plugin rejected. A new node, or a node whose
// allocatable grew, helps only if one of the job's pods fits in what the
// node allocates (see fitsAllocatable); the hint cannot see the node's
// usage, so it may answer Queue needlessly, never Skip wrongly.
func (*Fit) EventsToRegister() []framework.ClusterEventWithHint {
	return []framework.ClusterEventWithHint{
		{Event: framework.EventAssignedPodDelete},
		{Event: framework.EventAssignedPodScaleDown},
		{Event: framework.EventExternalUsageDecrease},
		{Event: framework.EventNodeAdd, QueueingHintFn: nodeHint},
		{Event: framework.EventNodeAllocatableChange, QueueingHintFn: nodeHint},
		{Event: framework.EventGrantIncrease, QueueingHintFn: pluginutil.CapHint},
	}
}

// nodeHint is the queueing hint for node events: some pending pod fits in
// what the new node allocates, and, for an update, the node allocates more
// of something that pod requests than before.
func nodeHint(_ klog.Logger, job *framework.QueuedJob, oldObj, newObj any) (framework.QueueingHint, error) {
	oldNode, newNode, err := pluginutil.NodesOf(oldObj, newObj)
	if err != nil {
		return framework.Queue, err
	}
	newAlloc := resources.FromList(newNode.Status.Allocatable)
	var oldAlloc resources.Resource
	if oldNode != nil {
		oldAlloc = resources.FromList(oldNode.Status.Allocatable)
	}
	for _, pod := range job.Pods {
		req := resources.PodRequests(pod)
		if !fitsAllocatable(req, newAlloc) {
			continue
		}
		if oldObj == nil || pluginutil.GrewFor(req, oldAlloc, newAlloc) {
			return framework.Queue, nil
		}
	}
	return framework.QueueSkip, nil
}

// fitsAllocatable reports whether req fits in a node's allocatable alone,
// as if nothing ran there: what fits applies to (see fits) with no usage.
func fitsAllocatable(req, allocatable resources.Resource) bool {
	return fits(req, &framework.NodeInfo{Schedulable: allocatable})
}

// preFilterState holds the requests of a job's pending pods by pod
// object: an updated copy of a pod (same UID) is not the object PreFilter
// saw, and a pointer is hashed far faster than a UID, for every node. It
// is never changed after PreFilter writes it, so Clone shares it.
type preFilterState map[*v1.Pod]resources.Resource

// Clone implements framework.StateData.
func (s preFilterState) Clone() framework.StateData { return s }

// PreFilter implements framework.PreFilterPlugin: it computes the requests
// of the job's pending pods once for the whole cycle.
func (*Fit) PreFilter(_ context.Context, state *framework.CycleState, job *framework.Job) *framework.Status {
	s := make(preFilterState, len(job.Pending))
	for _, pod := range job.Pending {
		s[pod] = resources.PodRequests(pod)
	}
	state.Write(stateKey, s)
	return nil
}

// requestsOf returns pod's requests from state, or computes them when
// PreFilter did not run for pod.
func requestsOf(state *framework.CycleState, pod *v1.Pod) resources.Resource {
	if state != nil {
		if d, ok := state.Read(stateKey); ok {
			if s, ok := d.(preFilterState); ok {
				if r, ok := s[pod]; ok {
					return r
				}
			}
		}
	}
	return resources.PodRequests(pod)
}

// Filter implements framework.FilterPlugin.
func (*Fit) Filter(ctx context.Context, state *framework.CycleState, pod *v1.Pod, node *framework.NodeInfo) *framework.Status {
	return filter(ctx, pod, requestsOf(state, pod), pluginutil.DRAExtendedOf(state, pod), node)
}

// PrepareFilter implements framework.FilterPreparer: pod's requests are
// read from state once, not on every node.
func (*Fit) PrepareFilter(_ context.Context, state *framework.CycleState, pod *v1.Pod) framework.NodeFilter {
	req, dra := requestsOf(state, pod), pluginutil.DRAExtendedOf(state, pod)
	return func(ctx context.Context, node *framework.NodeInfo) *framework.Status {
		return filter(ctx, pod, req, dra, node)
	}
}

// filter is Filter for pod, whose requests are req; dra are the extended
// resources of req a DeviceClass maps (pluginutil.DRAExtended).
func filter(ctx context.Context, pod *v1.Pod, req resources.Resource, dra map[v1.ResourceName]bool, node *framework.NodeInfo) *framework.Status {
	if node.Node == nil || node.Placeholder {
		return framework.NewStatus(framework.UnschedulableAndUnresolvable, pluginutil.ErrReasonNodeNotFound)
	}
	req = withoutDRA(req, dra, node)
	if fits(req, node) {
		return nil
	}
	// No grant at all is the reason that matters most, whatever else the
	// node lacks; otherwise the node's own shortage comes first.
	var reasons []string
	if node.Cap != nil && node.Cap.IsZero() {
		reasons = []string{ErrReasonNoGrant}
	} else if reasons = insufficient(req, node); len(reasons) == 0 {
		reasons = capReasons(req, node)
	}
	// Checked first: the arguments of a log call are built (and
	// allocated) whether or not it logs, on every node a pod does not
	// fit.
	if logger := klog.FromContext(ctx).V(5); logger.Enabled() {
		logger.Info("Pod does not fit on node", "pod", klog.KObj(pod), "node", node.Name(), "reasons", reasons)
	}
	return rejection(reasons)
}

// rejection is the Unschedulable status of reasons. Named here, the status
// is the framework's as it is: it copies a status to name its plugin
// otherwise, once per rejected node.
func rejection(reasons []string) *framework.Status {
	if len(reasons) == 1 {
		switch reasons[0] {
		case reasonsCPU[0]:
			return rejectedCPU
		case reasonsMemory[0]:
			return rejectedMemory
		case reasonsPods[0]:
			return rejectedPods
		}
	}
	return framework.NewStatus(framework.Unschedulable, reasons...).WithPlugin(Name)
}

// withoutDRA returns req without the resources of dra that node does not
// list in its allocatable: there the DynamicResources plugin allocates
// their devices through DRA (as kube-scheduler's fit plugin, this one
// leaves them to it). A node that lists one serves it by its device
// plugin, and req keeps it. req is not changed: a copy is returned when
// something is left out.
func withoutDRA(req resources.Resource, dra map[v1.ResourceName]bool, node *framework.NodeInfo) resources.Resource {
	copied := false
	for name := range dra {
		if req.Scalar[name] <= 0 || node.Schedulable.Scalar[name] > 0 {
			continue
		}
		if !copied {
			req, copied = req.Clone(), true
		}
		delete(req.Scalar, name)
	}
	return req
}

// capReasons words why req does not fit in node's cap when it fits in the
// node: the node has no grant, or what the grant lacks.
func capReasons(req resources.Resource, node *framework.NodeInfo) []string {
	if node.Cap == nil {
		return nil
	}
	if node.Cap.IsZero() {
		return []string{ErrReasonNoGrant}
	}
	capIdle, _ := node.CapIdle()
	var names []string
	for _, name := range capIdle.Insufficient(req) {
		if name != v1.ResourcePods && amount(req, name) > 0 {
			names = append(names, string(name))
		}
	}
	if len(names) == 0 {
		// The pod asks for nothing the cap lacks, but this scheduler's
		// pods already exceed it (the grant shrank): nothing new goes
		// there until that clears.
		names = exceededNames(capIdle)
	}
	return []string{ErrReasonGrantExhausted + strings.Join(names, ", ")}
}

// exceededNames lists, sorted as resources.Insufficient sorts, the
// resources of which capIdle is negative.
func exceededNames(capIdle resources.Resource) []string {
	var names []string
	for _, name := range (resources.Resource{}).Insufficient(negate(capIdle)) {
		if name != v1.ResourcePods {
			names = append(names, string(name))
		}
	}
	return names
}

// negate returns −r, so that Insufficient finds r's negative amounts.
func negate(r resources.Resource) resources.Resource {
	var n resources.Resource
	n.Sub(r)
	return n
}

// insufficient words what req lacks on node itself (its allocatable less
// what runs there), in resources.Insufficient's order. Like kube-scheduler, it only counts a resource the pod requests
// (the pod count always): a pod that requests no memory fits on a node
// whose memory is over-committed.
func insufficient(req resources.Resource, node *framework.NodeInfo) []string {
	s, r, e := &node.Schedulable, &node.Requested, &node.External
	pods := req.Pods > free(s.Pods, r.Pods, e.Pods)
	cpu := req.MilliCPU > 0 && req.MilliCPU > free(s.MilliCPU, r.MilliCPU, e.MilliCPU)
	memory := req.Memory > 0 && req.Memory > free(s.Memory, r.Memory, e.Memory)
	storage := req.EphemeralStorage > 0 && req.EphemeralStorage > free(s.EphemeralStorage, r.EphemeralStorage, e.EphemeralStorage)
	var scalars []string
	for name, v := range req.Scalar {
		if v > 0 && v > free(s.Scalar[name], r.Scalar[name], e.Scalar[name]) {
			scalars = append(scalars, insufficientReason(name))
		}
	}
	// Most pods that do not fit lack one thing, CPU or memory: every
	// node of a full cluster says so, and the shared reasons spare an
	// allocation per node.
	switch {
	case len(scalars) > 0 || pods && (cpu || memory || storage):
	case cpu && !memory && !storage:
		return reasonsCPU
	case memory && !cpu && !storage:
		return reasonsMemory
	case pods && !cpu && !memory && !storage:
		return reasonsPods
	}
	var reasons []string
	if pods {
		reasons = append(reasons, ErrReasonTooManyPods)
	}
	if cpu {
		reasons = append(reasons, reasonsCPU[0])
	}
	if memory {
		reasons = append(reasons, reasonsMemory[0])
	}
	if storage {
		reasons = append(reasons, insufficientReason(v1.ResourceEphemeralStorage))
	}
	sort.Strings(scalars)
	return append(reasons, scalars...)
}

// The reasons of the most common shortages, shared by every Status that
// gives them (a Status's reasons are never modified).
var (
	reasonsCPU    = []string{insufficientReason(v1.ResourceCPU)}
	reasonsMemory = []string{insufficientReason(v1.ResourceMemory)}
	reasonsPods   = []string{ErrReasonTooManyPods}
)

// The statuses of those shortages, shared as well: a Status is never
// changed once made, and every node of a full cluster (and every node the
// victim search checks a pod against) rejects with one of them.
var (
	rejectedCPU    = framework.NewStatus(framework.Unschedulable, reasonsCPU...).WithPlugin(Name)
	rejectedMemory = framework.NewStatus(framework.Unschedulable, reasonsMemory...).WithPlugin(Name)
	rejectedPods   = framework.NewStatus(framework.Unschedulable, reasonsPods...).WithPlugin(Name)
)

// insufficientReason words a missing resource as kube-scheduler does.
func insufficientReason(name v1.ResourceName) string {
	if name == v1.ResourcePods {
		return ErrReasonTooManyPods
	}
	return "Insufficient " + string(name)
}

// fits reports whether insufficient(req, node) and capReasons are empty,
// without allocating, because Filter runs for every pod and node and most
// nodes fit. It is the one rule of Filter and, on an empty node, of the
// queueing hint.
func fits(req resources.Resource, node *framework.NodeInfo) bool {
	return fitsNode(req, node) && fitsCap(req, node)
}

// fitsNode reports whether req fits in what node allocates less what runs
// there.
func fitsNode(req resources.Resource, node *framework.NodeInfo) bool {
	s, r, e := &node.Schedulable, &node.Requested, &node.External
	if req.Pods > free(s.Pods, r.Pods, e.Pods) ||
		req.MilliCPU > 0 && req.MilliCPU > free(s.MilliCPU, r.MilliCPU, e.MilliCPU) ||
		req.Memory > 0 && req.Memory > free(s.Memory, r.Memory, e.Memory) ||
		req.EphemeralStorage > 0 && req.EphemeralStorage > free(s.EphemeralStorage, r.EphemeralStorage, e.EphemeralStorage) {
		return false
	}
	for name, v := range req.Scalar {
		if v > 0 && v > free(s.Scalar[name], r.Scalar[name], e.Scalar[name]) {
			return false
		}
	}
	return true
}

// free is schedulable less requested less external, saturated rather
// than wrapped: amounts near the int64 limits (a node reporting 2^63-1
// cpu) must not turn "plenty" into "none".
func free(schedulable, requested, external int64) int64 {
	return resources.SubSat(resources.SubSat(schedulable, requested), external)
}

// fitsCap reports whether req fits in what node's cap leaves for this
// scheduler's pods; an uncapped node always fits.
func fitsCap(req resources.Resource, node *framework.NodeInfo) bool {
	c := node.Cap
	if c == nil {
		return true
	}
	if node.CapExceeded() {
		return false
	}
	o := &node.OwnRequested
	if req.MilliCPU > 0 && req.MilliCPU > resources.SubSat(c.MilliCPU, o.MilliCPU) ||
		req.Memory > 0 && req.Memory > resources.SubSat(c.Memory, o.Memory) ||
		req.EphemeralStorage > 0 && req.EphemeralStorage > resources.SubSat(c.EphemeralStorage, o.EphemeralStorage) {
		return false
	}
	for name, v := range req.Scalar {
		if v > 0 && v > resources.SubSat(c.Scalar[name], o.Scalar[name]) {
			return false
		}
	}
	return true
}

// Score implements framework.ScorePlugin.
func (f *Fit) Score(ctx context.Context, state *framework.CycleState, pod *v1.Pod, node *framework.NodeInfo) (int64, *framework.Status) {
	return f.scoreNode(klog.FromContext(ctx).V(10), pod, requestsOf(state, pod), node)
}

// PrepareScore implements framework.ScorePreparer: pod's requests and the
// logger are fetched once, not on every node.
func (f *Fit) PrepareScore(ctx context.Context, state *framework.CycleState, pod *v1.Pod) framework.NodeScorer {
	logger, req := klog.FromContext(ctx).V(10), requestsOf(state, pod)
	return func(_ context.Context, node *framework.NodeInfo) (int64, *framework.Status) {
		return f.scoreNode(logger, pod, req, node)
	}
}

// scoreNode is Score for pod, whose requests are req; logger is the
// -v=10 logger of the cycle's context.
func (f *Fit) scoreNode(logger klog.Logger, pod *v1.Pod, req resources.Resource, node *framework.NodeInfo) (int64, *framework.Status) {
	if node.Node == nil || node.Placeholder {
		return framework.MinNodeScore, framework.AsStatus(fmt.Errorf("scoring pod %s: node %q not found", klog.KObj(pod), node.Name()))
	}
	var total, weights int64
	for _, rw := range f.args.Resources {
		schedulable := amount(node.Schedulable, rw.Name)
		podReq := amount(req, rw.Name)
		if podReq == 0 && isExtended(rw.Name) {
			continue
		}
		// Usage outside Kubernetes (a VM on the host) fills the node
		// like pods do.
		requested := resources.AddSat(resources.AddSat(amount(node.Requested, rw.Name), amount(node.External, rw.Name)), podReq)
		// On a capped node the capacity is the cap where it is smaller,
		// and what is in use the larger of the two views.
		if node.Cap != nil && rw.Name != v1.ResourcePods {
			if c := amount(*node.Cap, rw.Name); c < schedulable {
				left := min(resources.SubSat(schedulable, requested), free(c, amount(node.OwnRequested, rw.Name), podReq))
				schedulable, requested = c, resources.SubSat(c, left)
			}
		}
		if schedulable <= 0 {
			continue
		}
		total += f.score(requested, schedulable) * rw.Weight
		weights += rw.Weight
	}
	if weights == 0 {
		return framework.MinNodeScore, nil
	}
	score := total / weights
	// Score runs for every node of every cycle: build the log line's
	// arguments only when it will be written.
	if logger.Enabled() {
		logger.Info("Scored node", "pod", klog.KObj(pod), "node", node.Name(), "strategy", f.args.ScoringStrategy, "score", score)
	}
	return score, nil
}

// ScoreExtensions implements framework.ScorePlugin: scores are already in
// [0, 100].
func (*Fit) ScoreExtensions() framework.ScoreExtensions { return nil }

// leastAllocatedScore is the share of schedulable left free, 0..100.
func leastAllocatedScore(requested, schedulable int64) int64 {
	if requested >= schedulable {
		return framework.MinNodeScore
	}
	requested = max(requested, 0)
	return resources.Share(schedulable-requested, schedulable, framework.MaxNodeScore)
}

// mostAllocatedScore is the share of schedulable in use, 0..100.
func mostAllocatedScore(requested, schedulable int64) int64 {
	return resources.Share(requested, schedulable, framework.MaxNodeScore)
}

// amount returns r's amount of name.
func amount(r resources.Resource, name v1.ResourceName) int64 {
	switch name {
	case v1.ResourceCPU:
		return r.MilliCPU
	case v1.ResourceMemory:
		return r.Memory
	case v1.ResourceEphemeralStorage:
		return r.EphemeralStorage
	case v1.ResourcePods:
		return r.Pods
	default:
		return r.Scalar[name]
	}
}

// isExtended reports whether name is kept in Resource.Scalar (extended
// resources, hugepages, ...).
func isExtended(name v1.ResourceName) bool {
	switch name {
	case v1.ResourceCPU, v1.ResourceMemory, v1.ResourceEphemeralStorage, v1.ResourcePods:
		return false
	}
	return true
}

// JudgesBySpec implements framework.SpecJudge: the plugin reads of a pod
// its namespace, labels and spec only.
func (*Fit) JudgesBySpec(*v1.Pod) bool { return true }

// NodeLocal implements framework.NodeLocal: its Filter and Score read the node's own
// allocatable, requests, external usage and cap.
func (*Fit) NodeLocal() {}
