package main

// What a step expects of the pods, what the demo observes of them through
// the API, and how the two and the scheduler's cache are compared.

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
)

// outcome is what a group of pods should show after a step: ours, where
// batch-scheduler put them or why not; or another scheduler's, where they
// run or that they are gone.
type outcome struct {
	// name shows the group, e.g. "ml/train-0..3".
	name string
	// pods are the group's "namespace/name" keys.
	pods []string
	// job, when set, names the batch/v1 Job ("namespace/name") whose pods
	// are the group, count of them, created by the Job controller under
	// names not known in advance.
	job   string
	count int
	// on maps each node to how many of the pods are bound there; nil means
	// that none is bound.
	on map[string]int
	// anywhere: every pod is bound, on any node but avoid (when set).
	anywhere bool
	avoid    string
	// phase is what every bound pod of the group should show: Running
	// when empty (the simulated kubelets run what is bound), or Succeeded.
	phase v1.PodPhase
	// theirs: the pods are another scheduler's, bound already; on and
	// phase are checked as for ours. gone: none of the pods exists any
	// more (another scheduler's, evicted and removed).
	theirs, gone bool
	// why are substrings of every pod's PodScheduled=False/Unschedulable
	// message, when none is bound.
	why []string
	// because explains the outcome to the reader; want, if set, is the
	// outcome in words, for what the pods do not show (checked apart).
	because, want string
}

// bound reports whether the group's pods should be bound.
func (o outcome) bound() bool { return o.anywhere || o.on != nil }

// wantPhase is the phase every bound pod of the group should show.
func (o outcome) wantPhase() v1.PodPhase {
	if o.phase == "" {
		return v1.PodRunning
	}
	return o.phase
}

// expectation renders where the group should be, e.g. "large, Running",
// "2 on jobs-1, 2 on jobs-2, Succeeded", "not bound" or "gone".
func (o outcome) expectation() string {
	if o.want != "" || o.name == "" {
		return o.want
	}
	var parts []string
	switch {
	case o.gone:
		return "gone"
	case o.anywhere && o.avoid != "":
		parts = append(parts, "bound, not on "+o.avoid)
	case o.anywhere:
		parts = append(parts, "bound")
	case o.on == nil:
		return "not bound"
	}
	for _, n := range slices.Sorted(maps.Keys(o.on)) {
		if len(o.pods) == 1 || len(o.on) == 1 {
			parts = append(parts, n)
		} else {
			parts = append(parts, fmt.Sprintf("%d on %s", o.on[n], n))
		}
	}
	return strings.Join(append(parts, string(o.wantPhase())), ", ")
}

func keys(ns string, names ...string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = ns + "/" + n
	}
	return out
}

// replace returns base with the outcomes of the same names replaced.
func replace(base []outcome, with ...outcome) []outcome {
	out := slices.Clone(base)
	for _, w := range with {
		i := slices.IndexFunc(out, func(o outcome) bool { return o.name == w.name })
		if i < 0 {
			panic("demo: no outcome named " + w.name)
		}
		out[i] = w
	}
	return out
}

func names(outcomes []outcome) []string {
	var out []string
	for _, o := range outcomes {
		out = append(out, o.name)
	}
	return out
}

// checkScript verifies that every step's outcome covers each of our pods
// exactly once, so that no pod goes unchecked: those seeded (ours) and
// those the step or an earlier one creates; and each Job created so far
// once, with as many pods as it completes.
func checkScript(ss []step, ours []string) error {
	ours = slices.Clone(ours)
	var jobs []string
	sizes := map[string]int{}
	for i, s := range ss {
		ours = append(ours, ourPods(s.creates)...)
		for _, j := range s.jobs {
			jobs = append(jobs, j.key())
			sizes[j.key()] = int(j.n)
		}
		var covered, coveredJobs []string
		for _, o := range s.expect {
			switch {
			case o.gone || o.theirs:
			case o.job != "":
				coveredJobs = append(coveredJobs, o.job)
				if o.count != sizes[o.job] {
					return fmt.Errorf("step %d: the outcome of Job %s counts %d pods, not %d", i+1, o.job, o.count, sizes[o.job])
				}
			default:
				covered = append(covered, o.pods...)
			}
		}
		if !sameKeys(covered, ours) {
			return fmt.Errorf("step %d: the expected outcome covers %v, not the pods of batch-scheduler %v", i+1, covered, ours)
		}
		if !sameKeys(coveredJobs, jobs) {
			return fmt.Errorf("step %d: the expected outcome covers the Jobs %v, not those created %v", i+1, coveredJobs, jobs)
		}
		for _, name := range s.shown {
			if !slices.ContainsFunc(s.expect, func(o outcome) bool { return o.name == name }) {
				return fmt.Errorf("step %d: no outcome named %s", i+1, name)
			}
		}
	}
	return nil
}

// podsOf returns the keys of o's pods: its own, or those of its Job in
// states, sorted.
func podsOf(o outcome, states map[string]podState) []string {
	if o.job == "" {
		return o.pods
	}
	var out []string
	for key, s := range states {
		if s.Job == o.job {
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

// compare returns how states differ from expect: mismatches that may
// still resolve (a pod not placed or not running yet, a message not
// updated yet), and final ones that cannot (a pod bound where it should
// not be: bindings are not undone; a pod past the expected phase).
func compare(expect []outcome, states map[string]podState) (pending, final []string) {
	for _, o := range expect {
		if o.gone {
			for _, key := range o.pods {
				if s, ok := states[key]; ok {
					pending = append(pending, fmt.Sprintf("%s still exists (phase %s, being deleted %t)", key, phaseOf(s), s.Deleting))
				}
			}
			continue
		}
		pods := podsOf(o, states)
		switch {
		case o.job != "" && len(pods) < o.count:
			pending = append(pending, fmt.Sprintf("the Job controller has created %d of the %d pods of Job %s so far", len(pods), o.count, o.job))
			continue
		case o.job != "" && len(pods) > o.count:
			final = append(final, fmt.Sprintf("Job %s has %d pods, not %d: one was replaced", o.job, len(pods), o.count))
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
			case o.anywhere && s.Node == "":
				pending = append(pending, fmt.Sprintf("%s is not bound yet (%s)", key, s.Message))
			case o.anywhere && s.Node == o.avoid:
				final = append(final, fmt.Sprintf("%s is bound to %s; expected anywhere but there", key, s.Node))
			case o.anywhere:
			case o.on == nil && s.Node != "":
				final = append(final, fmt.Sprintf("%s is bound to %s; expected not bound", key, s.Node))
			case o.on == nil && !s.Unschedulable:
				pending = append(pending, key+" has no PodScheduled=False/Unschedulable condition yet")
			case o.on == nil:
				for _, w := range o.why {
					if !strings.Contains(s.Message, w) {
						pending = append(pending, fmt.Sprintf("%s is Unschedulable with %q, which does not contain %q", key, s.Message, w))
					}
				}
			case s.Node == "":
				allBound = false
				if s.Unschedulable {
					pending = append(pending, fmt.Sprintf("%s is not bound (expected on %s): %s", key, o.expectation(), s.Message))
				} else {
					pending = append(pending, fmt.Sprintf("%s is not bound yet (expected on %s)", key, o.expectation()))
				}
			case o.on[s.Node] == 0:
				final = append(final, fmt.Sprintf("%s is bound to %s; expected on %s", key, s.Node, o.expectation()))
				allBound = false
			default:
				counts[s.Node]++
			}
			if ok && s.Node != "" && o.bound() {
				p, f := comparePhase(key, s, o.wantPhase())
				pending, final = append(pending, p...), append(final, f...)
			}
		}
		if o.on != nil && allBound && !maps.Equal(counts, o.on) {
			final = append(final, fmt.Sprintf("%s are bound %v; expected %s", o.name, counts, o.expectation()))
		}
	}
	return pending, final
}

// comparePhase compares a bound pod's phase with want. A pod runs, then
// finishes: one that is past want, or that failed, will not come back.
func comparePhase(key string, s podState, want v1.PodPhase) (pending, final []string) {
	got := phaseOf(s)
	switch {
	case got == want:
		return nil, nil
	case got == v1.PodFailed || phaseRank(got) > phaseRank(want):
		return nil, []string{fmt.Sprintf("%s is %s; expected %s", key, got, want)}
	}
	return []string{fmt.Sprintf("%s is %s, not %s yet", key, got, want)}, nil
}

// uncovered returns the pods of batch-scheduler that no outcome of
// expect covers, e.g. a pod a Job controller created unexpectedly.
func uncovered(expect []outcome, states map[string]podState) []string {
	covered := map[string]bool{}
	for _, o := range expect {
		for _, key := range podsOf(o, states) {
			covered[key] = true
		}
	}
	var out []string
	for key, s := range states {
		if s.Scheduler == ourScheduler && !covered[key] {
			out = append(out, key+" is a pod of batch-scheduler that the demo does not expect")
		}
	}
	slices.Sort(out)
	return out
}

// sameKeys reports whether a and b hold the same keys, in any order.
func sameKeys(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}
