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

package harness

// Expected outcomes: what a group of pods, or the pods of a Job, should
// show through the API after a change, and how what the API shows is
// compared with them. The demo's steps are written with them; a test
// waits on Compare the same way.

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	batchv1 "k8s.io/api/batch/v1"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// Outcome is what a group of pods should show after a step: ours, where
// batch-scheduler put them or why not; or another scheduler's, where they
// run or that they are gone.
type Outcome struct {
	// Name shows the group, e.g. "ml/train-0..3".
	Name string
	// Pods are the group's "namespace/name" keys.
	Pods []string
	// Job, when set, names the batch/v1 Job ("namespace/name") whose pods
	// are the group, Count of them, created by the Job controller under
	// names not known in advance.
	Job   string
	Count int
	// On maps each node to how many of the pods are bound there; nil
	// means that none is bound.
	On map[string]int
	// Anywhere: every pod is bound, on any node but Avoid (when set).
	Anywhere bool
	Avoid    string
	// Phase is what every bound pod of the group should show: Running
	// when empty, or Succeeded.
	Phase v1.PodPhase
	// Theirs: the pods are another scheduler's, bound already; On and
	// Phase are checked as for ours. Gone: none of the pods exists any
	// more.
	Theirs, Gone bool
	// Why are substrings of every pod's PodScheduled=False/Unschedulable
	// message, when none is bound.
	Why []string
	// Because explains the outcome to a reader; Want, if set, is the
	// outcome in words, for what the pods do not show (checked apart).
	Because, Want string
}

// Bound reports whether the group's pods should be bound.
func (o Outcome) Bound() bool { return o.Anywhere || o.On != nil }

// WantPhase is the phase every bound pod of the group should show.
func (o Outcome) WantPhase() v1.PodPhase {
	if o.Phase == "" {
		return v1.PodRunning
	}
	return o.Phase
}

// Expectation renders where the group should be, e.g. "large, Running",
// "2 on jobs-1, 2 on jobs-2, Succeeded", "not bound" or "gone".
func (o Outcome) Expectation() string {
	if o.Want != "" || o.Name == "" {
		return o.Want
	}
	var parts []string
	switch {
	case o.Gone:
		return "gone"
	case o.Anywhere && o.Avoid != "":
		parts = append(parts, "bound, not on "+o.Avoid)
	case o.Anywhere:
		parts = append(parts, "bound")
	case o.On == nil:
		return "not bound"
	}
	for _, n := range slices.Sorted(maps.Keys(o.On)) {
		if len(o.Pods) == 1 || len(o.On) == 1 {
			parts = append(parts, n)
		} else {
			parts = append(parts, fmt.Sprintf("%d on %s", o.On[n], n))
		}
	}
	return strings.Join(append(parts, string(o.WantPhase())), ", ")
}

func Keys(ns string, names ...string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = ns + "/" + n
	}
	return out
}

// PodsOf returns the keys of o's pods: its own, or those of its Job in
// states, sorted.
func PodsOf(o Outcome, states map[string]Pod) []string {
	if o.Job == "" {
		return o.Pods
	}
	var out []string
	for key, s := range states {
		if s.Job == o.Job {
			out = append(out, key)
		}
	}
	slices.Sort(out)
	return out
}

// phaseRank orders the phases a pod goes through.
func phaseRank(p v1.PodPhase) int {
	switch p {
	case v1.PodRunning:
		return 1
	case v1.PodSucceeded, v1.PodFailed:
		return 2
	}
	return 0
}

// Compare returns how states differ from expect: mismatches that may
// still resolve (a pod not placed or not running yet, a message not
// updated yet), and final ones that cannot (a pod bound where it should
// not be: bindings are not undone; a pod past the expected phase).
func Compare(expect []Outcome, states map[string]Pod) (pending, final []string) {
	for _, o := range expect {
		if o.Gone {
			for _, key := range o.Pods {
				if s, ok := states[key]; ok {
					pending = append(pending, fmt.Sprintf("%s still exists (phase %s, being deleted %t)", key, PhaseOf(s), s.Deleting))
				}
			}
			continue
		}
		pods := PodsOf(o, states)
		switch {
		case o.Job != "" && len(pods) < o.Count:
			pending = append(pending, fmt.Sprintf("the Job controller has created %d of the %d pods of Job %s so far", len(pods), o.Count, o.Job))
			continue
		case o.Job != "" && len(pods) > o.Count:
			final = append(final, fmt.Sprintf("Job %s has %d pods, not %d: one was replaced", o.Job, len(pods), o.Count))
			continue
		}
		counts := map[string]int{}
		allBound := true // and where expected
		for _, key := range pods {
			s, ok := states[key]
			switch {
			case !ok:
				final = append(final, key+" is gone")
				allBound = false
			case o.Anywhere && s.Node == "":
				pending = append(pending, fmt.Sprintf("%s is not bound yet (%s)", key, s.Message))
			case o.Anywhere && s.Node == o.Avoid:
				final = append(final, fmt.Sprintf("%s is bound to %s; expected anywhere but there", key, s.Node))
			case o.Anywhere:
			case o.On == nil && s.Node != "":
				final = append(final, fmt.Sprintf("%s is bound to %s; expected not bound", key, s.Node))
			case o.On == nil && !s.Unschedulable:
				pending = append(pending, key+" has no PodScheduled=False/Unschedulable condition yet")
			case o.On == nil:
				for _, w := range o.Why {
					if !strings.Contains(s.Message, w) {
						pending = append(pending, fmt.Sprintf("%s is Unschedulable with %q, which does not contain %q", key, s.Message, w))
					}
				}
			case s.Node == "":
				allBound = false
				if s.Unschedulable {
					pending = append(pending, fmt.Sprintf("%s is not bound (expected on %s): %s", key, o.Expectation(), s.Message))
				} else {
					pending = append(pending, fmt.Sprintf("%s is not bound yet (expected on %s)", key, o.Expectation()))
				}
			case o.On[s.Node] == 0:
				final = append(final, fmt.Sprintf("%s is bound to %s; expected on %s", key, s.Node, o.Expectation()))
				allBound = false
			default:
				counts[s.Node]++
			}
			if ok && s.Node != "" && o.Bound() {
				p, f := comparePhase(key, s, o.WantPhase())
				pending, final = append(pending, p...), append(final, f...)
			}
		}
		if o.On != nil && allBound && !maps.Equal(counts, o.On) {
			final = append(final, fmt.Sprintf("%s are bound %v; expected %s", o.Name, counts, o.Expectation()))
		}
	}
	return pending, final
}

// comparePhase compares a bound pod's phase with want. A pod runs, then
// finishes: one that is past want, or that failed, will not come back.
func comparePhase(key string, s Pod, want v1.PodPhase) (pending, final []string) {
	got := PhaseOf(s)
	switch {
	case got == want:
		return nil, nil
	case got == v1.PodFailed || phaseRank(got) > phaseRank(want):
		return nil, []string{fmt.Sprintf("%s is %s; expected %s", key, got, want)}
	}
	return []string{fmt.Sprintf("%s is %s, not %s yet", key, got, want)}, nil
}

// Uncovered returns the pods of scheduler that no Outcome of expect
// covers, e.g. a pod a Job controller created unexpectedly.
func Uncovered(expect []Outcome, states map[string]Pod, scheduler string) []string {
	covered := map[string]bool{}
	for _, o := range expect {
		for _, key := range PodsOf(o, states) {
			covered[key] = true
		}
	}
	var out []string
	for key, s := range states {
		if s.Scheduler == scheduler && !covered[key] {
			out = append(out, key+" is a pod of "+scheduler+" that no outcome expects")
		}
	}
	slices.Sort(out)
	return out
}

// Job is what the API says of a Job.
type Job struct {
	Key                       string
	Completions               int32
	Active, Succeeded, Failed int32
	// Complete and FailedCond: the conditions Complete and Failed are
	// True.
	Complete, FailedCond bool
}

// ObserveJobs lists every batch/v1 Job through the API.
func ObserveJobs(ctx context.Context, client kubernetes.Interface) (map[string]Job, error) {
	list, err := client.BatchV1().Jobs(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing Jobs: %w", err)
	}
	out := make(map[string]Job, len(list.Items))
	for _, j := range list.Items {
		s := Job{Key: j.Namespace + "/" + j.Name, Active: j.Status.Active, Succeeded: j.Status.Succeeded, Failed: j.Status.Failed}
		if j.Spec.Completions != nil {
			s.Completions = *j.Spec.Completions
		}
		for _, c := range j.Status.Conditions {
			switch {
			case c.Status != v1.ConditionTrue:
			case c.Type == batchv1.JobComplete:
				s.Complete = true
			case c.Type == batchv1.JobFailed:
				s.FailedCond = true
			}
		}
		out[s.Key] = s
	}
	return out, nil
}

// CompareJobs returns how the Jobs differ from the Outcomes of expect
// that name one: not placed or Running, the Job has every pod active;
// Succeeded, every pod succeeded and the Job is Complete. A failed pod or
// Job, or a Job Complete too early, is final.
func CompareJobs(expect []Outcome, jobs map[string]Job) (pending, final []string) {
	for _, o := range expect {
		if o.Job == "" {
			continue
		}
		s, ok := jobs[o.Job]
		switch {
		case !ok:
			final = append(final, "Job "+o.Job+" is gone")
			continue
		case s.Failed > 0 || s.FailedCond:
			final = append(final, fmt.Sprintf("Job %s failed (%d pods failed)", o.Job, s.Failed))
			continue
		}
		active, succeeded, complete := int32(o.Count), int32(0), false
		if o.On != nil && o.Phase == v1.PodSucceeded {
			active, succeeded, complete = 0, int32(o.Count), true
		}
		if s.Complete && !complete {
			final = append(final, fmt.Sprintf("Job %s is already Complete; expected it still running", o.Job))
			continue
		}
		if s.Active != active || s.Succeeded != succeeded || s.Complete != complete {
			pending = append(pending, fmt.Sprintf("Job %s shows %s; expected %s", o.Job, s.Status(), Job{Active: active, Succeeded: succeeded, Complete: complete}.Status()))
		}
	}
	return pending, final
}

// Status renders the Job's counts and conditions, e.g. "active 4,
// succeeded 0" or "active 0, succeeded 4, Complete".
func (s Job) Status() string {
	out := fmt.Sprintf("active %d, succeeded %d", s.Active, s.Succeeded)
	if s.Failed > 0 {
		out += fmt.Sprintf(", failed %d", s.Failed)
	}
	switch {
	case s.Complete:
		out += ", Complete"
	case s.FailedCond:
		out += ", Failed"
	}
	return out
}

// PhaseOf is the pod's phase, Pending when the API has none yet.
func PhaseOf(s Pod) v1.PodPhase {
	if s.Phase == "" {
		return v1.PodPending
	}
	return s.Phase
}
