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

package scheduler

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync/atomic"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
	frameworkruntime "github.com/batch-scheduler/batch-scheduler/pkg/framework/runtime"
	"github.com/batch-scheduler/batch-scheduler/pkg/plugins"
	"github.com/batch-scheduler/batch-scheduler/pkg/plugins/interpodaffinity"
	"github.com/batch-scheduler/batch-scheduler/pkg/plugins/podtopologyspread"
	"github.com/batch-scheduler/batch-scheduler/pkg/tenancy"
	st "github.com/batch-scheduler/batch-scheduler/pkg/testing"
)

// affinityAndSpread are what InterPodAffinity and PodTopologySpread
// implement but PodPreFilterExtensions.
type affinityAndSpread interface {
	framework.PodPreFilterPlugin
	framework.FilterPlugin
	framework.PreScorePlugin
	framework.ScorePlugin
	framework.EnqueueExtensions
}

// withoutExtensions is a plugin with its PodPreFilterExtensions hidden:
// the victim search then runs PreFilterPod again for each check, as it
// did before the extensions (the baseline of the tests and benchmarks).
type withoutExtensions struct{ affinityAndSpread }

// registryWrapping returns the in-tree registry with InterPodAffinity's
// and PodTopologySpread's plugins wrapped by wrap.
func registryWrapping(t testing.TB, wrap func(framework.Plugin) framework.Plugin) *frameworkruntime.Registry {
	t.Helper()
	return registryReplacing(t, wrap, interpodaffinity.Name, podtopologyspread.Name)
}

// registryReplacing is the in-tree registry with the plugins named
// wrapped.
func registryReplacing(t testing.TB, wrap func(framework.Plugin) framework.Plugin, names ...string) *frameworkruntime.Registry {
	t.Helper()
	inTree, out := plugins.NewInTreeRegistry(), frameworkruntime.NewRegistry()
	for _, n := range inTree.Names() {
		factory, err := inTree.Lookup(n)
		if err != nil {
			t.Fatal(err)
		}
		if slices.Contains(names, n) {
			inner := factory
			factory = func(ctx context.Context, args runtime.Object, h framework.Handle) (framework.Plugin, error) {
				p, err := inner(ctx, args, h)
				if err != nil {
					return nil, err
				}
				return wrap(p), nil
			}
		}
		if err := out.Register(n, factory); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// rerunRegistry is the in-tree registry with the extensions of
// InterPodAffinity and PodTopologySpread hidden.
func rerunRegistry(t testing.TB) *frameworkruntime.Registry {
	return registryWrapping(t, func(p framework.Plugin) framework.Plugin {
		if _, ok := p.(framework.PodPreFilterExtensions); !ok {
			t.Fatalf("plugin %s has no PodPreFilterExtensions to hide", p.Name())
		}
		w := withoutExtensions{p.(affinityAndSpread)}
		if _, ok := any(w).(framework.PodPreFilterExtensions); ok {
			t.Fatal("the wrapper does not hide the extensions")
		}
		return w
	})
}

// countingAffinity is InterPodAffinity, extensions and all, counting its
// PreFilterPod calls.
type countingAffinity struct {
	*interpodaffinity.InterPodAffinity
	calls *atomic.Int64
}

func (c countingAffinity) PreFilterPod(ctx context.Context, state *framework.CycleState, pod *v1.Pod, nodes []*framework.NodeInfo) *framework.Status {
	c.calls.Add(1)
	return c.InterPodAffinity.PreFilterPod(ctx, state, pod, nodes)
}

// affinityPod returns a pending pod with priority and cpu whose required
// pod affinity wants a pod labelled app=app on its node.
func affinityPod(name, app string, priority int32, cpu string) *v1.Pod {
	p := st.MakePod().Name(name).Priority(priority).Req(res{v1.ResourceCPU: cpu}).Obj()
	p.Spec.Affinity = &v1.Affinity{PodAffinity: &v1.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []v1.PodAffinityTerm{{
		LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}},
		TopologyKey:   v1.LabelHostname,
	}}}}
	return p
}

// withAntiAffinity adds to pod a required anti-affinity term against the
// pods labelled app=app within key.
func withAntiAffinity(pod *v1.Pod, app, key string) *v1.Pod {
	if pod.Spec.Affinity == nil {
		pod.Spec.Affinity = &v1.Affinity{}
	}
	if pod.Spec.Affinity.PodAntiAffinity == nil {
		pod.Spec.Affinity.PodAntiAffinity = &v1.PodAntiAffinity{}
	}
	a := pod.Spec.Affinity.PodAntiAffinity
	a.RequiredDuringSchedulingIgnoredDuringExecution = append(a.RequiredDuringSchedulingIgnoredDuringExecution, v1.PodAffinityTerm{
		LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}},
		TopologyKey:   key,
	})
	return pod
}

// With the extensions, the victim search runs PreFilterPod once per
// preemptor pod (after the cycle's own run) and updates that state per
// victim; without them, once per check. With a queue, Capacity's
// PreFilterPod does not skip, and its extensions (which do nothing: it
// reads no node) keep the search from running PreFilterPod again.
func TestVictimSearchRunsPreFilterPodOnce(t *testing.T) {
	for _, tt := range []struct {
		name  string
		wrap  bool
		queue bool
		calls int64
	}{
		// The cycle's attempt, then the simulation's base.
		{"with the extensions", false, false, 2},
		{"with the extensions and a queue", false, true, 2},
		// Each of the 4 nodes: the check with all 3 victims off, then
		// one per reprieve (3); plus the final check.
		{"without them", true, false, 2 + 4*(1+3) + 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var calls atomic.Int64
			reg := registryWrapping(t, func(p framework.Plugin) framework.Plugin {
				ipa, ok := p.(*interpodaffinity.InterPodAffinity)
				if !ok {
					return p
				}
				counted := countingAffinity{InterPodAffinity: ipa, calls: &calls}
				if tt.wrap {
					return withoutExtensions{counted}
				}
				return counted
			})
			h := newHarnessWith(t, harnessConfig{registry: reg})
			ev := newEvictions(h)
			queue := func(p *v1.Pod) *v1.Pod { return p }
			if tt.queue {
				h.cache.SetTenantQueue(tenancy.SourceOwn, "q", &framework.QueueSpec{Name: "q", Weight: 1, Borrow: true, Lend: true, Source: "Queue q"})
				queue = func(p *v1.Pod) *v1.Pod { p.Labels[framework.QueueLabel] = "q"; return p }
			}
			for i := range 4 {
				node := fmt.Sprintf("n%d", i)
				h.addNodeObj(st.MakeNode().Name(node).Label(v1.LabelHostname, node).Capacity(res{v1.ResourceCPU: "3", v1.ResourcePods: "110"}).Obj())
				// The anchor, which may not go, keeps the affinity met.
				h.addPod(queue(running(fmt.Sprintf("anchor-%d", i), node, 1000, "0", 0).Label("app", "db").Obj()))
				for j := range 3 {
					h.addPod(queue(running(fmt.Sprintf("low-%d-%d", i, j), node, 10, "1", j).Label("app", "db").Obj()))
				}
			}
			pre := affinityPod("pre", "db", 100, "1")
			pre.Labels = map[string]string{}
			h.addPod(queue(pre))
			h.cycle()
			// One victim makes room; the latest started goes.
			if got := ev.evicted(); len(got) != 1 {
				t.Fatalf("evicted %v, want one pod", got)
			}
			if got := calls.Load(); got != tt.calls {
				t.Errorf("InterPodAffinity's PreFilterPod ran %d times, want %d", got, tt.calls)
			}
		})
	}
}

// A candidate node's search must not leak into the next one. n1 and n2
// share zone z1, each with one victim that the preemptor's anti-affinity
// (app=x within the zone) minds: neither node works alone, since the
// other's victim stays in the zone. Only n3 (zone z2) works, with a more
// important victim. Had the search of n1 left its victim out of the
// state, n2 would look feasible with a cheaper victim and be chosen (and
// the pod would not fit there).
func TestVictimSearchDoesNotLeakBetweenNodes(t *testing.T) {
	for _, tt := range []struct {
		name     string
		registry func(testing.TB) *frameworkruntime.Registry
	}{
		{"with the extensions", func(testing.TB) *frameworkruntime.Registry { return plugins.NewInTreeRegistry() }},
		{"without them", rerunRegistry},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarnessWith(t, harnessConfig{registry: tt.registry(t)})
			ev := newEvictions(h)
			for _, n := range []struct{ name, zone string }{{"n1", "z1"}, {"n2", "z1"}, {"n3", "z2"}} {
				h.addNodeObj(st.MakeNode().Name(n.name).Label(v1.LabelHostname, n.name).Label(v1.LabelTopologyZone, n.zone).
					Capacity(res{v1.ResourceCPU: "1", v1.ResourcePods: "110"}).Obj())
			}
			h.addPod(running("v1", "n1", 10, "1", 0).Label("app", "x").Obj())
			h.addPod(running("v2", "n2", 10, "1", 0).Label("app", "x").Obj())
			h.addPod(running("v3", "n3", 20, "1", 0).Label("app", "x").Obj())
			pre := withAntiAffinity(st.MakePod().Name("pre").Priority(100).Req(res{v1.ResourceCPU: "1"}).Obj(), "x", v1.LabelTopologyZone)
			h.addPod(pre)
			h.cycle()
			if got, want := ev.evicted(), []string{"v3"}; !slices.Equal(got, want) {
				t.Errorf("evicted %v, want %v", got, want)
			}
			if got := h.apiPod(pre).Status.NominatedNodeName; got != "n3" {
				t.Errorf("pre nominated to %q, want n3", got)
			}
		})
	}
}

// preemptionScenario is a random cluster and a preemptor gang for the
// differential test: pods with labels, required (anti-)affinity and
// topology spread, of several priorities, some in victim gangs.
type preemptionScenario struct {
	nodes    []*v1.Node
	running  []*v1.Pod
	pending  []*v1.Pod
	preempts bool
}

func newPreemptionScenario(seed uint64) *preemptionScenario {
	rng := rand.New(rand.NewPCG(seed, 3))
	pick := func(options ...string) string { return options[rng.IntN(len(options))] }
	key := func() string { return pick(v1.LabelHostname, v1.LabelTopologyZone) }
	s := &preemptionScenario{}
	nodes := 3 + rng.IntN(4)
	for i := range nodes {
		name := fmt.Sprintf("n%d", i)
		s.nodes = append(s.nodes, st.MakeNode().Name(name).Label(v1.LabelHostname, name).Label(v1.LabelTopologyZone, fmt.Sprintf("z%d", i%3)).
			Capacity(res{v1.ResourceCPU: "4", v1.ResourcePods: "110"}).Obj())
		for j := range 1 + rng.IntN(4) {
			prio := []int32{10, 20, 30, 1000}[rng.IntN(4)]
			w := running(fmt.Sprintf("r-%d-%d", i, j), name, prio, "1", rng.IntN(60))
			if app := pick("a", "b", "c", ""); app != "" {
				w = w.Label("app", app)
			}
			if prio < 1000 && rng.IntN(5) == 0 {
				w = w.Group("v").MinAvailable("2")
			}
			p := w.Obj()
			if rng.IntN(6) == 0 {
				p = withAntiAffinity(p, "p", key())
			}
			s.running = append(s.running, p)
		}
	}
	size := 1 + rng.IntN(3)
	for i := range size {
		w := st.MakePod().Name(fmt.Sprintf("hi-%d", i)).Priority(100).Req(res{v1.ResourceCPU: pick("2", "3")}).Label("app", "p")
		if size > 1 {
			w = w.Group("hi").MinAvailable(fmt.Sprint(size))
		}
		p := w.Obj()
		if rng.IntN(2) == 0 {
			p.Spec.Affinity = affinityPod("", pick("a", "b"), 0, "0").Spec.Affinity
			p.Spec.Affinity.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution[0].TopologyKey = key()
		}
		if rng.IntN(2) == 0 {
			p = withAntiAffinity(p, pick("a", "b", "c", "p"), key())
		}
		if rng.IntN(2) == 0 {
			p.Spec.TopologySpreadConstraints = []v1.TopologySpreadConstraint{{
				MaxSkew: 1, TopologyKey: key(), WhenUnsatisfiable: v1.DoNotSchedule,
				LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": pick("p", "a")}},
			}}
		}
		s.pending = append(s.pending, p)
	}
	return s
}

// outcome runs one cycle of s with registry and returns what preemption
// did: the pods evicted and each pending pod's nominated node.
func (s *preemptionScenario) outcome(t *testing.T, registry *frameworkruntime.Registry) (evicted []string, nominated map[string]string) {
	h := newHarnessWith(t, harnessConfig{registry: registry})
	ev := newEvictions(h)
	for _, n := range s.nodes {
		h.addNodeObj(n.DeepCopy())
	}
	for _, p := range s.running {
		h.addPod(p.DeepCopy())
	}
	for _, p := range s.pending {
		h.addPod(p.DeepCopy())
	}
	h.cycle()
	nominated = map[string]string{}
	for _, p := range s.pending {
		nominated[p.Name] = h.apiPod(p).Status.NominatedNodeName
	}
	return ev.evicted(), nominated
}

// Over random clusters with pod affinity, anti-affinity (the preemptor's
// and the running pods') and topology spread, the victim search that
// updates the PreFilter state chooses the same victims and nominations as
// the one that runs PreFilterPod again for every check.
func TestVictimSearchUpdatesMatchRerun(t *testing.T) {
	const cases = 150
	preempted := 0
	for seed := range uint64(cases) {
		s := newPreemptionScenario(seed)
		gotEvicted, gotNominated := s.outcome(t, plugins.NewInTreeRegistry())
		wantEvicted, wantNominated := s.outcome(t, rerunRegistry(t))
		if !slices.Equal(gotEvicted, wantEvicted) || fmt.Sprint(gotNominated) != fmt.Sprint(wantNominated) {
			t.Fatalf("seed %d: with the extensions evicted %v, nominated %v; without them evicted %v, nominated %v",
				seed, gotEvicted, gotNominated, wantEvicted, wantNominated)
		}
		if len(gotEvicted) > 0 {
			preempted++
		}
	}
	if preempted < cases/4 {
		t.Errorf("only %d of %d cases preempted: the generator is too tame", preempted, cases)
	}
}
