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
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
	st "github.com/batch-scheduler/batch-scheduler/pkg/testing"
)

// filteredPods is a hook that records which pods went down the filter
// path (its PreFilterPod runs once per pod filtered). The tests run
// without PostFilter plugins, whose simulation filters pods too.
func filteredPods(judge bool) (*hookPlugin, func() []string) {
	var mu sync.Mutex
	var names []string
	hook := &hookPlugin{specJudge: judge, preFilterPod: func(pod *v1.Pod, _ []*framework.NodeInfo) *framework.Status {
		mu.Lock()
		defer mu.Unlock()
		names = append(names, pod.Name)
		return nil
	}}
	return hook, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(names)
	}
}

// A gang whose pods are alike and fit nowhere (each too big for a node,
// the quorum not for the cluster) is filtered once: the
// others get the first pod's verdict, and every pod's message is what
// filtering each would have said.
func TestAlikePodsFitNowhereFilteredOnce(t *testing.T) {
	for _, tt := range []struct {
		name  string
		judge bool
		want  []string
	}{
		{name: "every plugin judges by spec", judge: true, want: []string{"g-0"}},
		{name: "a plugin reads more of a pod", judge: false, want: []string{"g-0", "g-1", "g-2", "g-3"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			hook, filtered := filteredPods(tt.judge)
			h := newHarnessWith(t, harnessConfig{hook: hook, postFilter: []string{}})
			for i := 1; i <= 3; i++ {
				h.addNode(fmt.Sprintf("n%d", i), "2")
			}
			for i := range 4 {
				h.addPod(gangPod(fmt.Sprintf("g-%d", i), "g", "1", "3"))
			}
			h.cycle()
			if got := filtered(); !slices.Equal(got, tt.want) {
				t.Errorf("pods filtered: %v, want %v", got, tt.want)
			}
			wantEvents(t, h, 4, "Warning FailedScheduling gang default/g: 0 of 4 tasks could be placed, min-available 1; 0/3 nodes are available: 3 Insufficient cpu.")
		})
	}
}

// A verdict is reused only while nothing was placed since, and only for a
// pod alike in labels and spec.
func TestAlikeVerdictNeedsSamePodAndSnapshot(t *testing.T) {
	tests := []struct {
		name string
		pods []*v1.Pod
		want []string
	}{{
		name: "a placement in between",
		// After g-2 the quorum of 3 is out of reach, but g-3 is not
		// alike to g-2: it is tried, to say why it waits.
		pods: []*v1.Pod{
			gangPod("g-0", "g", "3", "3"),
			gangPod("g-1", "g", "3", "1"),
			gangPod("g-2", "g", "3", "3"),
			gangPod("g-3", "g", "3", "1"),
		},
		want: []string{"g-0", "g-1", "g-2", "g-3"},
	}, {
		name: "other labels",
		pods: []*v1.Pod{
			gangPod("g-0", "g", "1", "3"),
			st.MakePod().Name("g-1").Group("g").MinAvailable("1").Req(res{"cpu": "3"}).Label("role", "worker").Obj(),
		},
		want: []string{"g-0", "g-1"},
	}, {
		name: "other requests",
		pods: []*v1.Pod{
			gangPod("g-0", "g", "1", "3"),
			gangPod("g-1", "g", "1", "2.5"),
		},
		want: []string{"g-0", "g-1"},
	}, {
		name: "only the host name differs",
		pods: []*v1.Pod{
			st.MakePod().Name("g-0").Group("g").MinAvailable("1").Req(res{"cpu": "3"}).Hostname("g-0").Obj(),
			st.MakePod().Name("g-1").Group("g").MinAvailable("1").Req(res{"cpu": "3"}).Hostname("g-1").Obj(),
		},
		want: []string{"g-0"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			hook, filtered := filteredPods(true)
			h := newHarnessWith(t, harnessConfig{hook: hook, postFilter: []string{}})
			for i := 1; i <= 3; i++ {
				h.addNode(fmt.Sprintf("n%d", i), "2")
			}
			for _, p := range tt.pods {
				h.addPod(p)
			}
			h.cycle()
			if got := filtered(); !slices.Equal(got, tt.want) {
				t.Errorf("pods filtered: %v, want %v", got, tt.want)
			}
			if n := len(h.bindings()); n != 0 {
				t.Errorf("%d pods bound, want none: no pod fits", n)
			}
		})
	}
}

// A gang stops placing once a pod fits nowhere and the pods left cannot
// bring it to its quorum; its message says how many were not tried.
func TestGangStopsOnceQuorumOutOfReach(t *testing.T) {
	hook, filtered := filteredPods(true)
	h := newHarnessWith(t, harnessConfig{hook: hook, postFilter: []string{}})
	for i := 1; i <= 5; i++ {
		h.addNode(fmt.Sprintf("n%d", i), "2")
	}
	// g-0 fits, g-1 does not: 1 placed and 2 left, alike to g-1, cannot
	// make 4.
	h.addPod(gangPod("g-0", "g", "4", "1"))
	for i := 1; i <= 3; i++ {
		h.addPod(gangPod(fmt.Sprintf("g-%d", i), "g", "4", "3"))
	}
	h.cycle()
	if got, want := filtered(), []string{"g-0", "g-1"}; !slices.Equal(got, want) {
		t.Errorf("pods filtered: %v, want %v", got, want)
	}
	wantEvents(t, h, 4, "Warning FailedScheduling gang default/g: 1 of 4 tasks could be placed, min-available 4 (2 not tried once a task fit nowhere)")
	if n := len(h.bindings()); n != 0 {
		t.Errorf("%d pods bound, want none", n)
	}
}

// wantEvents checks that h recorded n FailedScheduling events, each
// starting with want.
func wantEvents(t *testing.T, h *harness, n int, want string) {
	t.Helper()
	evts := eventsWith(h.events(), "Warning FailedScheduling ")
	if len(evts) != n {
		t.Fatalf("got %d FailedScheduling events, want %d: %q", len(evts), n, evts)
	}
	for _, e := range evts {
		if !strings.HasPrefix(e, want) {
			t.Errorf("event %q, want %q", e, want)
		}
	}
}

// Pods left untried once the quorum is out of reach still say why when
// they are alike to the pod that fit nowhere.
func TestUntriedAlikePodsSayWhy(t *testing.T) {
	hook, filtered := filteredPods(true)
	h := newHarnessWith(t, harnessConfig{hook: hook, postFilter: []string{}})
	for i := 1; i <= 3; i++ {
		h.addNode(fmt.Sprintf("n%d", i), "2")
	}
	h.addPod(gangPod("g-0", "g", "2", "3"))
	h.addPod(gangPod("g-1", "g", "2", "3"))
	h.cycle()
	if got, want := filtered(), []string{"g-0"}; !slices.Equal(got, want) {
		t.Errorf("pods filtered: %v, want %v", got, want)
	}
	wantEvents(t, h, 2, "Warning FailedScheduling gang default/g: 0 of 2 tasks could be placed, min-available 2 (1 not tried once a task fit nowhere); 0/3 nodes are available: 3 Insufficient cpu.")
}
