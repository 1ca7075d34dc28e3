package podgroups

import (
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
	// unschedulable is the message of a pod's PodScheduled=False
	// condition, if any pod has one.
	unschedulable string
}

// stateOf summarises the tasks of job against the quorum min.
func stateOf(job *framework.JobInfo, min int32) gangState {
	return stateOfSome(job, min, nil)
}

// stateOfSome summarises the tasks of job that keep keeps (all when nil)
// against the quorum min.
func stateOfSome(job *framework.JobInfo, min int32, keep func(*framework.TaskInfo) bool) gangState {
	s := gangState{min: min}
	for _, t := range job.Tasks {
		if keep != nil && !keep(t) {
			continue
		}
		switch t.Pod.Status.Phase {
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
		} else if s.unschedulable == "" {
			for _, c := range t.Pod.Status.Conditions {
				if c.Type == v1.PodScheduled && c.Status == v1.ConditionFalse && c.Message != "" {
					s.unschedulable = c.Message
				}
			}
		}
	}
	return s
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
	case s.onNode >= int(s.min):
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
