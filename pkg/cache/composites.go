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
	"math"
	"slices"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
)

// CompositePodGroups (framework.GroupKindComposite): the pods of the
// native PodGroups whose parent is a composite with a gang policy are one
// job, the composite's (framework.CompositeRef), each child PodGroup a
// sub-group. The composite's policy, as its job sees it, is assembled
// from the composite's own and its children's (compositePolicyLocked);
// when a child's parent or a composite's policy changes, the children's
// pods move between the composite's job and their PodGroups' own. See
// docs/scheduling.md, "Multi-level gangs".

// compositeJoins reports whether a composite whose policy is p makes
// its children's pods one gang: it does when it is a gang, and while it
// is missing or unusable (its children's pods then wait in its job, whose
// message says why). A basic composite, or one that has a parent of its
// own (nested composites are not supported), leaves its children gangs
// of their own.
func compositeJoins(p *framework.GroupPolicy) bool {
	return p == nil || p.Err != nil || (!p.Independent && p.Parent == "")
}

// parentOf returns the composite a native PodGroup's policy p names, ""
// for none.
func parentOf(p *framework.GroupPolicy) string {
	if p == nil {
		return ""
	}
	return p.Parent
}

// compositeJobID is the job of the composite named name in namespace.
func compositeJobID(namespace, name string) framework.JobID {
	return framework.JobID{Namespace: namespace, Name: name, Gang: true, Owner: framework.GroupKindComposite}
}

// parentLocked implements framework.GroupResolver.Parent: the composite
// whose job the pods of the native PodGroup named podGroup in namespace
// join. The caller holds mu.
func (c *SchedulerCache) parentLocked(namespace, podGroup string) (string, bool) {
	parent := parentOf(c.groupPolicies[groupKey{kind: framework.GroupKindNative, namespace: namespace, name: podGroup}])
	if parent == "" {
		return "", false
	}
	if !compositeJoins(c.groupPolicies[groupKey{kind: framework.GroupKindComposite, namespace: namespace, name: parent}]) {
		return "", false
	}
	return parent, true
}

// compositePolicyLocked returns the policy of the job of the composite
// named name in namespace: the composite's own, nil when there is none,
// with the quorum and topology of each of its children (the native
// PodGroups that name it) as those of its sub-groups, and as its quorum
// in pods the smallest sum of minGroupCount of its children's quorums
// (at least 1). A child whose policy is unusable makes the whole
// unusable. The caller holds mu.
func (c *SchedulerCache) compositePolicyLocked(namespace, name string) *framework.GroupPolicy {
	key := groupKey{kind: framework.GroupKindComposite, namespace: namespace, name: name}
	own := c.groupPolicies[key]
	if own == nil || own.Err != nil || len(own.SubGroups) != 1 {
		return own
	}
	p := *own
	rule := own.SubGroups[0]
	rule.Quorums = map[string]int32{}
	rule.Topologies = map[string]*framework.TopologyConstraint{}
	children := make([]string, 0, len(c.children[key]))
	for child := range c.children[key] {
		children = append(children, child)
	}
	slices.Sort(children)
	quorums := make([]int32, 0, len(children))
	for _, child := range children {
		cp := c.groupPolicies[groupKey{kind: framework.GroupKindNative, namespace: namespace, name: child}]
		if cp == nil {
			continue
		}
		if cp.Err != nil {
			p.Err = fmt.Errorf("%w (a child of %s)", cp.Err, own.Source)
			p.SubGroups = nil
			return &p
		}
		rule.Quorums[child] = cp.MinMember
		if cp.Topology != nil {
			rule.Topologies[child] = cp.Topology
		}
		quorums = append(quorums, cp.MinMember)
	}
	slices.Sort(quorums)
	var sum int64
	for i := 0; i < len(quorums) && i < int(rule.MinSubGroups); i++ {
		sum += int64(quorums[i])
	}
	p.MinMember = int32(min(max(sum, 1), math.MaxInt32))
	p.SubGroups = []framework.SubGroupRule{rule}
	return &p
}

// refreshCompositeLocked gives the job of the composite named name in
// namespace, when it has pods, its policy anew, and returns the job's ID
// for retrying. The caller holds mu.
func (c *SchedulerCache) refreshCompositeLocked(namespace, name string) framework.JobID {
	id := compositeJobID(namespace, name)
	if job, ok := c.jobs[id]; ok {
		p := c.compositePolicyLocked(namespace, name)
		c.changeJobLocked(job, "", func() { job.SetGroupPolicy(framework.GroupKindComposite, p) })
	}
	return id
}

// nativeGroupLocked returns the native PodGroup t's pod names, "" for
// none. The caller holds mu.
func (c *SchedulerCache) nativeGroupLocked(t *framework.TaskInfo) string {
	if refs := c.matcher.Explicit(t.PodObject()); len(refs) > 0 && refs[0].Kind == framework.GroupKindNative {
		return refs[0].Object
	}
	return ""
}

// childTasksLocked returns the tasks of the pods that name the native
// PodGroup child in namespace and are in its own job or in the job of
// the composite parent ("" for none). The caller holds mu.
func (c *SchedulerCache) childTasksLocked(namespace, child, parent string) []types.UID {
	var uids []types.UID
	if job, ok := c.jobs[framework.JobID{Namespace: namespace, Name: child, Gang: true}]; ok {
		for uid := range job.Tasks {
			uids = append(uids, uid)
		}
	}
	if parent == "" {
		return uids
	}
	if job, ok := c.jobs[compositeJobID(namespace, parent)]; ok {
		for uid, t := range job.Tasks {
			if c.nativeGroupLocked(t) == child {
				uids = append(uids, uid)
			}
		}
	}
	return uids
}

// nativeChangedLocked follows a change of the policy of the native
// PodGroup named name in namespace from old to p (either nil: none)
// after groupPolicies holds p: a new parent moves its pods between its
// own job and its parent's, and the jobs of its parents, old and new,
// take their children's quorums anew. It returns the jobs to retry. The
// caller holds mu.
func (c *SchedulerCache) nativeChangedLocked(namespace, name string, old, p *framework.GroupPolicy) []framework.JobID {
	from, to := parentOf(old), parentOf(p)
	if from == "" && to == "" {
		return nil
	}
	var changed []framework.JobID
	if from != to {
		c.indexChildLocked(namespace, from, name, false)
		c.indexChildLocked(namespace, to, name, true)
		if moved := c.rekeyTasksLocked(c.childTasksLocked(namespace, name, from)); moved > 0 {
			klog.V(2).InfoS("PodGroup's pods changed jobs: its parent CompositePodGroup changed",
				"podGroup", klog.KRef(namespace, name), "oldParent", from, "parent", to, "pods", moved)
		}
	}
	for _, parent := range []string{from, to} {
		if parent != "" {
			changed = append(changed, c.refreshCompositeLocked(namespace, parent))
		}
		if from == to {
			break
		}
	}
	return changed
}

// compositeChangedLocked follows a change of the policy of the
// composite named name in namespace from old to p (either nil: none)
// after groupPolicies holds p: when it starts or stops making its
// children's pods one gang (compositeJoins), they move between its job
// and their PodGroups' own; its job takes the policy anew. It returns
// the jobs to retry. The caller holds mu.
func (c *SchedulerCache) compositeChangedLocked(namespace, name string, old, p *framework.GroupPolicy) []framework.JobID {
	key := groupKey{kind: framework.GroupKindComposite, namespace: namespace, name: name}
	if p != nil && p.Parent != "" && parentOf(old) != p.Parent {
		klog.V(2).InfoS("Nested CompositePodGroups are not supported: the children of this one are scheduled as gangs of their own",
			"compositePodGroup", klog.KRef(namespace, name), "parent", p.Parent)
	}
	changed := []framework.JobID{compositeJobID(namespace, name)}
	children := make([]string, 0, len(c.children[key]))
	for child := range c.children[key] {
		children = append(children, child)
		changed = append(changed, framework.JobID{Namespace: namespace, Name: child, Gang: true})
	}
	if compositeJoins(old) != compositeJoins(p) {
		var uids []types.UID
		if job, ok := c.jobs[compositeJobID(namespace, name)]; ok {
			for uid := range job.Tasks {
				uids = append(uids, uid)
			}
		}
		for _, child := range children {
			uids = append(uids, c.childTasksLocked(namespace, child, "")...)
		}
		if moved := c.rekeyTasksLocked(uids); moved > 0 {
			klog.V(2).InfoS("CompositePodGroup's children's pods changed jobs: it makes them one gang, or no longer",
				"compositePodGroup", klog.KRef(namespace, name), "gang", compositeJoins(p), "pods", moved)
		}
	}
	c.refreshCompositeLocked(namespace, name)
	return changed
}

// indexChildLocked adds (or removes) child, a native PodGroup in
// namespace, to the children of the composite parent ("" for none). The
// caller holds mu.
func (c *SchedulerCache) indexChildLocked(namespace, parent, child string, add bool) {
	if parent == "" {
		return
	}
	key := groupKey{kind: framework.GroupKindComposite, namespace: namespace, name: parent}
	set := c.children[key]
	switch {
	case add && set == nil:
		c.children[key] = map[string]struct{}{child: {}}
	case add:
		set[child] = struct{}{}
	case set != nil:
		delete(set, child)
		if len(set) == 0 {
			delete(c.children, key)
		}
	}
}
