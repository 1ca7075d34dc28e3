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

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/batch-scheduler/batch-scheduler/pkg/apis/batchscheduler/v1alpha1"
	"github.com/batch-scheduler/batch-scheduler/pkg/resources"
)

// observeQueueStory reads the pods, the Jobs and the Queues through the
// API, and /debug/cache.
func observeQueueStory(ctx context.Context, e *qEnv) (*qSnapshot, error) {
	s := &qSnapshot{queues: map[string]v1alpha1.Queue{}}
	var err error
	if s.pods, err = observe(ctx, e.client); err != nil {
		return nil, err
	}
	if s.jobs, err = observeJobs(ctx, e.client); err != nil {
		return nil, err
	}
	list, err := e.queues.BatchSchedulerV1alpha1().Queues().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing Queues: %w", err)
	}
	for _, q := range list.Items {
		s.queues[q.Name] = q
	}
	if s.dump, err = e.sched.dump(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

// verdict collects how a snapshot differs from a step's outcome: what
// may still come (wait) and what cannot be undone (fail).
type verdict struct{ pending, final []string }

func (v *verdict) wait(format string, args ...any) {
	v.pending = append(v.pending, fmt.Sprintf(format, args...))
}

func (v *verdict) fail(format string, args ...any) {
	v.final = append(v.final, fmt.Sprintf(format, args...))
}

// err is nil when the outcome is as expected.
func (v *verdict) err() error {
	switch {
	case len(v.final) > 0:
		return finalError{errors.New(strings.Join(v.final, "; "))}
	case len(v.pending) > 0:
		return errors.New(strings.Join(v.pending, "; "))
	}
	return nil
}

// currentPods are the pods of Job key that count for it now: not
// finished and not being deleted, sorted.
func currentPods(s *qSnapshot, key string) []podState {
	var out []podState
	for _, k := range slices.Sorted(maps.Keys(s.pods)) {
		p := s.pods[k]
		if p.job == key && !p.deleting && p.phase != v1.PodSucceeded && p.phase != v1.PodFailed {
			out = append(out, p)
		}
	}
	return out
}

// lostPods reports whether Job key lost pods that did not succeed: an
// eviction under way or done.
func lostPods(s *qSnapshot, key string) bool {
	if j, ok := s.jobs[key]; ok && j.failed > 0 {
		return true
	}
	for _, p := range s.pods {
		if p.job == key && (p.deleting || p.phase == v1.PodFailed) {
			return true
		}
	}
	return false
}

// jobState checks the Job's counts: failed pods as expected (more is
// final), not Failed. It returns the Job, and false if it is not there.
func jobCounts(v *verdict, s *qSnapshot, key string, failed int32) (jobState, bool) {
	j, ok := s.jobs[key]
	switch {
	case !ok:
		v.fail("Job %s is gone", key)
		return j, false
	case j.failedCond:
		v.fail("Job %s Failed", key)
		return j, false
	case j.failed > failed:
		v.fail("Job %s has %d failed pods; expected %d", key, j.failed, failed)
		return j, false
	case j.failed < failed:
		v.wait("Job %s has %d failed pods so far; expected %d", key, j.failed, failed)
	}
	return j, true
}

// jobRuns: Job key runs all its pods, having lost failed.
func jobRuns(v *verdict, s *qSnapshot, key string, failed int32) {
	j, ok := jobCounts(v, s, key, failed)
	if !ok {
		return
	}
	if j.complete {
		v.fail("Job %s is already Complete; expected it running", key)
		return
	}
	pods := currentPods(s, key)
	if len(pods) != gangSize || j.active != gangSize {
		v.wait("Job %s has %d pods (active %d); expected %d running", key, len(pods), j.active, gangSize)
		return
	}
	for _, p := range pods {
		switch {
		case p.node == "" && p.unschedulable:
			v.wait("%s is not bound: %s", p.key, p.message)
		case p.node == "":
			v.wait("%s is not bound yet", p.key)
		case phaseOf(p) != v1.PodRunning:
			v.wait("%s is %s, not Running yet", p.key, phaseOf(p))
		}
	}
}

// jobEvicted: Job key lost both pods of its gang, none left running;
// replacements, if the Job controller created them yet, are not bound.
func jobEvicted(v *verdict, s *qSnapshot, key string) {
	if _, ok := jobCounts(v, s, key, gangSize); !ok {
		return
	}
	for _, p := range s.pods {
		switch {
		case p.job != key:
		case p.deleting || p.phase == v1.PodFailed:
			v.wait("%s is evicted but not removed yet", p.key)
		case p.node != "" && p.phase == v1.PodRunning:
			v.wait("%s of an evicted gang still runs", p.key)
		case p.node != "":
			v.fail("%s, a replacement, is bound to %s; expected it to wait", p.key, p.node)
		}
	}
}

// jobPodsWait: Job key's (replacement) pods all exist and wait, their
// PodScheduled message containing each of why.
func jobPodsWait(v *verdict, s *qSnapshot, key string, why ...string) {
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
		case p.node != "":
			v.fail("%s is bound to %s; expected it to wait", p.key, p.node)
		case !p.unschedulable:
			v.wait("%s has no PodScheduled=False/Unschedulable condition yet", p.key)
		default:
			for _, w := range why {
				if !strings.Contains(p.message, w) {
					v.wait("%s is Unschedulable with %q, which does not contain %q", p.key, p.message, w)
				}
			}
		}
	}
}

// jobDone: Job key is Complete, all its pods succeeded, having lost
// failed on the way.
func jobDone(v *verdict, s *qSnapshot, key string, failed int32) {
	j, ok := jobCounts(v, s, key, failed)
	if !ok {
		return
	}
	if !j.complete || j.succeeded != gangSize || j.active != 0 {
		v.wait("Job %s shows %s; expected active 0, succeeded %d, Complete", key, j.status(), gangSize)
	}
}

// queueWant is the expected status of a queue: cpu amounts ("any" for
// no check), and job counts (-1 for no check).
type queueWant struct {
	allocated, fairShare, pending string
	pendingJobs, runningJobs      int32
}

// queueValid: the scheduler has written the status of queue name, Valid.
func queueValid(s *qSnapshot, name string) error {
	q, ok := s.queues[name]
	if !ok {
		return fmt.Errorf("Queue %s is gone", name)
	}
	for _, c := range q.Status.Conditions {
		if c.Type == "Valid" {
			if c.Status != metav1.ConditionTrue {
				return finalError{fmt.Errorf("Queue %s is not Valid: %s", name, c.Message)}
			}
			return nil
		}
	}
	return fmt.Errorf("the scheduler has not written the status of Queue %s yet", name)
}

// queueIs checks the status of queue name against want.
func queueIs(v *verdict, s *qSnapshot, name string, want queueWant) {
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

// printQExpect prints what a step expects.
func printQExpect(expect []qExpect) {
	fmt.Println("expected:")
	w := tabwriter.NewWriter(os.Stdout, 2, 4, 2, ' ', 0)
	for _, x := range expect {
		fmt.Fprintf(w, "  %s\t%s\t%s\n", x.name, x.want, x.because)
	}
	w.Flush()
}

// printQueueStory prints the pods, the Jobs, the nodes and the queues.
func printQueueStory(s *qSnapshot) {
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
func printQueueNodes(s *qSnapshot) {
	w := tabwriter.NewWriter(os.Stdout, 2, 4, 2, ' ', 0)
	fmt.Fprintln(w, "NODE\tCPU\tREQUESTED\tIDLE\tPODS")
	for _, n := range s.dump.Nodes {
		// "team-a/a1: 2 Running", by Job then phase.
		type group struct{ job, phase string }
		count := map[group]int{}
		for _, p := range s.pods {
			if p.node != n.Name {
				continue
			}
			job := p.job
			if job == "" {
				job = p.key
			}
			count[group{job, string(phaseOf(p))}]++
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
