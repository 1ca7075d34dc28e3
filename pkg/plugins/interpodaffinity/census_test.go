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
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
	"github.com/batch-scheduler/batch-scheduler/pkg/plugins/internal/testutil"
)

// census is an AffinityCensus that says what it is told.
type census struct{ affinity, anti bool }

func (c census) MayHoldAffinity() bool             { return c.affinity }
func (c census) MayHoldRequiredAntiAffinity() bool { return c.anti }

// TestCensusSparesTheWalk checks that PreFilterPod and PreScore trust the
// cycle's census when it says no node holds a pod with (anti-)affinity,
// and walk the nodes otherwise.
func TestCensusSparesTheWalk(t *testing.T) {
	pl := newPlugin(t)
	incoming := pod("p", "batch").Obj()
	// n2 holds a pod whose required anti-affinity keeps batch pods out of
	// zone a.
	var nodes []*framework.NodeInfo
	for _, n := range testNodes() {
		var existing []*v1.Pod
		if n.Name == "n2" {
			// It also prefers batch pods in its zone, which scores.
			existing = append(existing, preferred(withTerms(pod("x", "").Obj(), nil, []affTerm{{app: "batch", key: zoneKey}}), false, "batch", zoneKey, 5))
		}
		nodes = append(nodes, testutil.NodeInfo(t, n, existing...))
	}
	preFilter := func(c framework.AffinityCensus) bool {
		t.Helper()
		state := framework.NewCycleState()
		if c != nil {
			framework.WriteAffinityCensus(state, c)
		}
		s := pl.PreFilterPod(t.Context(), state, incoming, nodes)
		if !s.IsSuccess() && !s.IsSkip() {
			t.Fatalf("PreFilterPod = %v", s)
		}
		return s.IsSkip()
	}
	preScore := func(c framework.AffinityCensus) bool {
		t.Helper()
		state := framework.NewCycleState()
		if c != nil {
			framework.WriteAffinityCensus(state, c)
		}
		s := pl.PreScore(t.Context(), state, incoming, nodes)
		if !s.IsSuccess() && !s.IsSkip() {
			t.Fatalf("PreScore = %v", s)
		}
		return s.IsSkip()
	}
	if preFilter(nil) || preFilter(census{affinity: true, anti: true}) {
		t.Error("PreFilterPod skipped with an existing pod's anti-affinity matching, without a census or with one that says so")
	}
	if !preFilter(census{affinity: true, anti: false}) {
		t.Error("PreFilterPod walked the nodes though the census says no pod has required anti-affinity")
	}
	if preScore(nil) || preScore(census{affinity: true}) {
		t.Error("PreScore skipped with a pod with preferred affinity on a node, without a census or with one that says so")
	}
	if !preScore(census{}) {
		t.Error("PreScore walked the nodes though the census says no pod has (anti-)affinity")
	}
}
