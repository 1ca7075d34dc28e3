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

package runtime

import (
	"fmt"
	"maps"
	"sync"
	"testing"

	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
)

// The diagnosis counts reasons the same way before and after it indexes
// them, answers StatusOf and Unresolvable from any goroutine, and tells
// an unresolvable rejection, or a node a NodeNamer left out, from one
// that eviction may resolve.
func TestDiagnosis(t *testing.T) {
	var d Diagnosis
	want := map[string]int{}
	// 12 distinct reasons, past maxListedReasons, each given by several
	// nodes in turn.
	for i := range 60 {
		reason := fmt.Sprintf("reason %d", i%12)
		code := framework.Unschedulable
		if i == 7 {
			code = framework.UnschedulableAndUnresolvable
		}
		d.add(fmt.Sprintf("n%d", i), framework.NewStatus(code, reason).WithPlugin(fmt.Sprintf("p%d", i%3)))
		want[reason]++
	}
	if got := d.ReasonCounts(); !maps.Equal(got, want) {
		t.Errorf("ReasonCounts = %v, want %v", got, want)
	}
	if got := d.RejectingPlugins(); len(got) != 3 || got[0] != "p0" || got[2] != "p2" {
		t.Errorf("RejectingPlugins = %v, want p0, p1, p2", got)
	}
	if d.Rejected() != 60 {
		t.Errorf("Rejected = %d, want 60", d.Rejected())
	}
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for i := range 60 {
				node := fmt.Sprintf("n%d", i)
				if st := d.StatusOf(node); st == nil || st.Message() != fmt.Sprintf("reason %d", i%12) {
					t.Errorf("StatusOf(%s) = %v", node, st)
				}
				if got := d.Unresolvable(node); got != (i == 7) {
					t.Errorf("Unresolvable(%s) = %v, want %v", node, got, i == 7)
				}
			}
		})
	}
	wg.Wait()
	if d.StatusOf("elsewhere") != nil || d.Unresolvable("elsewhere") {
		t.Errorf("a node not tried has a status or is unresolvable")
	}

	// Nothing unresolvable: no index is built to say so.
	var plain Diagnosis
	plain.add("a", framework.NewStatus(framework.Unschedulable, "Insufficient cpu"))
	if plain.Unresolvable("a") || plain.index.byNode != nil {
		t.Errorf("an Unschedulable rejection is unresolvable, or built the index: %v", plain.index.byNode)
	}
	// A NodeNamer's leftovers are unresolvable.
	plain.leaveOut("namer", sets.New("a", "b"), 3)
	if !plain.Unresolvable("c") || plain.Unresolvable("b") {
		t.Errorf("Unresolvable: c (left out) %v, b (named, not rejected) %v; want true, false", plain.Unresolvable("c"), plain.Unresolvable("b"))
	}
	if got := plain.Message(5); got != "1/5 nodes are available: 3 node(s) didn't satisfy plugin(s) [namer], 1 Insufficient cpu." {
		t.Errorf("Message = %q", got)
	}
}
