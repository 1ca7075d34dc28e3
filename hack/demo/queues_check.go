package main

// The checks and the printing of the queues story (queues.go): what the
// demo observes after each step, the verdicts on it, and its tables.

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/batch-scheduler/batch-scheduler/pkg/apis/batchscheduler/v1alpha1"
	"github.com/batch-scheduler/batch-scheduler/pkg/resources"
	"github.com/batch-scheduler/batch-scheduler/test/harness"
	"github.com/batch-scheduler/batch-scheduler/test/podwatch"
)

// verdict collects how a snapshot differs from a step's outcome: what
// may still come (wait) and what cannot be undone (fail).
type queueVerdict struct{ pending, final []string }

func (v *queueVerdict) wait(format string, args ...any) {
	v.pending = append(v.pending, fmt.Sprintf(format, args...))
}

func (v *queueVerdict) fail(format string, args ...any) {
	v.final = append(v.final, fmt.Sprintf(format, args...))
}

// err is nil when the outcome is as expected.
func (v *queueVerdict) err() error {
	switch {
	case len(v.final) > 0:
		return harness.Final(errors.New(strings.Join(v.final, "; ")))
	case len(v.pending) > 0:
		return errors.New(strings.Join(v.pending, "; "))
	}
	return nil
}

// currentPods are the pods of Job key that count for it now: not
// finished and not being deleted, sorted.
func currentPods(s *snapshot, key string) []podState {
	var out []podState
	for _, k := range slices.Sorted(maps.Keys(s.pods)) {
		p := s.pods[k]
		if p.Job == key && !p.Deleting && p.Phase != v1.PodSucceeded && p.Phase != v1.PodFailed {
			out = append(out, p)
		}
	}
	return out
}

// lostPods reports whether Job key lost pods that did not succeed: an
// eviction under way or done.
func lostPods(s *snapshot, key string) bool {
	if j, ok := s.jobs[key]; ok && j.Failed > 0 {
		return true
	}
	for _, p := range s.pods {
		if p.Job == key && (p.Deleting || p.Phase == v1.PodFailed) {
			return true
		}
	}
	return false
}

// jobState checks the Job's counts: failed pods as expected (more is
// final), not Failed. It returns the Job, and false if it is not there.
func jobCounts(v *queueVerdict, s *snapshot, key string, failed int32) (jobState, bool) {
	j, ok := s.jobs[key]
	switch {
	case !ok:
		v.fail("Job %s is gone", key)
		return j, false
	case j.FailedCond:
		v.fail("Job %s Failed", key)
		return j, false
	case j.Failed > failed:
		v.fail("Job %s has %d failed pods; expected %d", key, j.Failed, failed)
		return j, false
	case j.Failed < failed:
		v.wait("Job %s has %d failed pods so far; expected %d", key, j.Failed, failed)
	}
	return j, true
}

// jobRuns: Job key runs all its pods, having lost failed.
func jobRuns(v *queueVerdict, s *snapshot, key string, failed int32) {
	j, ok := jobCounts(v, s, key, failed)
	if !ok {
		return
	}
	if j.Complete {
		v.fail("Job %s is already Complete; expected it running", key)
		return
	}
	pods := currentPods(s, key)
	if len(pods) != gangSize || j.Active != gangSize {
		v.wait("Job %s has %d pods (active %d); expected %d running", key, len(pods), j.Active, gangSize)
		return
	}
	for _, p := range pods {
		switch {
		case p.Node == "" && p.Unschedulable:
			v.wait("%s is not bound: %s", p.Key, p.Message)
		case p.Node == "":
			v.wait("%s is not bound yet", p.Key)
		case harness.PhaseOf(p) != v1.PodRunning:
			v.wait("%s is %s, not Running yet", p.Key, harness.PhaseOf(p))
		}
	}
}

// jobEvicted: Job key lost both pods of its gang, none left running;
// replacements, if the Job controller created them yet, are not bound.
func jobEvicted(v *queueVerdict, s *snapshot, key string) {
	if _, ok := jobCounts(v, s, key, gangSize); !ok {
		return
	}
	for _, p := range s.pods {
		switch {
		case p.Job != key:
		case p.Deleting || p.Phase == v1.PodFailed:
			v.wait("%s is evicted but not removed yet", p.Key)
		case p.Node != "" && p.Phase == v1.PodRunning:
			v.wait("%s of an evicted gang still runs", p.Key)
		case p.Node != "":
			v.fail("%s, a replacement, is bound to %s; expected it to wait", p.Key, p.Node)
		}
	}
}

// jobPodsWait: Job key's (replacement) pods all exist and wait, their
// PodScheduled message containing each of why.
func jobPodsWait(v *queueVerdict, s *snapshot, key string, why ...string) {
	if _, ok := jobCounts(v, s, key, gangSize); !ok {
		return
	}
	pods := currentPods(s, key)
	if len(pods) != gangSize {
		v.wait("the Job controller has created %d of the %d new pods of Job %s so far", len(pods), gangSize, key)
		return
	}
	for _, p := range pods {
		switch {
		case p.Node != "":
			v.fail("%s is bound to %s; expected it to wait", p.Key, p.Node)
		case !p.Unschedulable:
			v.wait("%s has no PodScheduled=False/Unschedulable condition yet", p.Key)
		default:
			for _, w := range why {
				if !strings.Contains(p.Message, w) {
					v.wait("%s is Unschedulable with %q, which does not contain %q", p.Key, p.Message, w)
				}
			}
		}
	}
}

// jobDone: Job key is Complete, all its pods succeeded, having lost
// failed on the way.
func jobDone(v *queueVerdict, s *snapshot, key string, failed int32) {
	j, ok := jobCounts(v, s, key, failed)
	if !ok {
		return
	}
	if !j.Complete || j.Succeeded != gangSize || j.Active != 0 {
		v.wait("Job %s shows %s; expected active 0, succeeded %d, Complete", key, j.Status(), gangSize)
	}
}

// queueWant is the expected status of a queue: cpu amounts ("any" for
// no check), and job counts (-1 for no check).
type queueWant struct {
	allocated, fairShare, pending string
	pendingJobs, runningJobs      int32
}

// queueValid: the scheduler has written the status of queue name, Valid.
func queueValid(s *snapshot, name string) error {
	q, ok := s.queues[name]
	if !ok {
		return fmt.Errorf("Queue %s is gone", name)
	}
	for _, c := range q.Status.Conditions {
		if c.Type == "Valid" {
			if c.Status != metav1.ConditionTrue {
				return harness.Final(fmt.Errorf("Queue %s is not Valid: %s", name, c.Message))
			}
			return nil
		}
	}
	return fmt.Errorf("the scheduler has not written the status of Queue %s yet", name)
}

// queueIs checks the status of queue name against want.
func queueIs(v *queueVerdict, s *snapshot, name string, want queueWant) {
	if err := queueValid(s, name); err != nil {
		v.wait("%v", err)
		return
	}
	st := s.queues[name].Status
	for _, c := range []struct {
		what string
		list v1.ResourceList
		want string
	}{{"allocated", st.Allocated, want.allocated}, {"fair share", st.FairShare, want.fairShare}, {"pending", st.Pending, want.pending}} {
		if c.want == "any" {
			continue
		}
		got := c.list[v1.ResourceCPU]
		if got.Cmp(resource.MustParse(c.want)) != 0 {
			v.wait("Queue %s shows %s %s; expected cpu %s", name, c.what, quantities(c.list), c.want)
		}
	}
	if want.pendingJobs >= 0 && st.PendingJobs != want.pendingJobs {
		v.wait("Queue %s shows %d pending jobs; expected %d", name, st.PendingJobs, want.pendingJobs)
	}
	if want.runningJobs >= 0 && st.RunningJobs != want.runningJobs {
		v.wait("Queue %s shows %d running jobs; expected %d", name, st.RunningJobs, want.runningJobs)
	}
}

// quantities renders a resource list briefly, e.g. "cpu 4" or "cpu 4,
// memory 1Gi"; "0" when it has nothing but zeros.
func quantities(l v1.ResourceList) string {
	var parts []string
	for _, name := range slices.Sorted(maps.Keys(l)) {
		if q := l[name]; !q.IsZero() {
			parts = append(parts, string(name)+" "+q.String())
		}
	}
	return joinOr(parts, "0")
}

// ql is a line of what a step of the queues story expects.
func ql(name, want, because string) outcome { return outcome{Name: name, Want: want, Because: because} }

// printQueueStory prints the pods, the Jobs, the nodes and the queues.
func printQueueStory(s *snapshot) {
	printPlacements(s.pods, s.dump)
	fmt.Println()
	printJobs(s.jobs, s.pods)
	fmt.Println()
	printQueueNodes(s)
	fmt.Println()
	printQueues(s.queues)
}

// printQueueNodes prints each node's cpu as /debug/cache sees it, with
// the pods the API shows bound there, by Job and phase.
func printQueueNodes(s *snapshot) {
	w := tabwriter.NewWriter(os.Stdout, 2, 4, 2, ' ', 0)
	fmt.Fprintln(w, "NODE\tCPU\tREQUESTED\tIDLE\tPODS")
	for _, n := range s.dump.Nodes {
		// "team-a/a1: 2 Running", by Job then phase.
		type group struct{ job, phase string }
		count := map[group]int{}
		for _, p := range s.pods {
			if p.Node != n.Name {
				continue
			}
			job := p.Job
			if job == "" {
				job = p.Key
			}
			count[group{job, string(harness.PhaseOf(p))}]++
		}
		var pods []string
		for _, g := range slices.SortedFunc(maps.Keys(count), func(a, b group) int {
			return strings.Compare(a.job+" "+a.phase, b.job+" "+b.phase)
		}) {
			pods = append(pods, fmt.Sprintf("%s: %d %s", g.job, count[g], g.phase))
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\n", n.Name, cpuOf(n.Schedulable), cpuOf(n.Requested), cpuOf(n.Idle), joinOr(pods, "none"))
	}
	w.Flush()
}

// cpuOf renders the cpu of r, e.g. "2" or "500m".
func cpuOf(r resources.Resource) string {
	return resource.NewMilliQuantity(r.MilliCPU, resource.DecimalSI).String()
}

// printQueues prints the Queues as the scheduler's status shows them.
func printQueues(queues map[string]v1alpha1.Queue) {
	w := tabwriter.NewWriter(os.Stdout, 2, 4, 2, ' ', 0)
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
		fmt.Fprintf(w, "%s\t%d\t%s\t%s\t%s\t%s\t%d\t%d\t%s\n", name, q.Spec.Weight, quantities(st.Guaranteed), quantities(st.Allocated),
			quantities(st.FairShare), quantities(st.Pending), st.PendingJobs, st.RunningJobs, valid)
	}
	w.Flush()
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
