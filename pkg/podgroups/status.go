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

package podgroups

import (
	"strconv"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
)

// Phases written to a scheduler-plugins PodGroup's status.phase.
const (
	CoschedulingPending       = "Pending"
	CoschedulingPreScheduling = "PreScheduling"
	CoschedulingScheduling    = "Scheduling"
	CoschedulingScheduled     = "Scheduled"
	CoschedulingRunning       = "Running"
	CoschedulingFinished      = "Finished"
	CoschedulingFailed        = "Failed"
)

// Phases written to a Volcano PodGroup's status.phase.
const (
	VolcanoPending   = "Pending"
	VolcanoInqueue   = "Inqueue"
	VolcanoRunning   = "Running"
	VolcanoUnknown   = "Unknown"
	VolcanoCompleted = "Completed"
)

// gangState summarises a gang's pods for the status of its group object.
type gangState struct {
	min int32
	// exist counts pods not yet finished or bound; onNode those bound or
	// assumed and not finished; running those whose phase is Running.
	exist, onNode, running, succeeded, failed int
	// unschedulable is the message of the PodScheduled=False condition
	// of the first pod by name that has one.
	unschedulable string
	// short is set for a multi-level gang of which fewer sub-groups hold
	// their quorum on nodes than one of its rules asks for: its pods may
	// be enough in number and still not be the gang's quorum.
	short bool
}

// scheduled reports whether the gang's quorum holds nodes (or finished
// there): min pods, and for a multi-level gang enough sub-groups at
// theirs.
func (s gangState) scheduled() bool { return s.onNode+s.succeeded >= int(s.min) && !s.short }

// stateOf summarises the tasks of job against the quorum min.
func stateOf(job *framework.JobInfo, min int32) gangState {
	return stateOfSome(job, min, nil)
}

// stateOfSome summarises the tasks of job that keep keeps (all when nil)
// against the quorum min.
func stateOfSome(job *framework.JobInfo, min int32, keep func(*framework.TaskInfo) bool) gangState {
	s := gangState{min: min}
	from := "" // the pod whose message s.unschedulable is
	for _, t := range job.Tasks {
		if keep != nil && !keep(t) {
			continue
		}
		switch t.Phase() {
		case v1.PodSucceeded:
			s.succeeded++
			continue
		case v1.PodFailed:
			s.failed++
			continue
		case v1.PodRunning:
			s.running++
		}
		s.exist++
		if t.OnNode() {
			s.onNode++
		} else if s.unschedulable == "" || t.GetName() < from {
			// The message of the first pod by name that has one, so
			// that the status does not change with the order of a map.
			// A pending task keeps its whole pod.
			for _, c := range t.PodObject().Status.Conditions {
				if c.Type == v1.PodScheduled && c.Status == v1.ConditionFalse && c.Message != "" {
					s.unschedulable, from = c.Message, t.GetName()
				}
			}
		}
	}
	if keep == nil {
		s.short = subGroupsShort(job)
	}
	return s
}

// subGroupsShort reports whether job is a multi-level gang of which
// fewer sub-groups hold their quorum (pods on nodes or succeeded) than a
// rule of its asks for.
func subGroupsShort(job *framework.JobInfo) bool {
	rules := job.SubGroupRules()
	if len(rules) == 0 {
		return false
	}
	var first *framework.TaskInfo // the quorum in sub-groups is read from the first pod by name
	held := make([]map[string]int, len(rules))
	quorum := map[string]int32{}
	for _, t := range job.Tasks {
		if first == nil || t.GetName() < first.GetName() {
			first = t
		}
		rule, key, ok := framework.SubGroupOf(rules, t)
		if !ok {
			continue
		}
		k := strconv.Itoa(rule) + "\x00" + key
		if _, seen := quorum[k]; !seen {
			quorum[k] = framework.SubGroupQuorum(&rules[rule], t)
		}
		if held[rule] == nil {
			held[rule] = map[string]int{}
		}
		if t.Phase() == v1.PodSucceeded || (t.OnNode() && t.Phase() != v1.PodFailed) {
			held[rule][k]++
		}
	}
	for i := range rules {
		need := framework.RuleMinSubGroups(&rules[i], first)
		at := 0
		for k, n := range held[i] {
			if q := quorum[k]; q > 0 && n >= int(q) {
				at++
			}
		}
		if at < int(need) {
			return true
		}
	}
	return false
}

// coschedulingPhase follows the life cycle scheduler-plugins documents
// for its PodGroup.
func coschedulingPhase(s gangState) string {
	total := s.exist + s.succeeded + s.failed
	switch {
	case total > 0 && s.succeeded == total:
		return CoschedulingFinished
	case s.failed > 0 && s.onNode+s.succeeded < int(s.min):
		return CoschedulingFailed
	case s.running >= int(s.min):
		return CoschedulingRunning
	case s.onNode >= int(s.min):
		return CoschedulingScheduled
	case s.onNode > 0:
		return CoschedulingScheduling
	case s.exist >= int(s.min):
		return CoschedulingPreScheduling
	}
	return CoschedulingPending
}

// volcanoPhase follows Volcano's PodGroup phases: Running once minMember
// pods hold nodes, Unknown when some but fewer do, Inqueue when the gang
// is complete and waits for placement, Pending before.
func volcanoPhase(s gangState) string {
	total := s.exist + s.succeeded + s.failed
	switch {
	case total > 0 && s.succeeded == total:
		return VolcanoCompleted
	case s.scheduled():
		return VolcanoRunning
	case s.onNode > 0:
		return VolcanoUnknown
	case s.exist >= int(s.min):
		return VolcanoInqueue
	}
	return VolcanoPending
}

// currentPhase returns status.phase of u.
func currentPhase(u *unstructured.Unstructured) string {
	p, _, _ := unstructured.NestedString(u.Object, "status", "phase")
	return p
}
