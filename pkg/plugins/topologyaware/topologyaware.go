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

package topologyaware

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
	"github.com/batch-scheduler/batch-scheduler/pkg/resources"
)

// Name is the plugin's name in the registry and in profiles.
const Name = "TopologyAware"

// TopologyAware proposes, for a gang with a topology constraint, the
// domains of the constraint's level (and of the narrower levels) to place
// it in, best fit first.
type TopologyAware struct {
	args Args
	// narrowFirst lists the levels but the hostname, narrowest first:
	// Volcano's tier t is narrowFirst[t-1].
	narrowFirst []string
}

var (
	_ framework.PlacementPlugin   = &TopologyAware{}
	_ framework.EnqueueExtensions = &TopologyAware{}
)

// New is the plugin's framework.PluginFactory.
func New(_ context.Context, args runtime.Object, _ framework.Handle) (framework.Plugin, error) {
	a, err := decodeArgs(args)
	if err != nil {
		return nil, err
	}
	pl := &TopologyAware{args: a}
	for i := len(a.Levels) - 1; i >= 0; i-- {
		if a.Levels[i] != HostnameLabel {
			pl.narrowFirst = append(pl.narrowFirst, a.Levels[i])
		}
	}
	return pl, nil
}

// Name implements framework.Plugin.
func (*TopologyAware) Name() string { return Name }

// EventsToRegister implements framework.EnqueueExtensions: a gang that
// found no domain with room waits for room to free (a pod deleted or
// resized down, external usage that shrank, a grant that grew) or for
// nodes (new ones, relabelled ones, more allocatable), or for its group
// object to change its constraint.
func (*TopologyAware) EventsToRegister() []framework.ClusterEventWithHint {
	return []framework.ClusterEventWithHint{
		{Event: framework.EventAssignedPodDelete},
		{Event: framework.EventAssignedPodScaleDown},
		{Event: framework.EventExternalUsageDecrease},
		{Event: framework.EventGrantIncrease},
		{Event: framework.EventNodeAdd},
		{Event: framework.EventNodeLabelChange},
		{Event: framework.EventNodeAllocatableChange},
		{Event: framework.EventGangGroupChange},
	}
}

// level is one level to search, and how many of its domains to propose.
type level struct {
	key   string
	limit int
}

// Placements implements framework.PlacementPlugin.
func (pl *TopologyAware) Placements(_ context.Context, _ *framework.CycleState, job *framework.Job, nodes []*framework.NodeInfo) (*framework.PlacementPlan, *framework.Status) {
	if job.TopologyErr != nil {
		return nil, framework.NewStatus(framework.UnschedulableAndUnresolvable, job.TopologyErr.Error())
	}
	t := job.Topology
	if t == nil || !job.ID.Gang || len(job.Pending) == 0 {
		// A single pod is always within one domain of every level.
		return nil, framework.NewStatus(framework.Skip)
	}
	key, required := pl.resolve(t)
	if key == "" {
		// A tier above every configured level: any node will do, the
		// narrowest level that fits preferred.
		key, required = pl.args.Levels[0], false
	}
	need := quorumNeed(job)
	pinned := placedNodes(job)
	plan := &framework.PlacementPlan{Anywhere: !required}
	rooms := roomsOf(nodes)
	need = withoutUnlisted(need, rooms)
	var own []*domain
	for _, lv := range pl.searchOrder(key, required) {
		if lv.key == HostnameLabel && lv.key != key && pinned == nil {
			// Every node is a domain of its own: no grouping needed.
			plan.Placements = append(plan.Placements, bestNodes(nodes, rooms, need, lv.limit)...)
			continue
		}
		domains, ok := group(nodes, rooms, lv.key, pinned)
		if !ok {
			continue
		}
		fit := fitting(domains, need)
		for _, d := range fit[:min(len(fit), lv.limit)] {
			plan.Placements = append(plan.Placements, framework.Placement{Name: lv.key + "=" + d.value, Nodes: d.nodes})
		}
		if lv.key == key {
			own = domains
		}
	}
	if required {
		plan.Room = room(own, key, need)
		plan.Unplaced = pl.unplaced(job, t, key, own, need, pinned != nil)
	}
	return plan, nil
}

// resolve returns the label key of t's level ("" for a tier above every
// level) and whether it is required.
func (pl *TopologyAware) resolve(t *framework.TopologyConstraint) (string, bool) {
	if t.Key != "" {
		return t.Key, t.Required
	}
	if int(t.Tier) > len(pl.narrowFirst) || t.Tier < 1 {
		return "", false
	}
	return pl.narrowFirst[t.Tier-1], t.Required
}

// searchOrder lists the levels to search for a constraint on key: the
// configured levels narrower than key, narrowest first, then key itself
// and, when only preferred, the wider levels.
func (pl *TopologyAware) searchOrder(key string, required bool) []level {
	i := slices.Index(pl.args.Levels, key)
	if i < 0 {
		return []level{{key: key, limit: int(pl.args.MaxPlacements)}}
	}
	var out []level
	if pl.args.MaxNarrowerPlacements > 0 {
		for j := len(pl.args.Levels) - 1; j > i; j-- {
			out = append(out, level{key: pl.args.Levels[j], limit: int(pl.args.MaxNarrowerPlacements)})
		}
	}
	out = append(out, level{key: key, limit: int(pl.args.MaxPlacements)})
	if !required {
		for j := i - 1; j >= 0; j-- {
			out = append(out, level{key: pl.args.Levels[j], limit: int(pl.args.MaxNarrowerPlacements)})
		}
	}
	return out
}

// domain is the nodes with one value of a level's label.
type domain struct {
	value string
	nodes []*framework.NodeInfo
	// free sums what the nodes have idle (never below zero per node);
	// allocatable sums what they allocate, less external usage.
	free, allocatable resources.Resource
	// ratio is how many times the quorum fits in free (see fitting).
	ratio float64
}

// nodeRoom is what one node has idle (never below zero) and allocates
// less external usage.
type nodeRoom struct {
	free, allocatable resources.Resource
}

// roomsOf returns the room of each of nodes, in their order: computed once
// per job, for every level searched.
func roomsOf(nodes []*framework.NodeInfo) []nodeRoom {
	out := make([]nodeRoom, len(nodes))
	for i, n := range nodes {
		if n.Node == nil {
			continue
		}
		addNonNegative(&out[i].free, n.Idle())
		alloc := n.Schedulable.Clone()
		alloc.Sub(n.External)
		addNonNegative(&out[i].allocatable, alloc)
	}
	return out
}

// group splits nodes by their value of key; rooms are the nodes' rooms.
// With pinned (the job already runs on those nodes) only the domain
// holding all of them is kept; ok is false when they are in several
// domains of this level.
func group(nodes []*framework.NodeInfo, rooms []nodeRoom, key string, pinned map[string]bool) (_ []*domain, ok bool) {
	index := map[string]int{}
	var all []domain
	pinnedValue, pinnedSeen := "", false
	for i, n := range nodes {
		if n.Node == nil {
			continue
		}
		v, has := n.Node.Labels[key]
		if pinned[n.Name()] {
			if !has || (pinnedSeen && v != pinnedValue) {
				return nil, false
			}
			pinnedValue, pinnedSeen = v, true
		}
		if !has {
			continue
		}
		j, seen := index[v]
		if !seen {
			j = len(all)
			index[v] = j
			all = append(all, domain{value: v})
		}
		d := &all[j]
		d.nodes = append(d.nodes, n)
		addNonNegative(&d.free, rooms[i].free)
		addNonNegative(&d.allocatable, rooms[i].allocatable)
	}
	if pinned != nil {
		if j, seen := index[pinnedValue]; pinnedSeen && seen {
			return []*domain{&all[j]}, true
		}
		return nil, false
	}
	out := make([]*domain, len(all))
	for j := range all {
		out[j] = &all[j]
	}
	return out, true
}

// bestNodes proposes the nodes that can hold need on their own, the one
// need fills most first, at most limit: the hostname level without
// building a domain per node.
func bestNodes(nodes []*framework.NodeInfo, rooms []nodeRoom, need resources.Resource, limit int) []framework.Placement {
	type pick struct {
		i int
		r float64
	}
	var best []pick // sorted, at most limit
	for i, n := range nodes {
		if n.Node == nil {
			continue
		}
		r := ratio(rooms[i].free, need)
		if r < 1 || (len(best) == limit && r >= best[limit-1].r) {
			continue
		}
		at, _ := slices.BinarySearchFunc(best, r, func(p pick, r float64) int {
			if p.r <= r {
				return -1
			}
			return 1
		})
		best = slices.Insert(best, at, pick{i: i, r: r})
		if len(best) > limit {
			best = best[:limit]
		}
	}
	out := make([]framework.Placement, len(best))
	for j, p := range best {
		n := nodes[p.i]
		out[j] = framework.Placement{Name: HostnameLabel + "=" + n.Name(), Nodes: []*framework.NodeInfo{n}}
	}
	return out
}

// fitting returns the domains whose free resources can hold need, the
// one need fills most first (best fit: what is left stays in the domains
// with the most room), ties by value.
func fitting(domains []*domain, need resources.Resource) []*domain {
	var out []*domain
	for _, d := range domains {
		if d.ratio = ratio(d.free, need); d.ratio >= 1 {
			out = append(out, d)
		}
	}
	slices.SortFunc(out, func(a, b *domain) int {
		if a.ratio != b.ratio {
			if a.ratio < b.ratio {
				return -1
			}
			return 1
		}
		return strings.Compare(a.value, b.value)
	})
	return out
}

// room returns the domains preemption may make room in: those whose
// allocatable can hold need, the most free first (the fewest victims),
// at most roomPlacements.
func room(domains []*domain, key string, need resources.Resource) []framework.Placement {
	var cands []*domain
	for _, d := range domains {
		if ratio(d.allocatable, need) >= 1 {
			cands = append(cands, d)
		}
	}
	slices.SortFunc(cands, func(a, b *domain) int {
		if ra, rb := ratio(a.free, need), ratio(b.free, need); ra != rb {
			if ra > rb {
				return -1
			}
			return 1
		}
		return strings.Compare(a.value, b.value)
	})
	var out []framework.Placement
	for _, d := range cands[:min(len(cands), roomPlacements)] {
		out = append(out, framework.Placement{Name: key + "=" + d.value, Nodes: d.nodes})
	}
	return out
}

// ratio is how many times need fits in have, by the scarcest resource
// need asks for (the pod count included); +Inf when need is empty.
func ratio(have, need resources.Resource) float64 {
	r := math.Inf(1)
	take := func(h, n int64) {
		if n > 0 {
			r = min(r, float64(h)/float64(n))
		}
	}
	take(have.MilliCPU, need.MilliCPU)
	take(have.Memory, need.Memory)
	take(have.EphemeralStorage, need.EphemeralStorage)
	take(have.Pods, need.Pods)
	for name, n := range need.Scalar {
		take(have.Scalar[name], n)
	}
	return r
}

// quorumNeed sums the requests of the pods the job must still place to
// reach its quorum (its first pending pods), with their pod count.
func quorumNeed(job *framework.Job) resources.Resource {
	if need, ok := subGroupsNeed(job); ok {
		return need
	}
	q := max(int(job.MinAvailable)-job.Bound, 1)
	var need resources.Resource
	for _, pod := range job.Pending[:min(q, len(job.Pending))] {
		r := resources.PodRequests(pod)
		r.Pods = 1
		need.Add(r)
	}
	return need
}

// subGroupsNeed is quorumNeed of a multi-level gang whose rules ask for
// sub-groups: the pods that bring the first sub-groups of each rule that
// do not hold their quorum yet up to it, as many sub-groups as the rule
// still lacks; false when no rule asks for any.
func subGroupsNeed(job *framework.Job) (resources.Resource, bool) {
	var need resources.Resource
	asked := false
	for i := range job.SubGroupRules {
		lack := int(job.SubGroupRules[i].MinSubGroups)
		if lack <= 0 {
			continue
		}
		asked = true
		for k := range job.SubGroups {
			if g := &job.SubGroups[k]; g.Rule == i && g.Holds(0) {
				lack--
			}
		}
		for k := range job.SubGroups {
			g := &job.SubGroups[k]
			if lack <= 0 {
				break
			}
			if g.Rule != i || g.Holds(0) {
				continue
			}
			lack--
			for _, pod := range g.Pending[:min(int(g.MinMember)-g.Bound, len(g.Pending))] {
				r := resources.PodRequests(pod)
				r.Pods = 1
				need.Add(r)
			}
		}
	}
	return need, asked
}

// withoutUnlisted returns need without the extended resources that no
// node lists in its allocatable: a domain's room cannot be measured in
// them. Such a resource is served through Dynamic Resource Allocation (a
// DeviceClass maps it; DynamicResources allocates its devices in Filter)
// or by nothing, and Filter judges both on each node. need is not
// changed: a copy is returned when something is left out.
func withoutUnlisted(need resources.Resource, rooms []nodeRoom) resources.Resource {
	copied := false
	for name := range need.Scalar {
		listed := false
		for i := range rooms {
			if rooms[i].allocatable.Scalar[name] > 0 {
				listed = true
				break
			}
		}
		if listed {
			continue
		}
		if !copied {
			need, copied = need.Clone(), true
		}
		delete(need.Scalar, name)
	}
	return need
}

// placedNodes returns the names of the nodes the job runs on; nil when it
// runs nowhere yet.
func placedNodes(job *framework.Job) map[string]bool {
	if len(job.PlacedNodes) == 0 {
		return nil
	}
	out := make(map[string]bool, len(job.PlacedNodes))
	for _, n := range job.PlacedNodes {
		out[n] = true
	}
	return out
}

// addNonNegative adds the positive amounts of r to sum.
func addNonNegative(sum *resources.Resource, r resources.Resource) {
	sum.MilliCPU += max(r.MilliCPU, 0)
	sum.Memory += max(r.Memory, 0)
	sum.EphemeralStorage += max(r.EphemeralStorage, 0)
	sum.Pods += max(r.Pods, 0)
	for name, v := range r.Scalar {
		if v > 0 {
			if sum.Scalar == nil {
				sum.Scalar = map[v1.ResourceName]int64{}
			}
			sum.Scalar[name] += v
		}
	}
}

// unplaced says why no domain of key can hold the job.
func (pl *TopologyAware) unplaced(job *framework.Job, t *framework.TopologyConstraint, key string, domains []*domain, need resources.Resource, pinned bool) string {
	head := fmt.Sprintf("gang %s must run within one %s domain (%s)", job.ID, key, t.Source)
	if job.Parent != nil {
		head = fmt.Sprintf("sub-group %s of gang %s must run within one %s domain (%s)", framework.QuoteValue(job.SubGroup), job.ID, key, t.Source)
	}
	var largest *domain
	for _, d := range domains {
		if largest == nil || ratio(d.free, need) > ratio(largest.free, need) {
			largest = d
		}
	}
	switch {
	case pinned && largest == nil:
		return head + ": its running pods are not within one such domain"
	case largest == nil:
		return head + ": no node has label " + key
	case ratio(largest.free, need) >= 1:
		return head + ": none of them fits it"
	}
	where := "the largest free"
	if pinned {
		where = "the one it runs in"
	}
	return fmt.Sprintf("%s: its quorum needs %s; %s, %s=%s, has %s free", head, amounts(need, need), where, key, largest.value, amounts(largest.free, need))
}

// amounts renders the amounts of r that need asks for, e.g.
// "cpu 4, memory 8Gi, nvidia.com/gpu 8, pods 2".
func amounts(r, need resources.Resource) string {
	var parts []string
	if need.MilliCPU > 0 {
		parts = append(parts, "cpu "+resource.NewMilliQuantity(r.MilliCPU, resource.DecimalSI).String())
	}
	if need.Memory > 0 {
		parts = append(parts, "memory "+resource.NewQuantity(r.Memory, resource.BinarySI).String())
	}
	if need.EphemeralStorage > 0 {
		parts = append(parts, "ephemeral-storage "+resource.NewQuantity(r.EphemeralStorage, resource.BinarySI).String())
	}
	var scalars []string
	for name, v := range need.Scalar {
		if v > 0 {
			scalars = append(scalars, fmt.Sprintf("%s %d", name, r.Scalar[name]))
		}
	}
	slices.Sort(scalars)
	parts = append(parts, scalars...)
	parts = append(parts, fmt.Sprintf("pods %d", r.Pods))
	return strings.Join(parts, ", ")
}
