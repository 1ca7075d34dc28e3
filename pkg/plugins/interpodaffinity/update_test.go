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

package interpodaffinity

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

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

// term returns a random term: an app, a topology key, and namespaces by
// one of the API's four ways (own, listed, selected by labels, all).
func (r *randomCluster) term() affTerm {
	t := affTerm{app: r.pick("x", "y", "z"), key: r.pick(hostKey, zoneKey, zoneKey, regionKey)}
	switch r.rng.IntN(5) {
	case 0:
		t.namespaces = []string{r.pick("default", "other")}
	case 1:
		t.nsSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"team": "a"}}
	case 2:
		t.nsSelector = &metav1.LabelSelector{}
	}
	return t
}

func (r *randomCluster) terms(max int) []affTerm {
	var out []affTerm
	for range r.rng.IntN(max + 1) {
		out = append(out, r.term())
	}
	return out
}

// pod returns a random pod: its app label, namespace, its own required
// affinity and anti-affinity terms, finished (not counted) or
// terminating now and then.
func (r *randomCluster) pod() *v1.Pod {
	r.next++
	w := pod(fmt.Sprintf("p%d", r.next), r.pick("x", "y", "z", "")).Namespace(r.pick("default", "default", "other"))
	switch r.rng.IntN(12) {
	case 0:
		w = w.Phase(v1.PodSucceeded)
	case 1:
		w = w.Terminating()
	}
	var affinity, anti []affTerm
	if r.rng.IntN(3) == 0 {
		affinity = r.terms(1)
	}
	if r.rng.IntN(2) == 0 {
		anti = r.terms(2)
	}
	return withTerms(w.Obj(), affinity, anti)
}

// incoming returns the pod to schedule: a random pod, half of the time
// with an affinity term for its own app (the first pod of a self-affine
// group passes where no pod matches yet).
func (r *randomCluster) incoming() *v1.Pod {
	p := r.pod()
	if app := p.Labels["app"]; app != "" && r.rng.IntN(2) == 0 {
		self := r.term()
		self.app, self.namespaces, self.nsSelector = app, nil, nil
		p = withTerms(p, []affTerm{self}, nil)
	}
	return p
}

// nodes returns 3 to 7 nodes with pods: a hostname each, a zone (a, b, c)
// and a region (r1, r2) most of the time.
func (r *randomCluster) nodes() []*framework.NodeInfo {
	var out []*framework.NodeInfo
	for i := range 3 + r.rng.IntN(5) {
		name := fmt.Sprintf("n%d", i)
		w := st.MakeNode().Name(name).Label(hostKey, name)
		if r.rng.IntN(5) > 0 {
			w = w.Label(zoneKey, r.pick("a", "b", "c"))
		}
		if r.rng.IntN(4) > 0 {
			w = w.Label(regionKey, r.pick("r1", "r2"))
		}
		ni := framework.NewNodeInfo(w.Obj())
		for range r.rng.IntN(5) {
			testutil.Place(ni, r.pod())
		}
		out = append(out, ni)
	}
	return out
}

// filterAll returns pl's verdict for incoming on every node with state.
func filterAll(t *testing.T, pl *InterPodAffinity, state *framework.CycleState, incoming *v1.Pod, nodes []*framework.NodeInfo) []string {
	t.Helper()
	out := make([]string, len(nodes))
	for i, n := range nodes {
		out[i] = testutil.Outcome(pl.Filter(t.Context(), state, incoming, n))
	}
	return out
}

// rerun returns the verdicts of PreFilterPod run again over nodes, then
// Filter: Skip passes every node.
func rerun(t *testing.T, pl *InterPodAffinity, incoming *v1.Pod, nodes []*framework.NodeInfo) []string {
	t.Helper()
	state := framework.NewCycleState()
	s := pl.PreFilterPod(t.Context(), state, incoming, nodes)
	if s.IsSkip() {
		return slices.Repeat([]string{"pass"}, len(nodes))
	}
	if !s.IsSuccess() {
		t.Fatalf("PreFilterPod again = %v", s)
	}
	return filterAll(t, pl, state, incoming, nodes)
}

// For random clusters and pods, the state PreFilterPod wrote, updated by
// AddPod and RemovePod as pods leave and join nodes (those that were
// there, put back or not, and new ones), gives on every node the verdict
// of PreFilterPod run again over the changed nodes. A clone taken before
// the changes is not touched by them.
func TestAddRemovePodMatchesPreFilterPodAgain(t *testing.T) {
	pl := newPlugin(t,
		&v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "default", Labels: map[string]string{"team": "a"}}},
		&v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "other", Labels: map[string]string{"team": "b"}}})
	const cases = 1500
	updated, changedVerdicts := 0, 0
	for seed := range uint64(cases) {
		r := &randomCluster{rng: rand.New(rand.NewPCG(seed, 7))}
		nodes := r.nodes()
		incoming := r.incoming()
		state := framework.NewCycleState()
		if s := pl.PreFilterPod(t.Context(), state, incoming, nodes); s.IsSkip() {
			continue
		} else if !s.IsSuccess() {
			t.Fatalf("seed %d: PreFilterPod = %v", seed, s)
		}
		updated++
		before := filterAll(t, pl, state, incoming, nodes)
		original := state
		if r.rng.IntN(2) == 0 {
			state = state.Clone()
		}
		testutil.ApplyRandomChanges(t, r.rng, seed, pl, state, incoming, nodes, 1+r.rng.IntN(8),
			func(n *framework.NodeInfo) *framework.TaskInfo { return testutil.Place(n, r.pod()) })
		got, want := filterAll(t, pl, state, incoming, nodes), rerun(t, pl, incoming, nodes)
		if !slices.Equal(got, want) {
			t.Fatalf("seed %d: verdicts after the changes = %q, PreFilterPod again gives %q", seed, got, want)
		}
		if !slices.Equal(want, before) {
			changedVerdicts++
		}
		if state != original {
			if after := filterAll(t, pl, original, incoming, nodes); !slices.Equal(after, before) {
				t.Fatalf("seed %d: the changes to a clone changed the original's verdicts from %q to %q", seed, before, after)
			}
		}
	}
	// The cases must exercise the updates: most states are not skipped,
	// and the changes often change a verdict.
	if updated < cases/2 || changedVerdicts < cases/10 {
		t.Errorf("%d of %d cases updated a state, %d changed a verdict: the generator is too tame", updated, cases, changedVerdicts)
	}
}

// AddPod and RemovePod refuse a state written for another pod (or none).
func TestUpdateWithoutState(t *testing.T) {
	pl := newPlugin(t)
	n := framework.NewNodeInfo(testNodes()[0])
	incoming := withTerms(pod("p", "web").Obj(), nil, []affTerm{{app: "db", key: hostKey}})
	other := pod("db", "db").Node("n1").Obj()
	n.AddPod(other)
	state := framework.NewCycleState()
	if s := pl.RemovePod(t.Context(), state, incoming, n.Pods[0], n); s.Code() != framework.Error {
		t.Errorf("RemovePod without a state = %v, want an error", s)
	}
	if s := pl.PreFilterPod(t.Context(), state, incoming, []*framework.NodeInfo{n}); !s.IsSuccess() {
		t.Fatalf("PreFilterPod = %v", s)
	}
	if s := pl.AddPod(t.Context(), state, pod("q", "web").Obj(), n.Pods[0], n); s.Code() != framework.Error {
		t.Errorf("AddPod for another pod = %v, want an error", s)
	}
}
