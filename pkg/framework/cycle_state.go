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

import "sync"

// StateKey names a piece of CycleState. Plugins use their own name as a
// prefix to avoid collisions.
type StateKey string

// StateData is anything a plugin keeps in CycleState.
type StateData interface {
	Clone() StateData
}

// CycleState carries data between the extension points of one scheduling
// cycle (one job). It is safe for concurrent use: Filter and Score run in
// parallel across nodes.
type CycleState struct {
	mu   sync.RWMutex // guards data
	data map[StateKey]StateData
	// recordPluginMetrics says whether the plugin calls of this cycle are
	// timed. Set before the cycle starts and only read after, so it needs
	// no lock.
	recordPluginMetrics bool
}

// SetRecordPluginMetrics says whether the framework times each plugin
// call of this cycle (the scheduler samples cycles: timing every Filter
// call on every node would cost more than some plugins). Call it before
// the cycle starts.
func (c *CycleState) SetRecordPluginMetrics(record bool) { c.recordPluginMetrics = record }

// ShouldRecordPluginMetrics reports what SetRecordPluginMetrics set; false
// for a nil state.
func (c *CycleState) ShouldRecordPluginMetrics() bool { return c != nil && c.recordPluginMetrics }

// NewCycleState returns an empty state.
func NewCycleState() *CycleState { return &CycleState{data: map[StateKey]StateData{}} }

// Read returns the data stored under key; ok is false when there is none.
func (c *CycleState) Read(key StateKey) (StateData, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	d, ok := c.data[key]
	return d, ok
}

// Write stores data under key.
func (c *CycleState) Write(key StateKey, data StateData) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.data[key] = data
}

// Delete removes key.
func (c *CycleState) Delete(key StateKey) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.data, key)
}

// Clone returns a copy of c: every piece of data cloned by its own Clone,
// and the same SetRecordPluginMetrics. What a clone's data share with
// c's is up to each StateData; a plugin whose state is updated after it
// was written (PodPreFilterExtensions) copies what the update changes.
func (c *CycleState) Clone() *CycleState {
	if c == nil {
		return nil
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	out := &CycleState{data: make(map[StateKey]StateData, len(c.data)), recordPluginMetrics: c.recordPluginMetrics}
	for k, d := range c.data {
		if d != nil {
			d = d.Clone()
		}
		out.data[k] = d
	}
	return out
}
