package main

import (
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"text/tabwriter"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/batch-scheduler/batch-scheduler/pkg/cache"
	"github.com/batch-scheduler/batch-scheduler/pkg/resources"
	"github.com/batch-scheduler/batch-scheduler/test/harness"
)

// whyWidth is where the WHY column wraps.
const whyWidth = 90

// printExpected prints the expected outcomes.
func printExpected(expect []outcome) {
	fmt.Println("expected:")
	w := tabwriter.NewWriter(os.Stdout, 2, 4, 2, ' ', 0)
	for _, o := range expect {
		fmt.Fprintf(w, "  %s\t%s\t%s\n", o.Name, o.Expectation(), o.Because)
	}
	w.Flush()
}

// printPlacements prints every pod: its job in the cache (without the
// namespace, which the pod's key shows), its node, its phase and why it is
// there or not.
func printPlacements(states map[string]podState, d *cache.Dump) {
	jobs := map[string]string{}
	if d != nil {
		for _, j := range d.Jobs {
			for _, t := range j.Tasks {
				jobs[t.Pod] = j.ID[strings.Index(j.ID, "/")+1:]
			}
		}
	}
	w := tabwriter.NewWriter(os.Stdout, 2, 4, 2, ' ', 0)
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
		lines := wrap(why(s), whyWidth)
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\n", key, job, node, harness.PhaseOf(s), lines[0])
		for _, l := range lines[1:] {
			fmt.Fprintf(w, "\t\t\t\t  %s\n", l)
		}
	}
	w.Flush()
}

// why says why a pod is where it is.
func why(s podState) string {
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

// wrap splits text into lines of at most width bytes at spaces (a longer
// word stays whole).
func wrap(text string, width int) []string {
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

// printNodes prints the nodes as the cache sees them: allocatable, what
// the pods request, the external usage (VMs), and what is idle before the
// step (as prev left it; nil for the first step) and now, with the pods
// bound there by phase as the API shows them; then the external usage's
// keys and the queue.
func printNodes(prev, d *cache.Dump, states map[string]podState) {
	before := map[string]string{}
	if prev != nil {
		for _, n := range prev.Nodes {
			before[n.Name] = amounts(n.Idle)
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
		phases[s.Node][harness.PhaseOf(s)]++
	}
	w := tabwriter.NewWriter(os.Stdout, 2, 4, 2, ' ', 0)
	fmt.Fprintln(w, "NODE\tALLOCATABLE\tREQUESTED\tEXTERNAL\tIDLE BEFORE\tIDLE NOW\tPODS")
	for _, n := range d.Nodes {
		name := n.Name
		if n.Placeholder {
			name += " (placeholder)"
		}
		external, idleBefore := "-", "-"
		if !n.External.IsZero() {
			external = amounts(n.External)
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
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", name, amounts(n.Schedulable), amounts(n.Requested), external, idleBefore, amounts(n.Idle), joinOr(pods, "none"))
	}
	w.Flush()
	if note := externalNote(d); note != "" {
		fmt.Println("external usage (custom informer " + vmInformer + "): " + note)
	}
	l := d.Queue.Lengths
	fmt.Printf("queue: %d active, %d backoff, %d unschedulable\n", l.Active, l.Backoff, l.Unschedulable)
}

// amounts renders cpu, memory and extended resources briefly, e.g.
// "1500m cpu, 2Gi" or "8 cpu, 32Gi, 4 nvidia.com/gpu"; "0" when empty.
func amounts(r resources.Resource) string {
	var parts []string
	if r.MilliCPU != 0 {
		parts = append(parts, resource.NewMilliQuantity(r.MilliCPU, resource.DecimalSI).String()+" cpu")
	}
	if r.Memory != 0 {
		parts = append(parts, resource.NewQuantity(r.Memory, resource.BinarySI).String())
	}
	for _, name := range slices.Sorted(maps.Keys(r.Scalar)) {
		if v := r.Scalar[name]; v != 0 {
			parts = append(parts, fmt.Sprintf("%d %s", v, name))
		}
	}
	return joinOr(parts, "0")
}
