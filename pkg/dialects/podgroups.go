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
	"math"
	"sort"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
)

// The policies of the PodGroups of the gang dialects: the native,
// scheduler-plugins and Volcano PodGroups (the batch/v1 Job's is in
// owners.go). See docs/scheduling.md, "Gang dialects".

// source names a group object for messages: "<kind> <namespace>/<name>".
func source(kind framework.GroupKind, u *unstructured.Unstructured) string {
	return fmt.Sprintf("%s %s/%s", kind, u.GetNamespace(), u.GetName())
}

// nativePolicy reads spec.schedulingPolicy of a scheduling.k8s.io PodGroup:
// gang.minCount is the quorum; a basic policy is a group of one. Its
// spec.parentCompositePodGroupName is the composite it is a child of,
// read even when the rest is unusable, so that its pods join the
// composite's gang, whose message then names the problem.
func nativePolicy(u *unstructured.Unstructured) *framework.GroupPolicy {
	p := &framework.GroupPolicy{Source: source(framework.GroupKindNative, u)}
	if p.Parent, p.Err = parentName(u, p.Source); p.Err != nil {
		return p
	}
	p.Topology, p.Err = nativeTopology(u, p.Source)
	if p.Err != nil {
		return p
	}
	if p.Disruption, p.Err = nativeDisruption(u, p.Source); p.Err != nil {
		return p
	}
	if n, found, err := IntField(u.Object, "", "spec", "schedulingPolicy", "gang", "minCount"); found && err == nil && n >= 1 {
		p.MinMember = int32(n)
		return p
	}
	if basic, err := MapField(u.Object, "spec", "schedulingPolicy", "basic"); err == nil && basic != nil {
		p.MinMember = 1
		return p
	}
	p.Err = fmt.Errorf("%s has neither spec.schedulingPolicy.gang.minCount >= 1 nor a basic policy", p.Source)
	return p
}

// nativeDisruption reads spec.disruptionMode of the scheduling.k8s.io
// PodGroup src: single lets preemption take its pods one by one; all, or
// no mode, keeps the gang whole. kube-scheduler takes the pods of a
// PodGroup without a mode one by one; batch-scheduler keeps them whole
// unless told otherwise (docs/scheduling.md, "Preemption and gangs").
func nativeDisruption(u *unstructured.Unstructured, src string) (framework.Disruption, error) {
	mode, err := MapField(u.Object, "spec", "disruptionMode")
	if err != nil {
		return framework.DisruptWhole, fmt.Errorf("%s: %w", src, err)
	}
	single, err := MapField(mode, "single")
	if err != nil {
		return framework.DisruptWhole, fmt.Errorf("%s: spec.disruptionMode.%w", src, err)
	}
	all, err := MapField(mode, "all")
	if err != nil {
		return framework.DisruptWhole, fmt.Errorf("%s: spec.disruptionMode.%w", src, err)
	}
	switch {
	case single != nil && all != nil:
		return framework.DisruptWhole, fmt.Errorf("%s sets both spec.disruptionMode.single and spec.disruptionMode.all: set one", src)
	case single != nil:
		return framework.DisruptSingly, nil
	}
	return framework.DisruptWhole, nil
}

// parentName reads spec.parentCompositePodGroupName of the
// scheduling.k8s.io object src: "" when absent, an error when it is not
// a name.
func parentName(u *unstructured.Unstructured, src string) (string, error) {
	const at = "spec.parentCompositePodGroupName"
	name, err := StringField(u.Object, at, "spec", "parentCompositePodGroupName")
	if err != nil {
		return "", fmt.Errorf("%s: %w", src, err)
	}
	if errs := validation.IsDNS1123Subdomain(name); name != "" && len(errs) > 0 {
		return "", fmt.Errorf("%s: %s %s is not a valid name: %s", src, at, framework.QuoteValue(name), errs[0])
	}
	return name, nil
}

// compositePolicy reads a scheduling.k8s.io CompositePodGroup: a gang
// policy (spec.schedulingPolicy.gang.minGroupCount >= 1) makes the pods
// of its children one gang, each child a sub-group, of which
// minGroupCount must reach their quorum; a basic policy leaves its
// children gangs of their own (Independent). Its
// spec.schedulingConstraints.topology is the whole's domain, and
// spec.parentCompositePodGroupName its own parent (Parent). The
// children's quorums and domains are the cache's to fill in (the rule's
// Quorums and Topologies) from the children's policies; MinMember is
// left 0.
func compositePolicy(u *unstructured.Unstructured) *framework.GroupPolicy {
	p := &framework.GroupPolicy{Source: source(framework.GroupKindComposite, u)}
	if p.Parent, p.Err = parentName(u, p.Source); p.Err != nil {
		return p
	}
	if p.Topology, p.Err = nativeTopology(u, p.Source); p.Err != nil {
		return p
	}
	basic, err := MapField(u.Object, "spec", "schedulingPolicy", "basic")
	if err != nil {
		p.Err = fmt.Errorf("%s: %w", p.Source, err)
		return p
	}
	gang, err := MapField(u.Object, "spec", "schedulingPolicy", "gang")
	if err != nil {
		p.Err = fmt.Errorf("%s: %w", p.Source, err)
		return p
	}
	switch {
	case gang != nil && basic != nil:
		p.Err = fmt.Errorf("%s sets both spec.schedulingPolicy.basic and spec.schedulingPolicy.gang: set one", p.Source)
	case gang != nil:
		n, found, err := IntField(gang, "spec.schedulingPolicy.gang.minGroupCount", "minGroupCount")
		switch {
		case err != nil:
			p.Err = fmt.Errorf("%s: %w", p.Source, err)
		case !found || n < 1:
			p.Err = fmt.Errorf("%s has no usable spec.schedulingPolicy.gang.minGroupCount (an integer >= 1)", p.Source)
		default:
			p.SubGroups = []framework.SubGroupRule{{KeyPodGroup: true, MinSubGroups: int32(n),
				Source: p.Source + " spec.schedulingPolicy.gang.minGroupCount"}}
		}
	case basic != nil:
		p.Independent = true
	default:
		p.Err = fmt.Errorf("%s has neither spec.schedulingPolicy.gang nor a basic policy", p.Source)
	}
	return p
}

// nativeTopology reads spec.schedulingConstraints.topology of a
// scheduling.k8s.io PodGroup: a list of at most one {key}, required.
func nativeTopology(u *unstructured.Unstructured, src string) (*framework.TopologyConstraint, error) {
	list, err := ListField(u.Object, "spec", "schedulingConstraints", "topology")
	switch {
	case err != nil:
		return nil, fmt.Errorf("%s: spec.schedulingConstraints.topology is not a list: %w", src, err)
	case len(list) == 0:
		return nil, nil
	case len(list) > 1:
		return nil, fmt.Errorf("%s: spec.schedulingConstraints.topology has %d entries; one is supported", src, len(list))
	}
	entry, ok := list[0].(map[string]any)
	var key string
	if ok {
		key, _ = StringField(entry, "", "key")
	}
	if key == "" {
		return nil, fmt.Errorf("%s: spec.schedulingConstraints.topology[0].key is missing", src)
	}
	if errs := validation.IsQualifiedName(key); len(errs) > 0 {
		return nil, fmt.Errorf("%s: spec.schedulingConstraints.topology[0].key %q is not a label key: %s", src, key, errs[0])
	}
	return &framework.TopologyConstraint{Key: key, Required: true, Source: src + " spec.schedulingConstraints.topology"}, nil
}

// volcanoTopology reads spec.networkTopology of a Volcano PodGroup (see
// networkTopology).
func volcanoTopology(u *unstructured.Unstructured, src string) (*framework.TopologyConstraint, error) {
	nt, err := MapField(u.Object, "spec", "networkTopology")
	if err != nil {
		return nil, fmt.Errorf("%s: spec.networkTopology is not an object: %w", src, err)
	}
	return networkTopology(nt, "spec.networkTopology", src)
}

// networkTopology converts nt, a Volcano NetworkTopologySpec at the path
// at of the group object src (nil: no constraint): mode hard (the
// default) or soft, and highestTierAllowed (default 1), the widest
// network tier the pods may span. highestTierName, which names a tier of
// Volcano's HyperNodes, is not read (see docs/scheduling.md,
// "Topology-aware gangs").
func networkTopology(nt map[string]any, at, src string) (*framework.TopologyConstraint, error) {
	if nt == nil {
		return nil, nil
	}
	t := &framework.TopologyConstraint{Tier: 1, Required: true, Source: src + " " + at}
	switch mode, _, _ := Lookup(nt, "mode"); mode {
	case nil, "", "hard":
	case "soft":
		t.Required = false
	default:
		return nil, fmt.Errorf("%s: %s.mode %v is neither hard nor soft", src, at, mode)
	}
	if n, found, err := IntField(nt, "", "highestTierAllowed"); err != nil || (found && n < 1) {
		v, _, _ := Lookup(nt, "highestTierAllowed")
		return nil, fmt.Errorf("%s: %s.highestTierAllowed %v is not an integer >= 1", src, at, v)
	} else if found {
		t.Tier = int32(n)
	}
	return t, nil
}

// volcanoSubGroups reads spec.subGroupPolicy of a Volcano PodGroup: one
// rule per entry, in order. An entry takes the pods its labelSelector
// selects (all when it has none); those with equal values of its
// matchLabelKeys form one sub-group (all of them one when it has none),
// whose quorum is subGroupSize (default 1) and whose domain is its
// networkTopology; minSubGroups (default 0) of its sub-groups must reach
// their quorum. Every field that cannot be used is an error naming the
// object and the field; entries must have distinct names, which key
// their sub-groups.
func volcanoSubGroups(u *unstructured.Unstructured, src string) ([]framework.SubGroupRule, error) {
	entries, err := ListField(u.Object, "spec", "subGroupPolicy")
	if err != nil {
		return nil, fmt.Errorf("%s: %w", src, err)
	}
	rules := make([]framework.SubGroupRule, 0, len(entries))
	named := map[string]string{}
	for i, e := range entries {
		at := "spec.subGroupPolicy" + Index(i)
		r, err := volcanoSubGroup(e, at, src)
		if err != nil {
			return nil, err
		}
		if first, dup := named[r.Name]; dup {
			return nil, fmt.Errorf("%s: %s.name %s is also %s.name: the entries of spec.subGroupPolicy must have distinct names", src, at, framework.QuoteValue(r.Name), first)
		}
		named[r.Name] = at
		rules = append(rules, r)
	}
	return rules, nil
}

// volcanoSubGroup reads e, the entry at of spec.subGroupPolicy of the
// Volcano PodGroup src (see volcanoSubGroups).
func volcanoSubGroup(e any, at, src string) (framework.SubGroupRule, error) {
	r := framework.SubGroupRule{Source: src + " " + at}
	fail := func(err error) (framework.SubGroupRule, error) {
		return framework.SubGroupRule{}, fmt.Errorf("%s: %w", src, err)
	}
	m, ok := e.(map[string]any)
	if !ok {
		return fail(fmt.Errorf("%s is %s, not an object", at, TypeName(e)))
	}
	var err error
	if r.Name, err = StringField(m, at+".name", "name"); err != nil {
		return fail(err)
	}
	nt, err := objectAt(m, at+".networkTopology", "networkTopology")
	if err != nil {
		return fail(err)
	}
	if r.Topology, err = networkTopology(nt, at+".networkTopology", src); err != nil {
		return framework.SubGroupRule{}, err
	}
	size, found, err := IntField(m, at+".subGroupSize", "subGroupSize")
	switch {
	case err != nil:
		return fail(err)
	case !found:
		size = 1
	case size == 0:
		return fail(fmt.Errorf("%s.subGroupSize is 0, must be >= 1", at))
	}
	r.MinMember = int32(size)
	minSubGroups, _, err := IntField(m, at+".minSubGroups", "minSubGroups")
	if err != nil {
		return fail(err)
	}
	r.MinSubGroups = int32(minSubGroups)
	if r.Selector, err = labelSelector(m, at+".labelSelector", "labelSelector"); err != nil {
		return fail(err)
	}
	keys, err := listAt(m, at+".matchLabelKeys", "matchLabelKeys")
	if err != nil {
		return fail(err)
	}
	for j, k := range keys {
		key, ok := k.(string)
		if !ok {
			return fail(fmt.Errorf("%s.matchLabelKeys%s is %s, not a string", at, Index(j), TypeName(k)))
		}
		if errs := validation.IsQualifiedName(key); len(errs) > 0 {
			return fail(fmt.Errorf("%s.matchLabelKeys%s %s is not a label key: %s", at, Index(j), framework.QuoteValue(key), errs[0]))
		}
		r.KeyLabels = append(r.KeyLabels, key)
	}
	return r, nil
}

// labelSelector converts the metav1.LabelSelector at key of obj, named
// at in errors: nil when absent, which selects every pod; an object
// without requirements also selects every pod.
func labelSelector(obj map[string]any, at, key string) (labels.Selector, error) {
	m, err := objectAt(obj, at, key)
	if err != nil || m == nil {
		return nil, err
	}
	ls := &metav1.LabelSelector{}
	matchLabels, err := objectAt(m, at+".matchLabels", "matchLabels")
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(matchLabels))
	for k := range matchLabels {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		v, ok := matchLabels[k].(string)
		if !ok {
			return nil, fmt.Errorf("%s.matchLabels[%s] is %s, not a string", at, framework.QuoteValue(k), TypeName(matchLabels[k]))
		}
		// Checked one by one, so that the error names the first bad one.
		one := map[string]string{k: v}
		if _, err := metav1.LabelSelectorAsSelector(&metav1.LabelSelector{MatchLabels: one}); err != nil {
			return nil, fmt.Errorf("%s.matchLabels[%s]: %w", at, framework.QuoteValue(k), err)
		}
		if ls.MatchLabels == nil {
			ls.MatchLabels = map[string]string{}
		}
		ls.MatchLabels[k] = v
	}
	exprs, err := listAt(m, at+".matchExpressions", "matchExpressions")
	if err != nil {
		return nil, err
	}
	for j, e := range exprs {
		eat := at + ".matchExpressions" + Index(j)
		em, ok := e.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("%s is %s, not an object", eat, TypeName(e))
		}
		var req metav1.LabelSelectorRequirement
		if req.Key, err = StringField(em, eat+".key", "key"); err != nil {
			return nil, err
		}
		op, err := StringField(em, eat+".operator", "operator")
		if err != nil {
			return nil, err
		}
		req.Operator = metav1.LabelSelectorOperator(op)
		values, err := listAt(em, eat+".values", "values")
		if err != nil {
			return nil, err
		}
		for k, v := range values {
			s, ok := v.(string)
			if !ok {
				return nil, fmt.Errorf("%s.values%s is %s, not a string", eat, Index(k), TypeName(v))
			}
			req.Values = append(req.Values, s)
		}
		if _, err := metav1.LabelSelectorAsSelector(&metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{req}}); err != nil {
			return nil, fmt.Errorf("%s: %w", eat, err)
		}
		ls.MatchExpressions = append(ls.MatchExpressions, req)
	}
	return metav1.LabelSelectorAsSelector(ls)
}

// objectAt reads the object at key of obj, nil when absent; at names
// the field in errors.
func objectAt(obj map[string]any, at, key string) (map[string]any, error) {
	v, found, _ := Lookup(obj, key)
	if !found {
		return nil, nil
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("%s is %s, not an object", at, TypeName(v))
	}
	return m, nil
}

// listAt reads the list at key of obj, nil when absent; at names the
// field in errors.
func listAt(obj map[string]any, at, key string) ([]any, error) {
	v, found, _ := Lookup(obj, key)
	if !found {
		return nil, nil
	}
	l, ok := v.([]any)
	if !ok {
		return nil, fmt.Errorf("%s is %s, not a list", at, TypeName(v))
	}
	return l, nil
}

// minMemberPolicy reads spec.minMember, as both the scheduler-plugins and
// the Volcano PodGroup spell the quorum; of a Volcano PodGroup also its
// spec.networkTopology, spec.queue and spec.subGroupPolicy (the rules of
// a multi-level gang, see volcanoSubGroups).
func minMemberPolicy(kind framework.GroupKind) func(u *unstructured.Unstructured) *framework.GroupPolicy {
	return func(u *unstructured.Unstructured) *framework.GroupPolicy {
		p := &framework.GroupPolicy{Source: source(kind, u)}
		n, found, err := IntField(u.Object, "", "spec", "minMember")
		if !found || err != nil || n < 1 {
			p.Err = fmt.Errorf("%s has no usable spec.minMember (an integer >= 1)", p.Source)
			return p
		}
		p.MinMember = int32(n)
		if kind == framework.GroupKindVolcano {
			if p.Topology, p.Err = volcanoTopology(u, p.Source); p.Err != nil {
				return p
			}
			// Volcano's own default for a PodGroup without a queue is
			// its default queue, which is ours too.
			if q, err := StringField(u.Object, "", "spec", "queue"); err == nil {
				p.Queue = q
			}
			if p.SubGroups, p.Err = volcanoSubGroups(u, p.Source); p.Err != nil {
				return p
			}
		}
		if kind == framework.GroupKindCoscheduling {
			p.ScheduleTimeoutSeconds = scheduleTimeout(u)
		}
		return p
	}
}

// scheduleTimeout reads spec.scheduleTimeoutSeconds of a scheduler-plugins
// PodGroup: 0 (none) when absent, not a positive integer, or of the wrong
// type; at most MaxInt32.
func scheduleTimeout(u *unstructured.Unstructured) int32 {
	n, found, err := IntField(u.Object, "", "spec", "scheduleTimeoutSeconds")
	switch {
	case err == nil && found && n > 0:
		return int32(n)
	case err != nil:
		// Past MaxInt32 is an error of IntField; the timeout is clamped.
		if v, _, _ := Lookup(u.Object, "spec", "scheduleTimeoutSeconds"); isHugeInt(v) {
			return math.MaxInt32
		}
	}
	return 0
}

// isHugeInt reports whether v is an integer past MaxInt32.
func isHugeInt(v any) bool {
	switch x := v.(type) {
	case int64:
		return x > math.MaxInt32
	case float64:
		return x == math.Trunc(x) && x > math.MaxInt32
	}
	return false
}
