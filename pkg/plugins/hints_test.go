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

package plugins_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	testingclock "k8s.io/utils/clock/testing"

	configapi "github.com/batch-scheduler/batch-scheduler/pkg/apis/config"
	"github.com/batch-scheduler/batch-scheduler/pkg/cache"
	defaulthandler "github.com/batch-scheduler/batch-scheduler/pkg/eventhandlers/default"
	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
	frameworkruntime "github.com/batch-scheduler/batch-scheduler/pkg/framework/runtime"
	"github.com/batch-scheduler/batch-scheduler/pkg/plugins"
	"github.com/batch-scheduler/batch-scheduler/pkg/plugins/internal/testutil"
	"github.com/batch-scheduler/batch-scheduler/pkg/schedulingqueue"
	st "github.com/batch-scheduler/batch-scheduler/pkg/testing"
)

// nodeVariant is one point of the space of nodes the test explores.
type nodeVariant struct {
	unschedulable bool
	zone          string
	tainted       bool
	cpu           string
}

func (v nodeVariant) node(rv int) *v1.Node {
	w := st.MakeNode().Name("n1").RV(fmt.Sprint(rv)).Label("zone", v.zone).Unschedulable(v.unschedulable).
		Capacity(res{v1.ResourceCPU: v.cpu, v1.ResourceMemory: "8Gi", v1.ResourcePods: "10"})
	if v.tainted {
		w = w.Taint("dedicated", "batch", v1.TaintEffectNoSchedule)
	}
	return w.Obj()
}

func (v nodeVariant) String() string {
	return fmt.Sprintf("{unschedulable=%v zone=%s tainted=%v cpu=%s}", v.unschedulable, v.zone, v.tainted, v.cpu)
}

// neighbours returns the variants that differ from v in one property: one
// node update, raising one event.
func (v nodeVariant) neighbours() []nodeVariant {
	a, b, c, d := v, v, v, v
	a.unschedulable = !v.unschedulable
	b.zone = map[string]string{"a": "b", "b": "a"}[v.zone]
	c.tainted = !v.tainted
	d.cpu = map[string]string{"1": "4", "4": "1"}[v.cpu]
	return []nodeVariant{a, b, c, d}
}

func allNodeVariants() []nodeVariant {
	var out []nodeVariant
	for _, u := range []bool{false, true} {
		for _, z := range []string{"a", "b"} {
			for _, tainted := range []bool{false, true} {
				for _, cpu := range []string{"1", "4"} {
					out = append(out, nodeVariant{u, z, tainted, cpu})
				}
			}
		}
	}
	return out
}

// allPods returns pods that differ in what each filter looks at: CPU, a
// node selector, a toleration of the node's taint and of cordoning.
func allPods() []*v1.Pod {
	var out []*v1.Pod
	for _, cpu := range []string{"0", "2"} {
		for _, selector := range []bool{false, true} {
			for _, tolerates := range []bool{false, true} {
				for _, cordonOK := range []bool{false, true} {
					w := st.MakePod().Name(fmt.Sprintf("p-cpu%s-sel%v-tol%v-cordon%v", cpu, selector, tolerates, cordonOK))
					if cpu != "0" {
						w = w.Req(res{v1.ResourceCPU: cpu})
					}
					if selector {
						w = w.NodeSelector(map[string]string{"zone": "a"})
					}
					if tolerates {
						w = w.Toleration("dedicated", "batch", v1.TaintEffectNoSchedule)
					}
					if cordonOK {
						w = w.TolerationExists(v1.TaintNodeUnschedulable, v1.TaintEffectNoSchedule)
					}
					out = append(out, w.Obj())
				}
			}
		}
	}
	return out
}

// One rule decides whether a pod may run on a node: the plugins. For every
// in-tree plugin with a Filter, the test explores a small space of
// clusters and changes of the objects the plugin's events are about: for
// each pod the plugin rejected on some node before a change, a job parked
// with the plugin's events (as the scheduler records them) must be
// retried, through the real default handler, cache and queue, whenever
// the plugin admits the pod after the change on a node where it did not
// before. Its queueing hints may answer Queue needlessly (it only costs an
// attempt), never QueueSkip wrongly; the plugins whose Filter reads the
// node object alone are held to more, an exact answer (exploreNodeRules).
// Every resource a plugin registers events of must be changed by its
// exploration (or be checked by another test, eventsExploredElsewhere).
// The disagreements found and not fixed yet are listed, each narrowly, in
// knownHintGaps (hints_explore_test.go); any other fails the test.
//
// The plugins come from the in-tree registry, so that a new plugin with a
// Filter fails this test until it is given an explorer below (or, if it
// truly cannot be explored this way, an exclusion saying why).
func TestQueueingHintsAgreeWithFilters(t *testing.T) {
	reg := plugins.NewInTreeRegistry()
	var explored []string
	for _, name := range reg.Names() {
		factory, err := reg.Lookup(name)
		if err != nil {
			t.Fatal(err)
		}
		var args runtime.Object
		if a, ok := requiredArgs[name]; ok {
			args = configapi.NewRawArgs("", []byte(a))
		}
		pl, err := factory(t.Context(), args, testutil.NewHandle())
		if err != nil {
			t.Fatalf("building %s: %v", name, err)
		}
		p, isFilter := pl.(framework.FilterPlugin)
		reason, excluded := hintExclusions[name]
		explore, hasExplorer := hintExplorers[name]
		switch {
		case !isFilter:
			if excluded {
				t.Errorf("%s is excluded (%s) but has no Filter any more: drop the exclusion", name, reason)
			}
			if hasExplorer {
				t.Errorf("%s has an explorer but no Filter any more: drop the explorer", name)
			}
			continue
		case excluded && hasExplorer:
			t.Errorf("%s is both explored and excluded (%s)", name, reason)
			continue
		case excluded:
			t.Logf("%s is not explored: %s", name, reason)
			continue
		case !hasExplorer:
			t.Errorf("%s has a Filter but this test does not explore it: give it an explorer in hintExplorers "+
				"(or, if it truly cannot be explored, an entry saying why in hintExclusions)", name)
			continue
		}
		explored = append(explored, name)
		t.Run(name, func(t *testing.T) {
			res := explore(t, reg, name, p)
			// Every resource the plugin registers events of is changed by
			// the exploration, or covered by another test.
			for _, e := range pl.(framework.EnqueueExtensions).EventsToRegister() {
				r := e.Event.Resource
				if res.changed[r] {
					continue
				}
				if _, ok := eventsExploredElsewhere[name][r]; ok {
					continue
				}
				t.Errorf("%s registers %v, but its exploration changes no %s", name, e.Event, r)
			}
			// The space must hold both kinds of change: some after which
			// the plugin admits the pod, others after which it does not.
			if res.outcomes[true] == 0 || res.outcomes[false] == 0 {
				t.Errorf("outcomes exercised %v; want both changes that need a retry and changes that do not", res.outcomes)
			}
			t.Logf("%d parked jobs checked: %d needed a retry, %d did not (%d retried for nothing)",
				res.outcomes[true]+res.outcomes[false], res.outcomes[true], res.outcomes[false], res.needless)
			for i, g := range knownHintGaps {
				if g.plugin != name {
					continue
				}
				if res.gaps[i] == 0 {
					t.Errorf("known gap no longer seen, drop its entry from knownHintGaps: %s", g.why)
					continue
				}
				t.Logf("known gap, %d jobs left parked that should have been retried (the first: %s): %s", res.gaps[i], res.gapExample[i], g.why)
			}
		})
	}
	for name, reason := range hintExclusions {
		if !reg.Has(name) {
			t.Errorf("excluded plugin %s (%s) is not in the registry any more: drop the exclusion", name, reason)
		}
	}
	for name := range hintExplorers {
		if !reg.Has(name) {
			t.Errorf("explored plugin %s is not in the registry any more: drop its explorer", name)
		}
	}
	for _, g := range knownHintGaps {
		if _, ok := hintExplorers[g.plugin]; !ok {
			t.Errorf("known gap of %s, which is not explored: %s", g.plugin, g.why)
		}
	}
	for name, byResource := range eventsExploredElsewhere {
		for r := range byResource {
			if !registers(t, reg, name, r) {
				t.Errorf("%s no longer registers %s events: drop the entry of eventsExploredElsewhere", name, r)
			}
		}
	}
	t.Logf("explored: %v", explored)
}

// requiredArgs are the args of the in-tree plugins that cannot be built
// without (only to see whether they have a Filter).
var requiredArgs = map[string]string{"NodeLedger": "nodeSelector: shared=vms"}

// hintExplorers explores each in-tree plugin with a Filter. An explorer
// checks the plugin's hints against its Filter and returns what it
// explored.
var hintExplorers = map[string]func(t *testing.T, reg *frameworkruntime.Registry, name string, p framework.FilterPlugin) exploreResult{
	"NodeUnschedulable": exploreNodeRules,
	"NodeAffinity":      exploreNodeRules,
	"TaintToleration":   exploreNodeRules,
	"NodeResourcesFit": func(t *testing.T, reg *frameworkruntime.Registry, name string, p framework.FilterPlugin) exploreResult {
		res := exploreNodeRules(t, reg, name, p)
		res.merge(exploreSpace(t, reg, name, fitSpace()))
		return res
	},
	"NodePorts":          spaceExplorer(nodePortsSpace),
	"VolumeRestrictions": spaceExplorer(volumeRestrictionsSpace),
	"NodeVolumeLimits":   spaceExplorer(nodeVolumeLimitsSpace),
	"VolumeBinding":      spaceExplorer(volumeBindingStaticSpace, volumeBindingProvisionSpace),
	"VolumeZone":         spaceExplorer(volumeZoneSpace),
	"InterPodAffinity":   spaceExplorer(interPodAffinitySpace),
	"PodTopologySpread":  spaceExplorer(podTopologySpreadSpace),
	"DynamicResources":   spaceExplorer(dynamicResourcesSpace),
}

// hintExclusions names the in-tree plugins with a Filter that this test
// does not explore, each with the reason. The test fails when an entry's
// plugin leaves the registry or loses its Filter, so that the list stays
// true. Every Filter plugin is explored today.
var hintExclusions = map[string]string{}

// eventsExploredElsewhere names, per plugin, the resources of events it
// registers that its exploration here does not change, each with the
// test that checks their hints against its Filter instead.
var eventsExploredElsewhere = map[string]map[framework.EventResource]string{
	"NodeResourcesFit": {
		framework.Grant: "TestGrantHintsAgreeWithFit: grants reach the cache through the two-level handler, not the default one",
	},
}

// registers reports whether the plugin name registers events of r.
func registers(t *testing.T, reg *frameworkruntime.Registry, name string, r framework.EventResource) bool {
	factory, err := reg.Lookup(name)
	if err != nil {
		return false
	}
	pl, err := factory(t.Context(), nil, testutil.NewHandle())
	if err != nil {
		t.Fatal(err)
	}
	ext, ok := pl.(framework.EnqueueExtensions)
	if !ok {
		return false
	}
	return slices.ContainsFunc(ext.EventsToRegister(), func(e framework.ClusterEventWithHint) bool { return e.Event.Resource == r })
}

// spaceExplorer explores the spaces in turn.
func spaceExplorer(spaces ...func() space) func(*testing.T, *frameworkruntime.Registry, string, framework.FilterPlugin) exploreResult {
	return func(t *testing.T, reg *frameworkruntime.Registry, name string, _ framework.FilterPlugin) exploreResult {
		var res exploreResult
		for _, sp := range spaces {
			res.merge(exploreSpace(t, reg, name, sp()))
		}
		return res
	}
}

// exploreNodeRules explores a plugin whose Filter reads the node object:
// for every pod and node change (a node added, or an update of one
// property), a job that the plugin rejected on the node before the change
// is run through the real default handler, cache and queue, with the
// events the plugin registered; it must be retried exactly when the
// plugin's Filter passes the pod on the node after the change.
func exploreNodeRules(t *testing.T, _ *frameworkruntime.Registry, name string, p framework.FilterPlugin) exploreResult {
	passes := func(p framework.FilterPlugin, pod *v1.Pod, node *v1.Node) bool {
		return p.Filter(t.Context(), framework.NewCycleState(), pod, framework.NewNodeInfo(node)).IsSuccess()
	}
	res := newExploreResult()
	res.changed[framework.Node] = true

	// seen counts the outcomes exercised, so that the test fails if the
	// space it explores stops covering both.
	seen := map[string]map[bool]int{}
	pods := allPods()
	for _, newV := range allNodeVariants() {
		changes := []*nodeVariant{nil} // nil: the node is added
		for _, oldV := range newV.neighbours() {
			changes = append(changes, &oldV)
		}
		for _, oldV := range changes {
			for _, pod := range pods {
				var oldNode *v1.Node
				change := "add"
				if oldV != nil {
					oldNode = oldV.node(1)
					if passes(p, pod, oldNode) {
						// The plugin did not reject the pod on this
						// node: nothing for its hint to undo.
						continue
					}
					change = fmt.Sprintf("%v -> %v", *oldV, newV)
				}
				newNode := newV.node(2)
				want := passes(p, pod, newNode)
				got := retriedAfter(t, name, p, pod, oldNode, newNode)
				if got != want {
					t.Errorf("%s, pod %s, node %s: the job was retried: %v; the filter passes after the change: %v",
						name, pod.Name, change, got, want)
				}
				kind := "update"
				if oldV == nil {
					kind = "add"
				}
				if seen[kind] == nil {
					seen[kind] = map[bool]int{}
				}
				seen[kind][want]++
				res.outcomes[want]++
			}
		}
	}
	for _, kind := range []string{"add", "update"} {
		if c := seen[kind]; c[true] == 0 || c[false] == 0 {
			t.Errorf("%s, node %s: outcomes exercised %v; want both a retry and none", name, kind, c)
		}
	}
	return res
}

// retriedAfter parks a job of pod, rejected by plugin p, with the events
// the plugin registered (as the scheduler records them), then lets the real default handler see oldNode
// (already known to the cache; nil if the node is new) become newNode. It
// reports whether the job left the unschedulable queue.
func retriedAfter(t *testing.T, plugin string, p framework.FilterPlugin, pod *v1.Pod, oldNode, newNode *v1.Node) bool {
	t.Helper()
	clk := testingclock.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	m, err := sharedMetrics()
	if err != nil {
		t.Fatal(err)
	}
	c, err := cache.New(cache.Options{Clock: clk, Metrics: m})
	if err != nil {
		t.Fatal(err)
	}
	h, err := defaulthandler.NewWithArgs(c, defaulthandler.Args{})
	if err != nil {
		t.Fatal(err)
	}
	if oldNode != nil {
		h.AddNode(oldNode)
	}
	h.AddPod(pod)
	qj, err := c.Queue().Pop(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	var events []framework.PluginEvent
	for _, e := range p.(framework.EnqueueExtensions).EventsToRegister() {
		events = append(events, framework.PluginEvent{Plugin: plugin, ClusterEventWithHint: e})
	}
	attempt := schedulingqueue.Attempt{Reason: "rejected by " + plugin, Events: events}
	if err := c.Queue().AddUnschedulable(qj, attempt); err != nil {
		t.Fatal(err)
	}
	if c.Queue().Lengths().Unschedulable != 1 {
		t.Fatalf("the job is not parked: %+v", c.Queue().Lengths())
	}
	clk.Step(schedulingqueue.DefaultMaxBackoff)
	if oldNode == nil {
		h.AddNode(newNode)
	} else {
		h.UpdateNode(oldNode, newNode)
	}
	return c.Queue().Lengths().Unschedulable == 0
}
