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

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// Multi-level gangs: a gang whose pods form sub-gangs (the replicas of a
// LeaderWorkerSet, the roles of an inference service, the Jobs of a
// JobSet), each with a quorum of its own, and a count of them the whole
// must reach. Which pods form which sub-group is said by SubGroupRules,
// from the gang's group object (a Volcano PodGroup's subGroupPolicy, an
// owner's spec) or from the pods' own annotations. See
// docs/scheduling.md, "Multi-level gangs".

// Pod annotations of the project's own multi-level dialect. They apply
// to a gang of any dialect whose group object says nothing of sub-groups.
const (
	// SubGroupAnnotation names the pod's sub-group within its gang; pods
	// of one gang with the same value are one sub-group.
	SubGroupAnnotation = "batch-scheduler.io/sub-group"
	// SubGroupMinAvailableAnnotation is the quorum of the pod's sub-group,
	// an integer >= 1, read from the first pod of the sub-group by name.
	SubGroupMinAvailableAnnotation = "batch-scheduler.io/sub-group-min-available"
	// MinSubGroupsAnnotation is how many sub-groups must reach their
	// quorum for the gang to start, an integer >= 0, read from the gang's
	// first pending pod by name; 0 (the default) asks for none beyond the
	// gang's own quorum in pods.
	MinSubGroupsAnnotation = "batch-scheduler.io/min-sub-groups"
	// SubGroupTopologyRequiredAnnotation and
	// SubGroupTopologyPreferredAnnotation ask for each sub-group to be
	// placed within one domain of the label they name, as
	// TopologyRequiredAnnotation does for the whole gang; read from the
	// first pod of the sub-group by name.
	SubGroupTopologyRequiredAnnotation  = "batch-scheduler.io/sub-group-topology-required"
	SubGroupTopologyPreferredAnnotation = "batch-scheduler.io/sub-group-topology-preferred"
)

// SubGroupRule says which pods of a gang form sub-groups and what each
// needs. A pod is in the sub-group of the first rule that takes it, keyed
// by the values of the rule's KeyLabels (or its KeyAnnotation); a pod no
// rule takes is in no sub-group and counts only towards the whole.
type SubGroupRule struct {
	// Name names the rule (a role: "workers", "prefill") in keys and
	// messages; may be empty.
	Name string
	// Selector, when set, is the pods the rule takes; nil takes every pod.
	Selector labels.Selector
	// KeyLabels are the pod labels whose values split the rule's pods into
	// sub-groups; a pod without one of them is not taken. None (and no
	// KeyAnnotation): all its pods are one sub-group.
	KeyLabels []string
	// KeyAnnotation, when set, is the pod annotation whose value is the
	// sub-group (the project's own dialect); a pod without it is not
	// taken.
	KeyAnnotation string
	// KeyPodGroup, when set, keys the pods by the native PodGroup they
	// name (spec.schedulingGroup.podGroupName, the children of a
	// CompositePodGroup); a pod that names none is not taken.
	KeyPodGroup bool
	// MinMember is each sub-group's quorum; 0 reads it from the pods
	// (SubGroupMinAvailableAnnotation).
	MinMember int32
	// Quorums, when set, are the quorums of the rule's sub-groups by key
	// (a CompositePodGroup's children's); they override MinMember, and a
	// sub-group missing from them has no quorum (the gang does not
	// start).
	Quorums map[string]int32
	// Topologies, when set, are the domains of the rule's sub-groups by
	// key; they override Topology, and a sub-group missing from them has
	// none.
	Topologies map[string]*TopologyConstraint
	// MinSubGroups is how many of the rule's sub-groups must reach their
	// quorum for the gang to start; 0 reads it from the pods
	// (MinSubGroupsAnnotation), whose absence means none.
	MinSubGroups int32
	// Topology is the domain each sub-group must or should share; nil
	// reads it from the pods (SubGroupTopologyRequiredAnnotation).
	Topology *TopologyConstraint
	// Source names where the rule is declared, for messages.
	Source string
}

// take returns the sub-group key of pod under r, false when r does not
// take it.
func (r *SubGroupRule) take(pod PodMeta) (string, bool) {
	if r.Selector != nil && !r.Selector.Matches(labels.Set(pod.GetLabels())) {
		return "", false
	}
	if r.KeyPodGroup {
		sg := schedulingGroupOf(pod)
		if sg == nil || sg.PodGroupName == nil || *sg.PodGroupName == "" {
			return "", false
		}
		return r.key(*sg.PodGroupName), true
	}
	if r.KeyAnnotation != "" {
		v, ok := pod.GetAnnotations()[r.KeyAnnotation]
		if !ok {
			return "", false
		}
		return r.key(v), true
	}
	if len(r.KeyLabels) == 0 {
		return r.key(""), true
	}
	values := make([]string, len(r.KeyLabels))
	podLabels := pod.GetLabels()
	for i, k := range r.KeyLabels {
		v, ok := podLabels[k]
		if !ok {
			return "", false
		}
		values[i] = v
	}
	return r.key(strings.Join(values, ",")), true
}

// key joins the rule's name and a sub-group's value.
func (r *SubGroupRule) key(value string) string {
	switch {
	case r.Name == "":
		return value
	case value == "":
		return r.Name
	}
	return r.Name + "/" + value
}

// SubGroupOf returns the rule (an index into rules) and the key of pod's
// sub-group; ok is false when no rule takes it.
func SubGroupOf(rules []SubGroupRule, pod PodMeta) (rule int, key string, ok bool) {
	for i := range rules {
		if k, ok := rules[i].take(pod); ok {
			return i, k, true
		}
	}
	return 0, "", false
}

// ownSubGroupRule is the rule of the project's own annotations.
var ownSubGroupRule = SubGroupRule{KeyAnnotation: SubGroupAnnotation, Source: "annotation " + SubGroupAnnotation}

// SubGroupRules returns the rules that split the job's pods into
// sub-groups: its group object's, else the project's own annotation's
// when any of its tasks carries it, else none (a single-level gang).
func (j *JobInfo) SubGroupRules() []SubGroupRule {
	if !j.ID.Gang {
		return nil
	}
	if p := j.policies[j.GroupKind()]; p != nil && len(p.SubGroups) > 0 {
		return p.SubGroups
	}
	if j.subGrouped > 0 {
		return []SubGroupRule{ownSubGroupRule}
	}
	return nil
}

// SubGroup is one sub-gang of a multi-level job, as a scheduling cycle
// sees it.
type SubGroup struct {
	// Key names it within the job, e.g. "workers/1".
	Key string
	// Rule is the index of its rule in Job.SubGroupRules.
	Rule int
	// MinMember is its quorum.
	MinMember int32
	// Topology is the domain its pods must or should share; nil for none.
	Topology *TopologyConstraint
	// Pending are its pods to place, a part of Job.Pending.
	Pending []*v1.Pod
	// Bound counts its tasks that hold a node, and PlacedNodes are their
	// nodes, one entry per task.
	Bound       int
	PlacedNodes []string
}

// Holds reports whether the sub-group reaches its quorum with placed
// more of its pods placed.
func (g *SubGroup) Holds(placed int) bool { return g.Bound+placed >= int(g.MinMember) }

// String names the sub-group for messages.
func (g *SubGroup) String() string { return "sub-group " + QuoteValue(g.Key) }

// SplitSubGroups splits job's pending pods (sorted by name) into the
// sub-groups rules define, reordering job.Pending so that each
// sub-group's pods are together, in key order (numbers by value), and the
// pods in no sub-group last; running are the pods of the job that hold a
// node, and nodes their nodes. A declaration that cannot be used (a
// quorum that is not a number) is returned as an error naming the pod and
// the annotation; job is then left as it was.
func SplitSubGroups(job *Job, rules []SubGroupRule, running []*v1.Pod, nodes []string) error {
	if len(rules) == 0 {
		return nil
	}
	var firstPending *v1.Pod
	if len(job.Pending) > 0 {
		firstPending = job.Pending[0]
	}
	index := map[string]int{}
	var groups []SubGroup
	var firstPod []*v1.Pod
	member := make([]int, len(job.Pending))
	at := func(rule int, key string, pod *v1.Pod) int {
		// Two rules may give the same key; their sub-groups differ.
		k := strconv.Itoa(rule) + "\x00" + key
		i, ok := index[k]
		if !ok {
			i = len(groups)
			index[k] = i
			groups = append(groups, SubGroup{Key: key, Rule: rule})
			firstPod = append(firstPod, pod)
		} else if firstPod[i].Name > pod.Name {
			firstPod[i] = pod
		}
		return i
	}
	for i, pod := range job.Pending {
		member[i] = -1
		if rule, key, ok := SubGroupOf(rules, pod); ok {
			member[i] = at(rule, key, pod)
		}
	}
	for i, pod := range running {
		if rule, key, ok := SubGroupOf(rules, pod); ok {
			g := &groups[at(rule, key, pod)]
			g.Bound++
			if i < len(nodes) {
				g.PlacedNodes = append(g.PlacedNodes, nodes[i])
			}
		}
	}
	for i := range groups {
		g, r, pod := &groups[i], &rules[groups[i].Rule], firstPod[i]
		g.MinMember, g.Topology = r.MinMember, r.Topology
		if r.Topologies != nil {
			g.Topology = r.Topologies[g.Key]
		}
		if r.Quorums != nil {
			if g.MinMember = r.Quorums[g.Key]; g.MinMember < 1 {
				return fmt.Errorf("%s of gang %s has no quorum in %s", g, job.ID, r.Source)
			}
			continue
		}
		if g.MinMember == 0 {
			n, err := podCount(pod, SubGroupMinAvailableAnnotation, 1)
			if err != nil {
				return err
			}
			if n == 0 {
				return fmt.Errorf("%s of gang %s declares no quorum: set annotation %s on its pods (pod %s/%s has none)",
					g, job.ID, SubGroupMinAvailableAnnotation, pod.Namespace, pod.Name)
			}
			g.MinMember = n
		}
		if g.Topology == nil {
			t, err := subGroupTopology(pod)
			if err != nil {
				return err
			}
			g.Topology = t
		}
	}
	// Pending pods grouped, sub-groups in key order, pods by name within.
	order := make([]int, len(groups))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int {
		if c := cmp.Compare(groups[a].Rule, groups[b].Rule); c != 0 {
			return c
		}
		return naturalCompare(groups[a].Key, groups[b].Key)
	})
	pending := make([]*v1.Pod, 0, len(job.Pending))
	sorted := make([]SubGroup, 0, len(groups))
	for _, gi := range order {
		g := groups[gi]
		start := len(pending)
		for i, pod := range job.Pending {
			if member[i] == gi {
				pending = append(pending, pod)
			}
		}
		g.Pending = pending[start:len(pending):len(pending)]
		sorted = append(sorted, g)
	}
	for i, pod := range job.Pending {
		if member[i] < 0 {
			pending = append(pending, pod)
		}
	}
	// A rule that leaves the whole's quorum in sub-groups to the pods
	// reads it from the job's first pending pod by name.
	for i := range rules {
		if rules[i].MinSubGroups != 0 || firstPending == nil {
			continue
		}
		n, err := podCount(firstPending, MinSubGroupsAnnotation, 0)
		if err != nil {
			return err
		}
		if n > 0 {
			rules = slices.Clone(rules)
			for k := range rules {
				if rules[k].MinSubGroups == 0 {
					rules[k].MinSubGroups = n
				}
			}
		}
		break
	}
	job.Pending, job.SubGroups, job.SubGroupRules = pending, sorted, rules
	return nil
}

// podCount reads the count annotation key of pod: 0 when absent, an
// error naming the pod when not an integer >= least.
func podCount(pod PodMeta, key string, least int) (int32, error) {
	v, ok := pod.GetAnnotations()[key]
	if !ok {
		return 0, nil
	}
	n, err := strconv.ParseInt(v, 10, 32)
	if err != nil || n < int64(least) {
		return 0, fmt.Errorf("annotation %s=%s of pod %s/%s must be an integer >= %d", key, QuoteValue(v), pod.GetNamespace(), pod.GetName(), least)
	}
	return int32(n), nil
}

// subGroupTopology reads the sub-group topology annotations of pod; nil
// for none.
func subGroupTopology(pod *v1.Pod) (*TopologyConstraint, error) {
	return annotatedTopology(pod, subGroupTopologyAnnotations)
}

// subGroupTopologyAnnotations are the annotations subGroupTopology reads,
// in order of precedence.
var subGroupTopologyAnnotations = []topologyAnnotation{
	{SubGroupTopologyRequiredAnnotation, true},
	{SubGroupTopologyPreferredAnnotation, false},
}

// naturalCompare orders keys with their numbers by value: "r/2" before
// "r/10".
func naturalCompare(a, b string) int {
	for a != "" && b != "" {
		da, db := digits(a), digits(b)
		if da > 0 && db > 0 {
			na, nb := strings.TrimLeft(a[:da], "0"), strings.TrimLeft(b[:db], "0")
			if c := cmp.Compare(len(na), len(nb)); c != 0 {
				return c
			}
			if c := strings.Compare(na, nb); c != 0 {
				return c
			}
			a, b = a[da:], b[db:]
			continue
		}
		if a[0] != b[0] {
			return cmp.Compare(a[0], b[0])
		}
		a, b = a[1:], b[1:]
	}
	return cmp.Compare(len(a), len(b))
}

// digits returns how many leading bytes of s are ASCII digits.
func digits(s string) int {
	n := 0
	for n < len(s) && s[n] >= '0' && s[n] <= '9' {
		n++
	}
	return n
}

// SubGroupsAtQuorum counts, per rule of job, the sub-groups that reach
// their quorum with placed (pod UID to node) placed: what the whole's
// quorum in sub-groups is checked against.
func SubGroupsAtQuorum(job *Job, placed map[string]string) []int {
	out := make([]int, len(job.SubGroupRules))
	for i := range job.SubGroups {
		g := &job.SubGroups[i]
		n := 0
		for _, pod := range g.Pending {
			if _, ok := placed[string(pod.UID)]; ok {
				n++
			}
		}
		if g.Holds(n) {
			out[g.Rule]++
		}
	}
	return out
}

// SubGroupQuorum returns the quorum of the sub-group of rule r that pod
// is in: the rule's for its key (Quorums), else the rule's, else the one pod declares
// (SubGroupMinAvailableAnnotation); 0 when neither says (the scheduler
// then does not start the gang) or pod's is not a number.
func SubGroupQuorum(r *SubGroupRule, pod PodMeta) int32 {
	if r.Quorums != nil {
		key, ok := r.take(pod)
		if !ok {
			return 0
		}
		return r.Quorums[key]
	}
	if r.MinMember > 0 {
		return r.MinMember
	}
	n, _ := podCount(pod, SubGroupMinAvailableAnnotation, 1)
	return n
}

// RuleMinSubGroups returns how many sub-groups of rule r must reach
// their quorum for a gang with pod among its pods: the rule's, else the
// one pod declares (MinSubGroupsAnnotation), else 0.
func RuleMinSubGroups(r *SubGroupRule, pod PodMeta) int32 {
	if r.MinSubGroups > 0 {
		return r.MinSubGroups
	}
	n, _ := podCount(pod, MinSubGroupsAnnotation, 0)
	return n
}
