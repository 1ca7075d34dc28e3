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

package main

// What a step expects of the pods, what the demo observes of them through
// the API, and how the two and the scheduler's cache are compared.

import (
	"fmt"
	"slices"

	"github.com/batch-scheduler/batch-scheduler/test/harness"
)

// outcome is what a group of pods should show after a step.
type outcome = harness.Outcome

// keys are the "namespace/name" keys of the pods names of ns.
var keys = harness.Keys

// replace returns base with the outcomes of the same names replaced.
func replace(base []outcome, with ...outcome) []outcome {
	out := slices.Clone(base)
	for _, w := range with {
		i := slices.IndexFunc(out, func(o outcome) bool { return o.Name == w.Name })
		if i < 0 {
			panic("demo: no outcome named " + w.Name)
		}
		out[i] = w
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
			case o.Gone || o.Theirs:
			case o.Job != "":
				coveredJobs = append(coveredJobs, o.Job)
				if o.Count != sizes[o.Job] {
					return fmt.Errorf("step %d: the outcome of Job %s counts %d pods, not %d", i+1, o.Job, o.Count, sizes[o.Job])
				}
			default:
				covered = append(covered, o.Pods...)
			}
		}
		if !harness.SameKeys(covered, ours) {
			return fmt.Errorf("step %d: the expected outcome covers %v, not the pods of batch-scheduler %v", i+1, covered, ours)
		}
		if !harness.SameKeys(coveredJobs, jobs) {
			return fmt.Errorf("step %d: the expected outcome covers the Jobs %v, not those created %v", i+1, coveredJobs, jobs)
		}
		for _, name := range s.shown {
			if !slices.ContainsFunc(s.expect, func(o outcome) bool { return o.Name == name }) {
				return fmt.Errorf("step %d: no outcome named %s", i+1, name)
			}
		}
	}
	return nil
}
