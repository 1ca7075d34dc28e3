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

package cache

import (
	"fmt"
	"sort"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
)

// Snapshot is a point-in-time copy of the schedulable nodes, for one
// scheduling cycle to read without locks. It holds clones of the cache's
// NodeInfos, placeholders excluded, and is brought up to date by
// (*SchedulerCache).UpdateSnapshot. A Snapshot is not safe for concurrent
// use: one scheduling loop owns it.
type Snapshot struct {
	nodeInfoMap  map[string]*framework.NodeInfo
	nodeInfoList []*framework.NodeInfo
	// generation is the cache generation the snapshot is current with.
	generation int64
	// changed names the NodeInfos that AddPod or RemovePod changed since
	// the last update; the next update clones them afresh.
	changed map[string]bool
	// clones counts the NodeInfos cloned into the snapshot, so that tests
	// can check that updates are incremental.
	clones int
	// touched names the nodes that changed in any way since the last
	// ResetTouched: cloned from the cache, or changed with AddPod, AddTask
	// or RemovePod. allTouched stands for every node instead, once nodes
	// joined or left, the snapshot was reset, or more than maxTouched
	// nodes changed.
	touched    map[string]bool
	allTouched bool
	// affinityNodes and antiNodes name the nodes that may hold a counted
	// pod with pod (anti-)affinity, and with required pod anti-affinity
	// (see MayHoldAffinity). A node's fresh clone from the cache sets its
	// membership exactly; AddPod and AddTask add it; nothing else takes
	// it out, so that a task taken off with RemovePod and put back on the
	// NodeInfo directly (preemption's simulation does) is still counted.
	affinityNodes, antiNodes map[string]bool
}

var _ framework.AffinityCensus = &Snapshot{}

// MayHoldAffinity implements framework.AffinityCensus.
func (s *Snapshot) MayHoldAffinity() bool { return len(s.affinityNodes) > 0 }

// MayHoldRequiredAntiAffinity implements framework.AffinityCensus.
func (s *Snapshot) MayHoldRequiredAntiAffinity() bool { return len(s.antiNodes) > 0 }

// noteAffinity records what n, a node of s, holds now: exactly when n was
// just cloned from the cache, as an addition otherwise.
func (s *Snapshot) noteAffinity(n *framework.NodeInfo, exact bool) {
	for _, x := range []struct {
		set map[string]bool
		has bool
	}{{s.affinityNodes, n.PodsWithAffinity > 0}, {s.antiNodes, n.PodsWithRequiredAntiAffinity > 0}} {
		switch {
		case x.has:
			x.set[n.Name()] = true
		case exact:
			delete(x.set, n.Name())
		}
	}
}

// forgetAffinity takes the node name, which left s, out of the census.
func (s *Snapshot) forgetAffinity(name string) {
	delete(s.affinityNodes, name)
	delete(s.antiNodes, name)
}

// maxTouched bounds the nodes a Snapshot names as touched; past it, it
// reports every node touched. Its reader refreshes what it derived from
// each node it names, so naming more than this costs it more than
// starting over.
const maxTouched = 256

// NewSnapshot returns an empty snapshot.
func NewSnapshot() *Snapshot {
	return &Snapshot{nodeInfoMap: map[string]*framework.NodeInfo{}, changed: map[string]bool{}, touched: map[string]bool{}, allTouched: true,
		affinityNodes: map[string]bool{}, antiNodes: map[string]bool{}}
}

// Touched returns the names of the nodes that changed since the last
// ResetTouched, or all true when they may all have (nodes joined or
// left, or too many changed to name). The map belongs to the snapshot:
// read it before the snapshot changes again.
func (s *Snapshot) Touched() (names map[string]bool, all bool) {
	return s.touched, s.allTouched
}

// ResetTouched starts the record of touched nodes afresh: its reader is
// now current with every node.
func (s *Snapshot) ResetTouched() {
	clear(s.touched)
	s.allTouched = false
}

// touchAll records that every node may have changed.
func (s *Snapshot) touchAll() {
	clear(s.touched)
	s.allTouched = true
}

// touch records that the named node changed.
func (s *Snapshot) touch(name string) {
	switch {
	case s.allTouched:
	case len(s.touched) >= maxTouched:
		s.touchAll()
	default:
		s.touched[name] = true
	}
}

// NodeInfos returns the snapshot's nodes, sorted by name. The slice and the
// NodeInfos belong to the snapshot: read them, do not modify or keep them
// across UpdateSnapshot.
func (s *Snapshot) NodeInfos() []*framework.NodeInfo { return s.nodeInfoList }

// Get returns the named node.
func (s *Snapshot) Get(name string) (*framework.NodeInfo, bool) {
	n, ok := s.nodeInfoMap[name]
	return n, ok
}

// AddPod places pod on the named node of the snapshot, tentatively, as a
// task in a job of its own (see framework.NodeInfo.AddPod). The change
// lasts until the next UpdateSnapshot, which puts the cache's state back,
// with whatever the scheduler has assumed in the cache meanwhile
// (AssumePod). It reports whether the node is in the snapshot. The
// scheduling cycle, which knows the job of the pods it places, uses
// AddTask; AddPod serves tests.
func (s *Snapshot) AddPod(nodeName string, pod *v1.Pod) bool {
	n, ok := s.nodeInfoMap[nodeName]
	if !ok {
		return false
	}
	n.AddPod(pod)
	s.changed[nodeName] = true
	s.touch(nodeName)
	s.noteAffinity(n, false)
	return true
}

// AddTask is AddPod for a task built already, which the snapshot shares:
// a scheduling cycle placing several pods (the tasks of a gang) adds each
// placement's task (framework.NewAssumedTaskInfo) so that later
// placements see earlier ones, and a caller that puts the same pod on it
// in every cycle (a nominated pod) builds the task once.
func (s *Snapshot) AddTask(nodeName string, t *framework.TaskInfo) bool {
	n, ok := s.nodeInfoMap[nodeName]
	if !ok {
		return false
	}
	n.AddTask(t)
	s.changed[nodeName] = true
	s.touch(nodeName)
	s.noteAffinity(n, false)
	return true
}

// RemovePod undoes AddPod: it takes the pod with uid off the named node of
// the snapshot and reports whether it was there.
func (s *Snapshot) RemovePod(nodeName string, uid types.UID) bool {
	n, ok := s.nodeInfoMap[nodeName]
	if !ok || !n.RemovePod(uid) {
		return false
	}
	s.changed[nodeName] = true
	s.touch(nodeName)
	return true
}

// UpdateSnapshot brings s up to date with the cache, in time proportional
// to what changed since s was last updated: the cache's nodes are linked
// most recently changed first, and only those newer than s are cloned.
// Nodes that left the cache, or became placeholders, leave s. When nodes
// join or leave s, its list is rebuilt (pointers only, no cloning).
//
// Nodes of s changed with AddPod or RemovePod since the last update are
// cloned afresh, so tentative placements of the last cycle do not outlive
// it; what the scheduler assumed in the cache (AssumePod) is part of the
// cache's state and shows.
//
// Existing NodeInfos of s are overwritten in place, so pointers taken from
// s before the call see the new state.
func (c *SchedulerCache) UpdateSnapshot(s *Snapshot) error {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if s.nodeInfoMap == nil {
		*s = *NewSnapshot()
	}
	membershipChanged := false

	// Undo tentative changes. A node that left the cache, or changed since
	// s was last updated, is dealt with below (and may be cloned twice).
	for name := range s.changed {
		ni, ok := s.nodeInfoMap[name]
		if !ok {
			continue
		}
		if item, ok := c.nodes[name]; ok && !item.info.Placeholder {
			item.info.CloneInto(ni)
			s.clones++
			s.touch(name)
			s.noteAffinity(ni, true)
		}
	}
	clear(s.changed)

	// Removals first: a node removed and added again since the last update
	// is re-added by the walk below.
	if s.generation < c.removedNodesFloor {
		// Some removals s has not seen were trimmed from the log; check
		// every node of s instead.
		for name := range s.nodeInfoMap {
			if item, ok := c.nodes[name]; !ok || item.info.Placeholder {
				delete(s.nodeInfoMap, name)
				s.forgetAffinity(name)
				membershipChanged = true
			}
		}
	} else {
		i := sort.Search(len(c.removedNodes), func(i int) bool { return c.removedNodes[i].generation > s.generation })
		for _, r := range c.removedNodes[i:] {
			if _, ok := s.nodeInfoMap[r.name]; ok {
				delete(s.nodeInfoMap, r.name)
				s.forgetAffinity(r.name)
				membershipChanged = true
			}
		}
	}

	for item := c.headNode; item != nil; item = item.next {
		info := item.info
		if info.Generation <= s.generation {
			break
		}
		existing, ok := s.nodeInfoMap[info.Name()]
		if info.Placeholder {
			if ok {
				delete(s.nodeInfoMap, info.Name())
				s.forgetAffinity(info.Name())
				membershipChanged = true
			}
			continue
		}
		if !ok {
			existing = &framework.NodeInfo{}
			s.nodeInfoMap[info.Name()] = existing
			membershipChanged = true
		}
		info.CloneInto(existing)
		s.clones++
		s.touch(info.Name())
		s.noteAffinity(existing, true)
	}
	s.generation = c.generation
	if membershipChanged {
		s.touchAll()
	}

	if membershipChanged || len(s.nodeInfoList) != len(s.nodeInfoMap) {
		s.nodeInfoList = s.nodeInfoList[:0]
		for _, ni := range s.nodeInfoMap {
			s.nodeInfoList = append(s.nodeInfoList, ni)
		}
		sort.Slice(s.nodeInfoList, func(i, j int) bool { return s.nodeInfoList[i].Name() < s.nodeInfoList[j].Name() })
	}

	if want := len(c.nodes) - c.numPlaceholders; len(s.nodeInfoMap) != want {
		// Only a bug can get here. Start s over, so that the next update
		// rebuilds it from scratch instead of staying wrong.
		got := len(s.nodeInfoMap)
		*s = *NewSnapshot()
		return fmt.Errorf("updating snapshot: it has %d nodes but the cache has %d; snapshot reset", got, want)
	}
	return nil
}
