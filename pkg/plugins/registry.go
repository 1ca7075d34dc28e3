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

package plugins

import (
	"fmt"

	frameworkruntime "github.com/batch-scheduler/batch-scheduler/pkg/framework/runtime"

	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
	"github.com/batch-scheduler/batch-scheduler/pkg/plugins/capacity"
	"github.com/batch-scheduler/batch-scheduler/pkg/plugins/defaultbinder"
	"github.com/batch-scheduler/batch-scheduler/pkg/plugins/defaultpreemption"
	"github.com/batch-scheduler/batch-scheduler/pkg/plugins/dynamicresources"
	"github.com/batch-scheduler/batch-scheduler/pkg/plugins/gang"
	"github.com/batch-scheduler/batch-scheduler/pkg/plugins/interpodaffinity"
	"github.com/batch-scheduler/batch-scheduler/pkg/plugins/nodeaffinity"
	"github.com/batch-scheduler/batch-scheduler/pkg/plugins/nodeledger"
	"github.com/batch-scheduler/batch-scheduler/pkg/plugins/nodeports"
	"github.com/batch-scheduler/batch-scheduler/pkg/plugins/noderesources"
	"github.com/batch-scheduler/batch-scheduler/pkg/plugins/nodeunschedulable"
	"github.com/batch-scheduler/batch-scheduler/pkg/plugins/nodevolumelimits"
	"github.com/batch-scheduler/batch-scheduler/pkg/plugins/podtopologyspread"
	"github.com/batch-scheduler/batch-scheduler/pkg/plugins/prioritysort"
	"github.com/batch-scheduler/batch-scheduler/pkg/plugins/tainttoleration"
	"github.com/batch-scheduler/batch-scheduler/pkg/plugins/topologyaware"
	"github.com/batch-scheduler/batch-scheduler/pkg/plugins/volumebinding"
	"github.com/batch-scheduler/batch-scheduler/pkg/plugins/volumerestrictions"
	"github.com/batch-scheduler/batch-scheduler/pkg/plugins/volumezone"
)

// namedFactory is a plugin factory and the name it is registered under.
type namedFactory struct {
	name    string
	factory framework.PluginFactory
}

// inTree lists the in-tree plugins' factories by name.
var inTree = []namedFactory{
	{prioritysort.Name, prioritysort.New},
	{gang.Name, gang.New},
	{nodeunschedulable.Name, nodeunschedulable.New},
	{nodeaffinity.Name, nodeaffinity.New},
	{nodeports.Name, nodeports.New},
	{tainttoleration.Name, tainttoleration.New},
	{noderesources.Name, noderesources.New},
	{volumerestrictions.Name, volumerestrictions.New},
	{nodevolumelimits.Name, nodevolumelimits.New},
	{volumebinding.Name, volumebinding.New},
	{volumezone.Name, volumezone.New},
	{dynamicresources.Name, dynamicresources.New},
	{interpodaffinity.Name, interpodaffinity.New},
	{podtopologyspread.Name, podtopologyspread.New},
	{topologyaware.Name, topologyaware.New},
	{capacity.Name, capacity.New},
	{capacity.ReclaimName, capacity.NewReclaim},
	{capacity.ReservationName, capacity.NewReservation},
	{defaultpreemption.Name, defaultpreemption.New},
	{nodeledger.Name, nodeledger.New},
	{defaultbinder.Name, defaultbinder.New},
}

// NewInTreeRegistry returns a new registry holding every in-tree plugin.
// Callers may register more plugins in it, or merge it into their own.
func NewInTreeRegistry() *frameworkruntime.Registry {
	r := frameworkruntime.NewRegistry()
	mustRegister(r, inTree)
	return r
}

// mustRegister registers factories in r. The in-tree list is fixed, so a
// failure is a programming error and panics.
func mustRegister(r *frameworkruntime.Registry, factories []namedFactory) {
	for _, f := range factories {
		if err := r.Register(f.name, f.factory); err != nil {
			panic(fmt.Sprintf("registering in-tree plugin: %v", err))
		}
	}
}

// DefaultProfile returns the default profile of schedulerName: the plugins
// each extension point runs, in order, without args.
//
//	queueSort: PrioritySort
//	preFilter: Gang, NodeAffinity, NodePorts, NodeResourcesFit,
//	           VolumeRestrictions, NodeVolumeLimits, VolumeBinding, VolumeZone,
//	           PodTopologySpread, InterPodAffinity, DynamicResources, TopologyAware
//	filter:    NodeUnschedulable, TaintToleration, NodeAffinity, NodePorts, NodeResourcesFit,
//	           VolumeRestrictions, NodeVolumeLimits, VolumeBinding, VolumeZone,
//	           PodTopologySpread, InterPodAffinity, DynamicResources
//	preScore:  PodTopologySpread, InterPodAffinity
//	score:     NodeResourcesFit (1), NodeAffinity (1), TaintToleration (1),
//	           InterPodAffinity (1), PodTopologySpread (1)
//	reserve:   VolumeBinding, DynamicResources
//	permit:    Gang
//	bind:      VolumeBinding, DynamicResources, DefaultBinder
//
// Gang comes first at PreFilter, so that a gang still waiting for tasks is
// rejected before anything is computed for it. NodeAffinity, NodePorts and
// NodeResourcesFit run at PreFilter only to compute their per-pod data once
// per cycle instead of once per node (NodePorts returns Skip there for a
// job that asks for no host port, so its Filter does not run).
// PodTopologySpread and InterPodAffinity work per pod (PodPreFilterPlugin),
// over nodes holding the job's pods placed earlier in the cycle, and
// return Skip for a pod without pod (anti-)affinity or DoNotSchedule
// spread constraints (and, for InterPodAffinity, when no existing pod has
// required anti-affinity). Filters run in kube-scheduler's order: a node
// is rejected by the first filter that fails, so the order decides which
// reason a node counts under in the message, and the messages must match
// kube-scheduler's. The volume plugins also work per pod and return Skip
// for a pod without volumes of their kind. VolumeBinding reserves the
// volumes it picked and, as the first Bind plugin, binds them and waits
// for the claims before it passes the pod to DefaultBinder (what
// kube-scheduler does at PreBind). DynamicResources comes last at
// PreFilter and Filter, as in kube-scheduler: it allocates devices, the
// costliest check, only on nodes every other filter admitted; it holds
// the devices it picked at Reserve and writes the claims' allocations as a
// Bind plugin before DefaultBinder (kube-scheduler's PreBind).
// TopologyAware is a PlacementPlugin: it proposes, for a gang with a
// topology constraint, the domains (racks, blocks) to place it in. The
// result is fresh: callers may change it.
func DefaultProfile(schedulerName string) frameworkruntime.ProfileSpec {
	refs := func(names ...string) frameworkruntime.PluginSet {
		set := make(frameworkruntime.PluginSet, len(names))
		for i, n := range names {
			set[i] = frameworkruntime.PluginRef{Name: n}
		}
		return set
	}
	return frameworkruntime.ProfileSpec{
		SchedulerName: schedulerName,
		Plugins: map[frameworkruntime.ExtensionPoint]frameworkruntime.PluginSet{
			frameworkruntime.QueueSortPoint: refs(prioritysort.Name),
			frameworkruntime.PreFilterPoint: refs(gang.Name, capacity.Name, nodeaffinity.Name, nodeports.Name, noderesources.Name,
				volumerestrictions.Name, nodevolumelimits.Name, volumebinding.Name, volumezone.Name,
				podtopologyspread.Name, interpodaffinity.Name, dynamicresources.Name, topologyaware.Name),
			frameworkruntime.FilterPoint: refs(nodeunschedulable.Name, tainttoleration.Name, nodeaffinity.Name, nodeports.Name, noderesources.Name,
				volumerestrictions.Name, nodevolumelimits.Name, volumebinding.Name, volumezone.Name,
				podtopologyspread.Name, interpodaffinity.Name, dynamicresources.Name),
			frameworkruntime.PreScorePoint: refs(podtopologyspread.Name, interpodaffinity.Name),
			frameworkruntime.ScorePoint: {
				{Name: noderesources.Name, Weight: 1},
				{Name: nodeaffinity.Name, Weight: 1},
				{Name: tainttoleration.Name, Weight: 1},
				{Name: interpodaffinity.Name, Weight: 1},
				{Name: podtopologyspread.Name, Weight: 1},
			},
			frameworkruntime.ReservePoint:    refs(capacity.Name, volumebinding.Name, dynamicresources.Name),
			frameworkruntime.PermitPoint:     refs(gang.Name),
			frameworkruntime.PostFilterPoint: refs(capacity.ReservationName, capacity.ReclaimName, defaultpreemption.Name),
			frameworkruntime.BindPoint:       refs(volumebinding.Name, dynamicresources.Name, defaultbinder.Name),
		},
	}
}
