package main

import (
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/batch-scheduler/batch-scheduler/pkg/cache"
)

// whyWidth is where the WHY column wraps.
const whyWidth = 90

// printExpected prints the outcome of the groups named shown.
func printExpected(expect []outcome, shown []string) {
	fmt.Println("expected:")
	w := tabwriter.NewWriter(os.Stdout, 2, 4, 2, ' ', 0)
	for _, o := range expect {
		if slices.Contains(shown, o.name) {
			fmt.Fprintf(w, "  %s\t%s\t%s\n", o.name, o.expectation(), o.because)
		}
	}
	w.Flush()
}

// printPlacements prints every pod: its job in the cache (without the
// namespace, which the pod's key shows), its node and why it is there or
// not.
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
	fmt.Fprintln(w, "NAMESPACE/POD\tJOB\tNODE\tWHY")
	for _, key := range slices.Sorted(maps.Keys(states)) {
		s := states[key]
		job, node := jobs[key], s.node
		if job == "" {
			job = "-"
		}
		if node == "" {
			node = "-"
		}
		lines := wrap(why(s), whyWidth)
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\n", key, job, node, lines[0])
		for _, l := range lines[1:] {
			fmt.Fprintf(w, "\t\t\t  %s\n", l)
		}
	}
	w.Flush()
}

// why says why a pod is where it is.
func why(s podState) string {
	switch {
	case s.scheduler != ourScheduler && s.node != "":
		return "bound by " + s.scheduler
	case s.scheduler != ourScheduler:
		return "pending for " + s.scheduler + ": not ours"
	case s.node != "":
		return "bound"
	case s.unschedulable:
		return s.message
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

// printNodes prints the nodes as the cache sees them, with the external
// usage (VMs) and its keys, and the queue.
func printNodes(d *cache.Dump) {
	w := tabwriter.NewWriter(os.Stdout, 2, 4, 2, ' ', 0)
	fmt.Fprintln(w, "NODE\tSCHEDULABLE\tREQUESTED\tEXTERNAL\tIDLE")
	for _, n := range d.Nodes {
		name := n.Name
		if n.Placeholder {
			name += " (placeholder)"
		}
		external := "-"
		if !n.External.IsZero() {
			external = brief(n.External)
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\n", name, brief(n.Schedulable), brief(n.Requested), external, brief(n.Idle))
	}
	w.Flush()
	if note := externalNote(d); note != "" {
		fmt.Println("external usage (custom informer " + vmInformer + "): " + note)
	}
	l := d.Queue.Lengths
	fmt.Printf("queue: %d active, %d backoff, %d unschedulable\n", l.Active, l.Backoff, l.Unschedulable)
}

// brief renders resources without spaces, to keep table columns apart.
func brief(r interface{ String() string }) string {
	return strings.ReplaceAll(r.String(), " ", ",")
}
