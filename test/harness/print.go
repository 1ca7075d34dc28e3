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

// Tables of what the API and the scheduler show, for a reader: the demo
// prints them after each step, a test when it fails.

import (
	"cmp"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/batch-scheduler/batch-scheduler/pkg/apis/batchscheduler/v1alpha1"
	"github.com/batch-scheduler/batch-scheduler/pkg/cache"
	"github.com/batch-scheduler/batch-scheduler/pkg/resources"
)

// whyWidth is where the WHY column wraps.
const whyWidth = 90

// WritePods writes every pod of pods to out: its job in the cache d (if
// not nil; without the namespace, which the pod's key shows), its node,
// its phase and why it is there or not. scheduler is the scheduler under
// test (the pods of others are said to be theirs).
func WritePods(out io.Writer, pods map[string]Pod, d *cache.Dump, scheduler string) {
	states := pods
	jobs := map[string]string{}
	if d != nil {
		for _, j := range d.Jobs {
			for _, t := range j.Tasks {
				jobs[t.Pod] = j.ID[strings.Index(j.ID, "/")+1:]
			}
		}
	}
	w := tabwriter.NewWriter(out, 2, 4, 2, ' ', 0)
	fmt.Fprintln(w, "NAMESPACE/POD\tJOB\tNODE\tPHASE\tWHY")
	for _, key := range slices.Sorted(maps.Keys(states)) {
		s := states[key]
		job, node := jobs[key], s.Node
		if job == "" {
			job = "-"
		}
		if node == "" {
			node = "-"
		}
		lines := Wrap(why(s, scheduler), whyWidth)
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\n", key, job, node, PhaseOf(s), lines[0])
		for _, l := range lines[1:] {
			fmt.Fprintf(w, "\t\t\t\t  %s\n", l)
		}
	}
	w.Flush()
}

// why says why a pod is where it is.
func why(s Pod, ourScheduler string) string {
	switch {
	case s.Deleting:
		return "being deleted"
	case s.Node != "" && !s.Counted():
		return "finished: no longer counts on its node"
	case s.Scheduler != ourScheduler && s.Node != "":
		return "bound by " + s.Scheduler
	case s.Scheduler != ourScheduler:
		return "pending for " + s.Scheduler + ": not ours"
	case s.Node != "":
		return "bound"
	case s.Unschedulable:
		return s.Message
	}
	return "pending, not tried yet"
}

// Wrap splits text into lines of at most width bytes at spaces (a longer
// word stays whole).
func Wrap(text string, width int) []string {
	var lines []string
	line := ""
	for _, word := range strings.Fields(text) {
		if line != "" && len(line)+1+len(word) > width {
			lines = append(lines, line)
			line = ""
		}
		if line != "" {
			line += " "
		}
		line += word
	}
	return append(lines, line)
}

// WriteNodes writes the nodes as the cache d sees them to out:
// allocatable, what the pods request, the external usage, and what is
// idle before (as prev left it; nil for none) and now, with the pods bound
// there by phase as the API shows them.
func WriteNodes(out io.Writer, prev, d *cache.Dump, states map[string]Pod) {
	before := map[string]string{}
	if prev != nil {
		for _, n := range prev.Nodes {
			before[n.Name] = Amounts(n.Idle)
		}
	}
	phases := map[string]map[v1.PodPhase]int{}
	for _, s := range states {
		if s.Node == "" {
			continue
		}
		if phases[s.Node] == nil {
			phases[s.Node] = map[v1.PodPhase]int{}
		}
		phases[s.Node][PhaseOf(s)]++
	}
	w := tabwriter.NewWriter(out, 2, 4, 2, ' ', 0)
	fmt.Fprintln(w, "NODE\tALLOCATABLE\tREQUESTED\tEXTERNAL\tIDLE BEFORE\tIDLE NOW\tPODS")
	for _, n := range d.Nodes {
		name := n.Name
		if n.Placeholder {
			name += " (placeholder)"
		}
		external, idleBefore := "-", "-"
		if !n.External.IsZero() {
			external = Amounts(n.External)
		}
		if b, ok := before[n.Name]; ok {
			idleBefore = b
		}
		var pods []string
		for _, ph := range []v1.PodPhase{v1.PodPending, v1.PodRunning, v1.PodSucceeded, v1.PodFailed} {
			if c := phases[n.Name][ph]; c > 0 {
				pods = append(pods, fmt.Sprintf("%d %s", c, ph))
			}
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", name, Amounts(n.Schedulable), Amounts(n.Requested), external, idleBefore, Amounts(n.Idle), joinOr(pods, "none"))
	}
	w.Flush()
}

// WriteJobs writes the Jobs to out as kubectl get jobs would, with the
// phases of their pods.
func WriteJobs(out io.Writer, jobs map[string]Job, states map[string]Pod) {
	if len(jobs) == 0 {
		return
	}
	w := tabwriter.NewWriter(out, 2, 4, 2, ' ', 0)
	fmt.Fprintln(w, "JOB (batch/v1)\tCOMPLETIONS\tACTIVE\tSUCCEEDED\tFAILED\tCOMPLETE\tPODS")
	for _, key := range slices.Sorted(maps.Keys(jobs)) {
		s := jobs[key]
		phases := map[v1.PodPhase]int{}
		for _, p := range states {
			if p.Job == key {
				phases[PhaseOf(p)]++
			}
		}
		var pods []string
		for _, ph := range []v1.PodPhase{v1.PodPending, v1.PodRunning, v1.PodSucceeded, v1.PodFailed} {
			if phases[ph] > 0 {
				pods = append(pods, fmt.Sprintf("%d %s", phases[ph], ph))
			}
		}
		complete := "-"
		if s.Complete {
			complete = "True"
		}
		fmt.Fprintf(w, "%s\t%d/%d\t%d\t%d\t%d\t%s\t%s\n", key, s.Succeeded, s.Completions, s.Active, s.Succeeded, s.Failed, complete, joinOr(pods, "no pods yet"))
	}
	w.Flush()
}

// joinOr joins parts with ", ", or returns none when there are none.
func joinOr(parts []string, none string) string {
	if len(parts) == 0 {
		return none
	}
	return strings.Join(parts, ", ")
}

// WriteQueues writes the Queues to out as the scheduler's status shows
// them.
func WriteQueues(out io.Writer, queues map[string]v1alpha1.Queue) {
	w := tabwriter.NewWriter(out, 2, 4, 2, ' ', 0)
	fmt.Fprintln(w, "QUEUE\tWEIGHT\tGUARANTEED\tALLOCATED\tFAIR SHARE\tPENDING\tPENDING JOBS\tRUNNING JOBS\tVALID")
	for _, name := range slices.Sorted(maps.Keys(queues)) {
		q := queues[name]
		valid := "-"
		for _, c := range q.Status.Conditions {
			if c.Type == "Valid" {
				valid = string(c.Status)
			}
		}
		st := q.Status
		fmt.Fprintf(w, "%s\t%d\t%s\t%s\t%s\t%s\t%d\t%d\t%s\n", name, q.Spec.Weight, Quantities(st.Guaranteed), Quantities(st.Allocated),
			Quantities(st.FairShare), Quantities(st.Pending), st.PendingJobs, st.RunningJobs, valid)
	}
	w.Flush()
}

// WriteNodeCPU writes each node's cpu as the cache d sees it to out,
// with the pods the API shows bound there counted by Job (or pod) and
// phase, e.g. "team-a/a1: 2 Running".
func WriteNodeCPU(out io.Writer, d *cache.Dump, pods map[string]Pod) {
	type group struct{ job, phase string }
	cpu := func(r resources.Resource) string {
		return resource.NewMilliQuantity(r.MilliCPU, resource.DecimalSI).String()
	}
	w := tabwriter.NewWriter(out, 2, 4, 2, ' ', 0)
	fmt.Fprintln(w, "NODE\tCPU\tREQUESTED\tIDLE\tPODS")
	for _, n := range d.Nodes {
		count := map[group]int{}
		for _, p := range pods {
			if p.Node == n.Name {
				job := cmp.Or(p.Job, p.Key)
				count[group{job, string(PhaseOf(p))}]++
			}
		}
		var held []string
		for _, g := range slices.SortedFunc(maps.Keys(count), func(a, b group) int {
			return strings.Compare(a.job+" "+a.phase, b.job+" "+b.phase)
		}) {
			held = append(held, fmt.Sprintf("%s: %d %s", g.job, count[g], g.phase))
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\n", n.Name, cpu(n.Schedulable), cpu(n.Requested), cpu(n.Idle), joinOr(held, "none"))
	}
	w.Flush()
}
