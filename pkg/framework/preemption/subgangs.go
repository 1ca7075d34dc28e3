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

package preemption

import (
	"slices"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/types"

	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
)

// Victims of a multi-level gang (framework.JobInfo.SubGroupRules): a
// victim search never leaves one of its sub-gangs running below that
// sub-gang's quorum, nor the whole running with fewer sub-gangs at quorum
// than a rule's min-sub-groups or fewer pods than its quorum. A sub-gang
// that would be left below its quorum goes whole, and a gang that would
// be left short goes whole; a pod is an elastic extra (aboveQuorum) only
// when its sub-gang and the whole keep their quorums without it.

// subGangs are the sub-gangs of a multi-level victim gang as one
// simulation weighs them: the gang's running pods (bound or assumed, not
// finished, not terminating, not another preemption's victims) by
// sub-group, and the quorums each sub-group and the whole must keep. The
// cache's JobInfo does not change during a simulation, so they are
// counted out once; what the simulation's victims take is counted anew
// each time.
type subGangs struct {
	groups []subGang
	// of is the index in groups of the sub-group of each running pod in
	// one; loose are the running pods in none.
	of    map[types.UID]int
	loose []*framework.TaskInfo
	// minSubGroups is, per rule, how many of the rule's sub-groups must
	// hold their quorum; minAvailable is the whole's quorum in pods.
	minSubGroups []int
	minAvailable int
	// left (per sub-group) and holding (per rule) are what the last
	// count found, kept so that counts allocate nothing.
	left, holding []int
}

// subGang is one sub-group of a victim gang.
type subGang struct {
	rule int
	// quorum is the sub-group's quorum, at least 1: a sub-group left
	// without pods does not hold its quorum.
	quorum int
	// running are its running pods, by name.
	running []*framework.TaskInfo
}

// newSubGangs counts out the sub-gangs rules (non-empty) make of info's
// tasks, with the going pods (other preemptions' victims) no longer
// running. Each sub-group's quorum is read from its first pod by name
// and each rule's min-sub-groups from the gang's first pod by name, as
// the scheduler reads them (framework.SplitSubGroups).
func newSubGangs(info *framework.JobInfo, rules []framework.SubGroupRule, going map[types.UID]bool) *subGangs {
	tasks := make([]*framework.TaskInfo, 0, len(info.Tasks))
	for _, t := range info.Tasks {
		tasks = append(tasks, t)
	}
	slices.SortFunc(tasks, func(a, b *framework.TaskInfo) int { return strings.Compare(a.GetName(), b.GetName()) })
	s := &subGangs{
		of:           make(map[types.UID]int, len(tasks)),
		minSubGroups: make([]int, len(rules)),
		minAvailable: int(info.MinAvailable()),
		holding:      make([]int, len(rules)),
	}
	// First the sub-group of each running pod (-1: not running, or in
	// none) and how many each has, then the sub-groups' pods, cut from
	// one array.
	member := make([]int, len(tasks))
	var sizes []int
	running := 0
	index := map[string]int{}
	for i, t := range tasks {
		member[i] = -1
		runs := t.OnNode() && t.Counted && t.GetDeletionTimestamp() == nil && !going[t.GetUID()]
		rule, key, ok := framework.SubGroupOf(rules, t)
		if !ok {
			if runs {
				s.loose = append(s.loose, t)
			}
			continue
		}
		g, seen := index[key]
		if !seen {
			g = len(s.groups)
			index[key] = g
			s.groups = append(s.groups, subGang{rule: rule, quorum: max(int(framework.SubGroupQuorum(&rules[rule], t)), 1)})
			sizes = append(sizes, 0)
		}
		if runs {
			member[i] = g
			sizes[g]++
			running++
		}
	}
	all := make([]*framework.TaskInfo, running)
	at := 0
	for g, n := range sizes {
		s.groups[g].running = all[at : at : at+n]
		at += n
	}
	for i, g := range member {
		if g >= 0 {
			s.groups[g].running = append(s.groups[g].running, tasks[i])
			s.of[tasks[i].GetUID()] = g
		}
	}
	if len(tasks) > 0 {
		for r := range rules {
			s.minSubGroups[r] = int(framework.RuleMinSubGroups(&rules[r], tasks[0]))
		}
	}
	s.left = make([]int, len(s.groups))
	return s
}

// count counts what of the gang keeps running once the victims chosen
// and the pods of out go: the pods of each sub-group (s.left), the
// sub-groups of each rule that then hold their quorum (s.holding) and,
// returned, the pods in all.
func (s *subGangs) count(chosen map[types.UID]*Victim, out map[types.UID]bool) int {
	gone := func(t *framework.TaskInfo) bool {
		_, ok := chosen[t.GetUID()]
		return ok || out[t.GetUID()]
	}
	clear(s.holding)
	total := 0
	for i := range s.groups {
		g := &s.groups[i]
		n := 0
		for _, t := range g.running {
			if !gone(t) {
				n++
			}
		}
		s.left[i] = n
		total += n
		if n >= g.quorum {
			s.holding[g.rule]++
		}
	}
	for _, t := range s.loose {
		if !gone(t) {
			total++
		}
	}
	return total
}

// holds reports whether the whole keeps its quorums with total pods
// running and the sub-groups of s.holding at theirs.
func (s *subGangs) holds(total int) bool {
	if total < s.minAvailable {
		return false
	}
	for r, n := range s.holding {
		if n < s.minSubGroups[r] {
			return false
		}
	}
	return true
}

// spare reports whether t, a running pod of the gang that is not chosen,
// is an elastic extra: with it and the victims chosen gone, its
// sub-group (if it is in one) and the whole keep their quorums.
func (s *subGangs) spare(t *framework.TaskInfo, chosen map[types.UID]*Victim) bool {
	total := s.count(chosen, nil)
	if g, ok := s.of[t.GetUID()]; ok && s.left[g]-1 < s.groups[g].quorum {
		return false
	}
	// A sub-group that keeps its quorum without t holds as many of its
	// rule's sub-groups at quorum as with it.
	return s.holds(total - 1)
}

// expand returns the running pods of the gang that must go besides the
// victims chosen and a candidate's, out (which holds them; taken lists
// them, of any job): the rest of each sub-group a victim of taken would
// leave below its quorum and then, when the whole would miss one of its
// quorums, the rest of the gang; by name. It adds them to out.
func (s *subGangs) expand(taken []*framework.TaskInfo, chosen map[types.UID]*Victim, out map[types.UID]bool) []*framework.TaskInfo {
	total := s.count(chosen, out)
	if total == 0 {
		return nil
	}
	var rest []*framework.TaskInfo
	add := func(ts []*framework.TaskInfo) {
		for _, t := range ts {
			if _, ok := chosen[t.GetUID()]; ok || out[t.GetUID()] {
				continue
			}
			out[t.GetUID()] = true
			rest = append(rest, t)
		}
	}
	for _, t := range taken {
		g, ok := s.of[t.GetUID()]
		if !ok || s.left[g] == 0 || s.left[g] >= s.groups[g].quorum {
			continue
		}
		// Left below its quorum, the sub-group counted for no rule:
		// taking it whole changes no rule's count of sub-groups at quorum.
		total -= s.left[g]
		s.left[g] = 0
		add(s.groups[g].running)
	}
	if total > 0 && !s.holds(total) {
		for i := range s.groups {
			add(s.groups[i].running)
		}
		add(s.loose)
	}
	sort.Slice(rest, func(i, j int) bool { return rest[i].GetName() < rest[j].GetName() })
	return rest
}
