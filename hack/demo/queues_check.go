package main

// The printing and the pod watch of the queues story (queues.go); its
// checks are harness.Check's.

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/batch-scheduler/batch-scheduler/test/harness"
	"github.com/batch-scheduler/batch-scheduler/test/podwatch"
)

// ql is a line of what a step of the queues story expects.
func ql(name, want, because string) outcome { return outcome{Name: name, Want: want, Because: because} }

// printQueueStory prints the pods, the Jobs, the nodes and the queues.
func printQueueStory(s *snapshot) {
	printPlacements(s.pods, s.dump)
	fmt.Println()
	printJobs(s.jobs, s.pods)
	fmt.Println()
	harness.WriteNodeCPU(os.Stdout, s.dump, s.pods)
	fmt.Println()
	harness.WriteQueues(os.Stdout, s.queues)
}

// queueWatch is the pod watch of the queues story (test/podwatch): it
// sees every transition of the pods and records the guarantees it saw
// broken. A gang (the pods of a Job) runs whole or not at all: some but
// fewer than its quorum of pods running for longer than gangSettle, after
// a bind (a partial start) or an eviction (a partial eviction), is a
// violation; members that succeed one by one are not. No node holds pods
// that request more than it has.
type queueWatch struct{ w *podwatch.Watcher }

// startWatch starts the pod watch of every namespace, until the story
// ends (its watch must end before the control plane stops).
func startWatch(ctx context.Context, e *env) (*queueWatch, error) {
	ctx, cancel := context.WithCancel(ctx)
	e.stops = append(e.stops, func() error { cancel(); return nil })
	nodes := map[string]podwatch.Capacity{}
	for _, name := range queueNodeNames {
		n := queueNode(name).Status.Capacity
		nodes[name] = podwatch.Capacity{MilliCPU: n.Cpu().MilliValue(), Memory: n.Memory().Value(), Pods: n.Pods().Value()}
	}
	w := podwatch.New(e.cp.Client, metav1.NamespaceAll, nodes, nil)
	w.GangOf = podwatch.ControllerGang("Job", func(string) int { return gangSize })
	w.Settle, w.Evictions = gangSettle, true
	return &queueWatch{w}, w.Start(ctx)
}

// verdict returns the guarantees broken so far, nil if none.
func (q *queueWatch) verdict() error {
	var broken []string
	for _, v := range q.w.Violations(nil) {
		broken = append(broken, v.String())
	}
	if len(broken) == 0 {
		return nil
	}
	return fmt.Errorf("the pod watch saw a guarantee broken: %s", strings.Join(broken, "; "))
}

// summary says what the watch saw, one line per guarantee.
func (q *queueWatch) summary() []string {
	binds, _ := q.w.Bound()
	gangs := q.w.Gangs()
	var longest time.Duration
	for _, g := range gangs {
		longest = max(longest, g.BelowQuorum)
	}
	return []string{
		fmt.Sprintf("no gang ran below its quorum: %d gangs and %d binds seen; the longest a gang ran some but not all of its pods was %s (allowed: %s at a time)",
			len(gangs), binds, longest.Round(time.Millisecond), gangSettle),
		fmt.Sprintf("no node held more than it has (%d nodes watched)", len(queueNodeNames)),
	}
}
