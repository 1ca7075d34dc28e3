package main

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/batch-scheduler/batch-scheduler/pkg/cache"
)

// printStep prints a step's title and the cache after it.
func printStep(title string, d *cache.CacheDump) {
	fmt.Printf("\n== %s\n\n", title)
	printDump(d)
}

// printDump prints the cache as tables: nodes, jobs with their tasks, and
// the queue lengths.
func printDump(d *cache.CacheDump) {
	w := tabwriter.NewWriter(os.Stdout, 2, 4, 2, ' ', 0)
	fmt.Fprintln(w, "NODE\tSCHEDULABLE\tREQUESTED\tIDLE\tPODS")
	for _, n := range d.Nodes {
		name := n.Name
		if n.Placeholder {
			name += " (placeholder)"
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\n", name, brief(n.Schedulable), brief(n.Requested), brief(n.Idle), strings.Join(n.Pods, ","))
	}
	w.Flush()
	fmt.Println()
	w = tabwriter.NewWriter(os.Stdout, 2, 4, 2, ' ', 0)
	fmt.Fprintln(w, "JOB\tMIN-AVAILABLE\tTASKS\tNOTE")
	for _, j := range d.Jobs {
		tasks := make([]string, 0, len(j.Tasks))
		for _, t := range j.Tasks {
			tasks = append(tasks, taskString(t))
		}
		fmt.Fprintf(w, "%s\t%d\t%s\t%s\n", j.ID, j.MinAvailable, strings.Join(tasks, " "), j.ValidationError)
	}
	w.Flush()
	l := d.Queue.Lengths
	fmt.Printf("\nqueue: %d active, %d backoff, %d unschedulable\n", l.Active, l.Backoff, l.Unschedulable)
}

// taskString renders a task as pod[state] or pod[state on node]. A bound
// task whose requests no longer count shows its phase instead.
func taskString(t cache.TaskDump) string {
	state := string(t.Status)
	if t.Node != "" && !t.Counted {
		state = string(t.Phase) + ", not counted"
	}
	if t.Node != "" {
		return fmt.Sprintf("%s[%s on %s]", t.Pod, state, t.Node)
	}
	return fmt.Sprintf("%s[%s]", t.Pod, state)
}

// brief renders resources without spaces, to keep table columns apart.
func brief(r interface{ String() string }) string {
	return strings.ReplaceAll(r.String(), " ", ",")
}

// findNode returns the node called name in d, or nil.
func findNode(d *cache.CacheDump, name string) *cache.NodeDump {
	for i := range d.Nodes {
		if d.Nodes[i].Name == name {
			return &d.Nodes[i]
		}
	}
	return nil
}

// findTask returns the task of pod key ("namespace/name") in d, or nil.
func findTask(d *cache.CacheDump, key string) *cache.TaskDump {
	for i := range d.Jobs {
		for j := range d.Jobs[i].Tasks {
			if d.Jobs[i].Tasks[j].Pod == key {
				return &d.Jobs[i].Tasks[j]
			}
		}
	}
	return nil
}

// taskKeys returns the pod keys of every task in d.
func taskKeys(d *cache.CacheDump) []string {
	var keys []string
	for _, j := range d.Jobs {
		for _, t := range j.Tasks {
			keys = append(keys, t.Pod)
		}
	}
	return keys
}

// sameKeys reports whether a and b hold the same keys, in any order.
func sameKeys(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}
