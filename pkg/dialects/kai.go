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

package dialects

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/klog/v2"

	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
)

// KAI-Scheduler's PodGroup (scheduling.run.ai/v2alpha2), read from its
// public API: a pod names it with the annotation
// framework.KAIPodGroupAnnotation; spec.minMember is the quorum,
// spec.queue the queue, spec.topologyConstraint the whole's domain, and
// spec.subGroups a tree of sub-groups whose leaves pods join with the
// label framework.KAISubGroupLabel. See docs/scheduling.md, "Gang
// dialects" and "Multi-level gangs".

// kaiPolicy reads a KAI PodGroup. Without sub-groups the quorum is
// spec.minMember (KAI's default, 1, when absent). With sub-groups, as
// KAI schedules them, every leaf of the tree must reach its own
// minMember: the leaves are the gang's sub-groups, all of them its
// quorum in sub-groups, and the sum of their quorums its quorum in pods
// (spec.minMember is then not read).
func kaiPolicy(u *unstructured.Unstructured) *framework.GroupPolicy {
	p := &framework.GroupPolicy{Source: source(framework.GroupKindKAI, u)}
	q, err := StringField(u.Object, "", "spec", "queue")
	if err != nil {
		p.Err = fmt.Errorf("%s: %w", p.Source, err)
		return p
	}
	p.Queue = q
	tc, err := MapField(u.Object, "spec", "topologyConstraint")
	if err != nil {
		p.Err = fmt.Errorf("%s: %w", p.Source, err)
		return p
	}
	if p.Topology, err = kaiTopology(tc, "spec.topologyConstraint", p.Source); err != nil {
		p.Err = err
		return p
	}
	rule, quorum, err := kaiSubGroups(u, p.Source)
	if err != nil {
		p.Err = err
		return p
	}
	if rule != nil {
		p.SubGroups, p.MinMember = []framework.SubGroupRule{*rule}, quorum
		return p
	}
	n, found, err := IntField(u.Object, "", "spec", "minMember")
	switch {
	case err != nil:
		p.Err = fmt.Errorf("%s: %w", p.Source, err)
	case !found:
		p.MinMember = 1
	case n < 1:
		p.Err = fmt.Errorf("%s: spec.minMember is %d, must be >= 1", p.Source, n)
	default:
		p.MinMember = int32(n)
	}
	return p
}

// kaiTopology converts tc, a KAI TopologyConstraint at the path at of the
// group object src (nil or empty: no constraint). Its levels are node
// label keys: requiredTopologyLevel is the domain the pods must share,
// else preferredTopologyLevel the one they should. Of both, the required
// is kept (a preferred level within the required one is not read), and
// topology, the name of a KAI Topology object, is not read: the level
// names the node label itself.
func kaiTopology(tc map[string]any, at, src string) (*framework.TopologyConstraint, error) {
	if tc == nil {
		return nil, nil
	}
	read := func(field string) (string, error) {
		v, err := StringField(tc, at+"."+field, field)
		if err != nil {
			return "", fmt.Errorf("%s: %w", src, err)
		}
		if errs := validation.IsQualifiedName(v); v != "" && len(errs) > 0 {
			return "", fmt.Errorf("%s: %s.%s %s is not a node label key: %s", src, at, field, framework.QuoteValue(v), errs[0])
		}
		return v, nil
	}
	required, err := read("requiredTopologyLevel")
	if err != nil {
		return nil, err
	}
	preferred, err := read("preferredTopologyLevel")
	if err != nil {
		return nil, err
	}
	switch {
	case required != "":
		return &framework.TopologyConstraint{Key: required, Required: true, Source: src + " " + at + ".requiredTopologyLevel"}, nil
	case preferred != "":
		return &framework.TopologyConstraint{Key: preferred, Source: src + " " + at + ".preferredTopologyLevel"}, nil
	}
	return nil, nil
}

// kaiSubGroup is one entry of a KAI PodGroup's spec.subGroups.
type kaiSubGroup struct {
	name, parent string // parent "" for a child of the PodGroup itself
	at           string // its path, for messages
	minMember    int32
	topology     *framework.TopologyConstraint
	hasChildren  bool
}

// kaiSubGroups reads spec.subGroups of the KAI PodGroup u (named src):
// nil when it has none. Entries form a tree by their parent (matched
// without regard to case, as KAI does); each leaf is a sub-group of the
// gang, keyed by its name in the pods' label framework.KAISubGroupLabel,
// with the quorum max(minMember, 1) and the domain of its own
// topologyConstraint, else of its nearest ancestor that has one (the
// PodGroup's own is the whole gang's, not each leaf's). A middle
// sub-group's domain is thus applied to each of its leaves apart: two
// leaves of one middle sub-group may land in different domains of its
// level. quorum is the sum of the leaves' quorums.
func kaiSubGroups(u *unstructured.Unstructured, src string) (rule *framework.SubGroupRule, quorum int32, err error) {
	entries, err := ListField(u.Object, "spec", "subGroups")
	if err != nil || len(entries) == 0 {
		if err != nil {
			err = fmt.Errorf("%s: %w", src, err)
		}
		return nil, 0, err
	}
	groups := make([]kaiSubGroup, 0, len(entries))
	byName := map[string]int{}
	for i, e := range entries {
		g, err := kaiSubGroupEntry(e, "spec.subGroups"+Index(i), src)
		if err != nil {
			return nil, 0, err
		}
		lower := strings.ToLower(g.name)
		if first, dup := byName[lower]; dup {
			return nil, 0, fmt.Errorf("%s: %s.name %s is also %s.name: sub-groups must have distinct names", src, g.at, framework.QuoteValue(g.name), groups[first].at)
		}
		byName[lower] = len(groups)
		groups = append(groups, g)
	}
	parentOf := make([]int, len(groups)) // -1: the PodGroup
	for i, g := range groups {
		parentOf[i] = -1
		if g.parent == "" {
			continue
		}
		j, ok := byName[strings.ToLower(g.parent)]
		if !ok {
			return nil, 0, fmt.Errorf("%s: %s.parent %s names no sub-group of spec.subGroups", src, g.at, framework.QuoteValue(g.parent))
		}
		parentOf[i] = j
		groups[j].hasChildren = true
	}
	depth := 1
	for i := range groups {
		steps := 0
		for j := parentOf[i]; j >= 0; j = parentOf[j] {
			if steps++; steps > len(groups) {
				return nil, 0, fmt.Errorf("%s: %s.parent %s: the parents of spec.subGroups form a cycle", src, groups[i].at, framework.QuoteValue(groups[i].parent))
			}
		}
		depth = max(depth, steps+1)
	}
	rule = &framework.SubGroupRule{
		KeyLabels:  []string{framework.KAISubGroupLabel},
		Quorums:    map[string]int32{},
		Topologies: map[string]*framework.TopologyConstraint{},
		Source:     src + " spec.subGroups",
	}
	for i, g := range groups {
		if g.hasChildren {
			continue
		}
		rule.Quorums[g.name] = g.minMember
		quorum += g.minMember
		for j := i; j >= 0; j = parentOf[j] {
			if t := groups[j].topology; t != nil {
				rule.Topologies[g.name] = t
				break
			}
		}
	}
	rule.MinSubGroups = int32(len(rule.Quorums))
	if depth > 1 {
		klog.V(4).InfoS("KAI PodGroup has nested sub-groups: their leaves are its sub-groups, and a middle sub-group's topology applies to each of its leaves apart",
			"podGroup", klog.KObj(u), "levels", depth+1)
	}
	return rule, quorum, nil
}

// kaiSubGroupEntry reads e, the entry at of spec.subGroups of the KAI
// PodGroup src.
func kaiSubGroupEntry(e any, at, src string) (kaiSubGroup, error) {
	fail := func(err error) (kaiSubGroup, error) { return kaiSubGroup{}, fmt.Errorf("%s: %w", src, err) }
	m, ok := e.(map[string]any)
	if !ok {
		return fail(fmt.Errorf("%s is %s, not an object", at, TypeName(e)))
	}
	g := kaiSubGroup{at: at, minMember: 1}
	var err error
	if g.name, err = StringField(m, at+".name", "name"); err != nil {
		return fail(err)
	}
	if g.name == "" {
		return fail(fmt.Errorf("%s.name is missing", at))
	}
	if errs := validation.IsValidLabelValue(g.name); len(errs) > 0 {
		return fail(fmt.Errorf("%s.name %s cannot be the value of label %s: %s", at, framework.QuoteValue(g.name), framework.KAISubGroupLabel, errs[0]))
	}
	if g.parent, err = StringField(m, at+".parent", "parent"); err != nil {
		return fail(err)
	}
	n, found, err := IntField(m, at+".minMember", "minMember")
	if err != nil {
		return fail(err)
	}
	if found && n > 1 {
		g.minMember = int32(n)
	}
	tc, err := objectAt(m, at+".topologyConstraint", "topologyConstraint")
	if err != nil {
		return fail(err)
	}
	if g.topology, err = kaiTopology(tc, at+".topologyConstraint", src); err != nil {
		return kaiSubGroup{}, err
	}
	return g, nil
}
