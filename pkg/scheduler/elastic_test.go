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
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"

	st "github.com/batch-scheduler/batch-scheduler/pkg/testing"
)

// An elastic gang's pods above its quorum are the first victims on a
// node, before a single pod that is less important by priority and age:
// the gang keeps running, the single pod would lose all its work.
func TestElasticGangPodsAboveQuorumGoFirst(t *testing.T) {
	for _, tt := range []struct {
		name         string
		minAvailable string
		wantGang     bool
	}{
		{name: "a gang above its quorum gives a pod", minAvailable: "2", wantGang: true},
		{name: "a gang at its quorum would go whole: a single pod goes", minAvailable: "3", wantGang: false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			ev := newEvictions(h)
			for _, n := range []string{"n0", "n1", "n2"} {
				h.addNode(n, "2")
			}
			// e runs 3 pods, one per node; each node also runs a single
			// pod, which started later (is less important by age).
			for i, n := range []string{"n0", "n1", "n2"} {
				h.addPod(running("e-"+string(rune('0'+i)), n, 10, "1", 0).Group("e").MinAvailable(tt.minAvailable).Obj())
			}
			h.addPod(running("single", "n0", 10, "1", 30).Obj())
			h.addPod(running("fill-1", "n1", 10, "1", 30).Obj())
			h.addPod(running("fill-2", "n2", 10, "1", 30).Obj())
			h.addPod(st.MakePod().Name("incoming").Priority(100).Req(res{v1.ResourceCPU: "1"}).Obj())
			h.cycle()
			got := ev.evicted()
			if len(got) != 1 || strings.HasPrefix(got[0], "e-") != tt.wantGang {
				t.Errorf("evicted %v, want one pod, of gang e: %v", got, tt.wantGang)
			}
		})
	}
}

// A gang's members that are already going (terminating) do not count
// towards what it keeps: a victim gang of quorum 2 with one member
// terminating goes whole rather than keep one pod.
func TestGangMembersAlreadyGoingDoNotCountTowardsItsQuorum(t *testing.T) {
	h := newHarness(t)
	ev := newEvictions(h)
	for _, n := range []string{"n0", "n1", "n2"} {
		h.addNode(n, "1")
	}
	h.addPod(running("g-0", "n0", 10, "1", 0).Group("g").MinAvailable("2").Terminating().Obj())
	h.addPod(running("g-1", "n1", 10, "1", 0).Group("g").MinAvailable("2").Obj())
	h.addPod(running("g-2", "n2", 10, "1", 0).Group("g").MinAvailable("2").Obj())
	h.addPod(st.MakePod().Name("incoming").Priority(100).Req(res{v1.ResourceCPU: "1"}).Obj())
	h.cycle()
	if got := ev.evicted(); strings.Join(got, ",") != "g-1,g-2" {
		t.Errorf("evicted %v, want the gang's two members that stay, g-1 and g-2", got)
	}
}
