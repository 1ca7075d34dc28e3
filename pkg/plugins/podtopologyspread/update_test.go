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

package podtopologyspread

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
	"github.com/batch-scheduler/batch-scheduler/pkg/plugins/internal/testutil"
	st "github.com/batch-scheduler/batch-scheduler/pkg/testing"
)

const regionKey = v1.LabelTopologyRegion

// randomCluster builds the random-ish clusters of the differential tests.
type randomCluster struct {
	rng  *rand.Rand
	next int
}

func (r *randomCluster) pick(options ...string) string { return options[r.rng.IntN(len(options))] }

// pod returns a random existing pod: its app and rev labels and
// namespace, finished (not counted) or terminating now and then.
func (r *randomCluster) pod() *v1.Pod {
	r.next++
	w := st.MakePod().Name(fmt.Sprintf("p%d", r.next)).Namespace(r.pick("default", "default", "default", "other"))
	if app := r.pick("x", "x", "y", ""); app != "" {
		w = w.Label("app", app)
	}
	if r.rng.IntN(2) == 0 {
		w = w.Label("rev", r.pick("1", "2"))
	}
	switch r.rng.IntN(12) {
	case 0:
		w = w.Phase(v1.PodSucceeded)
	case 1:
		w = w.Terminating()
	}
	return w.Obj()
}

// constraint returns a random DoNotSchedule constraint: key, maxSkew,
// selector (an empty one now and then), minDomains, matchLabelKeys and
// node inclusion policies.
func (r *randomCluster) constraint() v1.TopologySpreadConstraint {
	c := spread(r.pick(hostKey, zoneKey, zoneKey, regionKey), int32(1+r.rng.IntN(2)), r.pick("x", "x", "y"))
	switch r.rng.IntN(8) {
	case 0:
		c.LabelSelector = &metav1.LabelSelector{}
	case 1:
		c.WhenUnsatisfiable = v1.ScheduleAnyway
	}
	if r.rng.IntN(3) == 0 {
		c.MinDomains = ptr.To(int32(2 + r.rng.IntN(4)))
	}
	if r.rng.IntN(4) == 0 {
		c.MatchLabelKeys = []string{"rev"}
	}
	if r.rng.IntN(3) == 0 {
		c.NodeAffinityPolicy = ptr.To(v1.NodeInclusionPolicyIgnore)
	}
	if r.rng.IntN(3) == 0 {
		c.NodeTaintsPolicy = ptr.To(v1.NodeInclusionPolicyHonor)
	}
	return c
}

// incoming returns the pod to schedule: one or two constraints, and now
// and then a node selector or a toleration, which the inclusion policies
// read.
func (r *randomCluster) incoming() *v1.Pod {
	p := r.pod()
	p.Spec.TopologySpreadConstraints = []v1.TopologySpreadConstraint{r.constraint()}
	if r.rng.IntN(3) == 0 {
		p.Spec.TopologySpreadConstraints = append(p.Spec.TopologySpreadConstraints, r.constraint())
	}
	if r.rng.IntN(4) == 0 {
		p.Spec.NodeSelector = map[string]string{regionKey: "r1"}
	}
	if r.rng.IntN(3) == 0 {
		p.Spec.Tolerations = []v1.Toleration{{Key: "dedicated", Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoSchedule}}
	}
	return p
}

// nodes returns 3 to 8 nodes with pods: a hostname each, a zone (a to d)
// and a region (r1, r2) most of the time, a NoSchedule taint now and then.
func (r *randomCluster) nodes() []*framework.NodeInfo {
	var out []*framework.NodeInfo
	for i := range 3 + r.rng.IntN(6) {
		name := fmt.Sprintf("n%d", i)
		w := st.MakeNode().Name(name).Label(hostKey, name)
		if r.rng.IntN(6) > 0 {
			w = w.Label(zoneKey, r.pick("a", "b", "c", "d"))
		}
		if r.rng.IntN(5) > 0 {
			w = w.Label(regionKey, r.pick("r1", "r2"))
		}
		if r.rng.IntN(5) == 0 {
			w = w.Taint("dedicated", "batch", v1.TaintEffectNoSchedule)
		}
		ni := framework.NewNodeInfo(w.Obj())
		for range r.rng.IntN(6) {
			testutil.Place(ni, r.pod())
		}
		out = append(out, ni)
	}
	return out
}

// filterAll returns the plugin's verdict for incoming on every node with
// state.
func filterAll(t *testing.T, state *framework.CycleState, incoming *v1.Pod, nodes []*framework.NodeInfo) []string {
	t.Helper()
	out := make([]string, len(nodes))
	for i, n := range nodes {
		out[i] = testutil.Outcome((&PodTopologySpread{}).Filter(t.Context(), state, incoming, n))
	}
	return out
}

// rerun returns the verdicts of PreFilterPod run again over nodes, then
// Filter.
func rerun(t *testing.T, incoming *v1.Pod, nodes []*framework.NodeInfo) []string {
	t.Helper()
	state := framework.NewCycleState()
	if s := (&PodTopologySpread{}).PreFilterPod(t.Context(), state, incoming, nodes); !s.IsSuccess() {
		t.Fatalf("PreFilterPod again = %v", s)
	}
	return filterAll(t, state, incoming, nodes)
}

// For random clusters and pods, the state PreFilterPod wrote, updated by
// AddPod and RemovePod as pods leave and join nodes (those that were
// there, put back or not, and new ones), gives on every node the verdict
// of PreFilterPod run again over the changed nodes: the counts per
// domain, under the node inclusion policies, and the global minimum with
// minDomains. A clone taken before the changes is not touched by them.
func TestAddRemovePodMatchesPreFilterPodAgain(t *testing.T) {
	pl := &PodTopologySpread{}
	const cases = 2000
	updated, changedVerdicts := 0, 0
	for seed := range uint64(cases) {
		r := &randomCluster{rng: rand.New(rand.NewPCG(seed, 11))}
		nodes := r.nodes()
		incoming := r.incoming()
		state := framework.NewCycleState()
		if s := pl.PreFilterPod(t.Context(), state, incoming, nodes); s.IsSkip() {
			continue
		} else if !s.IsSuccess() {
			t.Fatalf("seed %d: PreFilterPod = %v", seed, s)
		}
		updated++
		before := filterAll(t, state, incoming, nodes)
		original := state
		if r.rng.IntN(2) == 0 {
			state = state.Clone()
		}
		testutil.ApplyRandomChanges(t, r.rng, seed, pl, state, incoming, nodes, 1+r.rng.IntN(10),
			func(n *framework.NodeInfo) *framework.TaskInfo { return testutil.Place(n, r.pod()) })
		got, want := filterAll(t, state, incoming, nodes), rerun(t, incoming, nodes)
		if !slices.Equal(got, want) {
			t.Fatalf("seed %d: verdicts after the changes = %q, PreFilterPod again gives %q", seed, got, want)
		}
		if !slices.Equal(want, before) {
			changedVerdicts++
		}
		if state != original {
			if after := filterAll(t, original, incoming, nodes); !slices.Equal(after, before) {
				t.Fatalf("seed %d: the changes to a clone changed the original's verdicts from %q to %q", seed, before, after)
			}
		}
	}
	if updated < cases/2 || changedVerdicts < cases/20 {
		t.Errorf("%d of %d cases updated a state, %d changed a verdict: the generator is too tame", updated, cases, changedVerdicts)
	}
}

// AddPod and RemovePod refuse a state written for another pod (or none),
// and a node the state did not count.
func TestUpdateWithoutState(t *testing.T) {
	pl := &PodTopologySpread{}
	nodes := []*framework.NodeInfo{framework.NewNodeInfo(testNodes(false)[0])}
	incoming := podWith("p", "x", spread(zoneKey, 1, "x"))
	existing := podWith("e", "x")
	existing.Spec.NodeName = "n1"
	nodes[0].AddPod(existing)
	task := nodes[0].Pods[0]
	state := framework.NewCycleState()
	if s := pl.RemovePod(t.Context(), state, incoming, task, nodes[0]); s.Code() != framework.Error {
		t.Errorf("RemovePod without a state = %v, want an error", s)
	}
	if s := pl.PreFilterPod(t.Context(), state, incoming, nodes); !s.IsSuccess() {
		t.Fatalf("PreFilterPod = %v", s)
	}
	if s := pl.AddPod(t.Context(), state, podWith("q", "x", spread(zoneKey, 1, "x")), task, nodes[0]); s.Code() != framework.Error {
		t.Errorf("AddPod for another pod = %v, want an error", s)
	}
	unseen := framework.NewNodeInfo(testNodes(false)[2]) // zone b, not counted
	if s := pl.AddPod(t.Context(), state, incoming, task, unseen); s.Code() != framework.Error {
		t.Errorf("AddPod on a node PreFilterPod did not count = %v, want an error", s)
	}
}
