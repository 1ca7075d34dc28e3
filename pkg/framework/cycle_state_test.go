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

package framework

import "testing"

// counter is StateData that Clone copies.
type counter struct{ n int }

func (c *counter) Clone() StateData { return &counter{n: c.n} }

// A clone holds each datum's Clone and the metrics setting; writes,
// deletes and changes to the clone's data leave the original as it was.
func TestCycleStateClone(t *testing.T) {
	state := NewCycleState()
	state.SetRecordPluginMetrics(true)
	state.Write("a", &counter{n: 1})
	state.Write("b", &counter{n: 2})

	c := state.Clone()
	if !c.ShouldRecordPluginMetrics() {
		t.Error("the clone does not record plugin metrics as the original does")
	}
	d, ok := c.Read("a")
	if !ok || d.(*counter).n != 1 {
		t.Fatalf("clone's a = %v, %v; want 1", d, ok)
	}
	d.(*counter).n = 10
	c.Delete("b")
	c.Write("c", &counter{n: 3})

	if d, _ := state.Read("a"); d.(*counter).n != 1 {
		t.Errorf("original's a = %d after the clone's changed, want 1", d.(*counter).n)
	}
	if _, ok := state.Read("b"); !ok {
		t.Error("deleting b from the clone deleted it from the original")
	}
	if _, ok := state.Read("c"); ok {
		t.Error("writing c to the clone wrote it to the original")
	}
	if (*CycleState)(nil).Clone() != nil {
		t.Error("the clone of a nil state is not nil")
	}
}
