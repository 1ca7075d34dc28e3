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

// Checks of gangs that batch/v1 Jobs run (parallelism = completions, all
// needed at once) and of tenant Queues' status, for a story or a test
// that expects evictions and replacements: a Check collects, from what
// the API shows at one moment, what may still come and what cannot be
// undone; Poll waits on its Err.

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/batch-scheduler/batch-scheduler/pkg/apis/batchscheduler/v1alpha1"
	"github.com/batch-scheduler/batch-scheduler/pkg/generated/clientset/versioned"
)

// Check compares what the API shows (Pods, Jobs, Queues) with what is
// expected of it, one call per expectation.
type Check struct {
	Pods   map[string]Pod
	Jobs   map[string]Job
	Queues map[string]v1alpha1.Queue

	pending, final []string
}

// Wait records a difference that may still resolve.
func (c *Check) Wait(format string, args ...any) {
	c.pending = append(c.pending, fmt.Sprintf(format, args...))
}

// Fail records a difference that cannot be undone.
func (c *Check) Fail(format string, args ...any) {
	c.final = append(c.final, fmt.Sprintf(format, args...))
}

// Err is nil when all is as expected; a Final error when something
// cannot become so.
func (c *Check) Err() error {
	switch {
	case len(c.final) > 0:
		return Final(errors.New(strings.Join(c.final, "; ")))
	case len(c.pending) > 0:
		return errors.New(strings.Join(c.pending, "; "))
	}
	return nil
}

// CurrentPods are the pods of Job key that count for it now: not
// finished and not being deleted, sorted by key.
func (c *Check) CurrentPods(key string) []Pod {
	var out []Pod
	for _, k := range slices.Sorted(maps.Keys(c.Pods)) {
		p := c.Pods[k]
		if p.Job == key && !p.Deleting && p.Phase != v1.PodSucceeded && p.Phase != v1.PodFailed {
			out = append(out, p)
		}
	}
	return out
}

// LostPods reports whether Job key lost pods that did not succeed: an
// eviction under way or done.
func (c *Check) LostPods(key string) bool {
	if j, ok := c.Jobs[key]; ok && j.Failed > 0 {
		return true
	}
	for _, p := range c.Pods {
		if p.Job == key && (p.Deleting || p.Phase == v1.PodFailed) {
			return true
		}
	}
	return false
}

// jobCounts checks Job key's counts: failed pods as expected (more is
// final), not Failed, a gang of at least one pod. It returns the Job,
// and false if it cannot be checked further.
func (c *Check) jobCounts(key string, failed int32) (Job, bool) {
	j, ok := c.Jobs[key]
	switch {
	case !ok:
		c.Fail("Job %s is gone", key)
		return j, false
	case j.Completions < 1:
		c.Fail("Job %s has no completions: not a gang of parallelism = completions", key)
		return j, false
	case j.FailedCond:
		c.Fail("Job %s Failed", key)
		return j, false
	case j.Failed > failed:
		c.Fail("Job %s has %d failed pods; expected %d", key, j.Failed, failed)
		return j, false
	case j.Failed < failed:
		c.Wait("Job %s has %d failed pods so far; expected %d", key, j.Failed, failed)
	}
	return j, true
}

// JobRuns: Job key runs all its pods (its completions), bound and
// Running, having lost failed on the way.
func (c *Check) JobRuns(key string, failed int32) {
	j, ok := c.jobCounts(key, failed)
	if !ok {
		return
	}
	if j.Complete {
		c.Fail("Job %s is already Complete; expected it running", key)
		return
	}
	pods := c.CurrentPods(key)
	if len(pods) != int(j.Completions) || j.Active != j.Completions {
		c.Wait("Job %s has %d pods (active %d); expected %d running", key, len(pods), j.Active, j.Completions)
		return
	}
	for _, p := range pods {
		switch {
		case p.Node == "" && p.Unschedulable:
			c.Wait("%s is not bound: %s", p.Key, p.Message)
		case p.Node == "":
			c.Wait("%s is not bound yet", p.Key)
		case PhaseOf(p) != v1.PodRunning:
			c.Wait("%s is %s, not Running yet", p.Key, PhaseOf(p))
		}
	}
}

// JobEvicted: Job key lost every pod of its gang, none left running;
// replacements, if the Job controller created them yet, are not bound.
func (c *Check) JobEvicted(key string) {
	if _, ok := c.lostGang(key); !ok {
		return
	}
	for _, p := range c.Pods {
		switch {
		case p.Job != key:
		case p.Deleting || p.Phase == v1.PodFailed:
			c.Wait("%s is evicted but not removed yet", p.Key)
		case p.Node != "" && p.Phase == v1.PodRunning:
			c.Wait("%s of an evicted gang still runs", p.Key)
		case p.Node != "":
			c.Fail("%s, a replacement, is bound to %s; expected it to wait", p.Key, p.Node)
		}
	}
}

// lostGang checks that Job key lost its whole gang (jobCounts).
func (c *Check) lostGang(key string) (Job, bool) {
	return c.jobCounts(key, c.Jobs[key].Completions)
}

// JobPodsWait: Job key lost its whole gang, and its replacement pods all
// exist and wait, their PodScheduled message containing each of why.
func (c *Check) JobPodsWait(key string, why ...string) {
	j, ok := c.lostGang(key)
	if !ok {
		return
	}
	pods := c.CurrentPods(key)
	if len(pods) != int(j.Completions) {
		c.Wait("the Job controller has created %d of the %d new pods of Job %s so far", len(pods), j.Completions, key)
		return
	}
	for _, p := range pods {
		switch {
		case p.Node != "":
			c.Fail("%s is bound to %s; expected it to wait", p.Key, p.Node)
		case !p.Unschedulable:
			c.Wait("%s has no PodScheduled=False/Unschedulable condition yet", p.Key)
		default:
			for _, w := range why {
				if !strings.Contains(p.Message, w) {
					c.Wait("%s is Unschedulable with %q, which does not contain %q", p.Key, p.Message, w)
				}
			}
		}
	}
}

// JobDone: Job key is Complete, all its pods succeeded, having lost
// failed on the way.
func (c *Check) JobDone(key string, failed int32) {
	j, ok := c.jobCounts(key, failed)
	if ok && (!j.Complete || j.Succeeded != j.Completions || j.Active != 0) {
		c.Wait("Job %s shows %s; expected active 0, succeeded %d, Complete", key, j.Status(), j.Completions)
	}
}

// AnyCount in a QueueWant skips the check of a job count; "" skips that
// of an amount.
const AnyCount = -1

// QueueWant is the expected status of a queue: cpu amounts ("" for no
// check), and job counts (AnyCount for no check).
type QueueWant struct {
	Allocated, FairShare, Pending string
	PendingJobs, RunningJobs      int32
}

// QueueValid: the scheduler has written the status of queue name, and it
// is Valid (a Final error if it is not).
func (c *Check) QueueValid(name string) error {
	q, ok := c.Queues[name]
	if !ok {
		return fmt.Errorf("Queue %s is gone", name)
	}
	for _, cond := range q.Status.Conditions {
		if cond.Type == "Valid" {
			if cond.Status != metav1.ConditionTrue {
				return Final(fmt.Errorf("Queue %s is not Valid: %s", name, cond.Message))
			}
			return nil
		}
	}
	return fmt.Errorf("the scheduler has not written the status of Queue %s yet", name)
}

// Queue checks the status of queue name against want.
func (c *Check) Queue(name string, want QueueWant) {
	if err := c.QueueValid(name); err != nil {
		c.Wait("%v", err)
		return
	}
	st := c.Queues[name].Status
	for _, a := range []struct {
		what string
		list v1.ResourceList
		want string
	}{{"allocated", st.Allocated, want.Allocated}, {"fair share", st.FairShare, want.FairShare}, {"pending", st.Pending, want.Pending}} {
		if a.want == "" {
			continue
		}
		got := a.list[v1.ResourceCPU]
		if got.Cmp(resource.MustParse(a.want)) != 0 {
			c.Wait("Queue %s shows %s %s; expected cpu %s", name, a.what, Quantities(a.list), a.want)
		}
	}
	if want.PendingJobs != AnyCount && st.PendingJobs != want.PendingJobs {
		c.Wait("Queue %s shows %d pending jobs; expected %d", name, st.PendingJobs, want.PendingJobs)
	}
	if want.RunningJobs != AnyCount && st.RunningJobs != want.RunningJobs {
		c.Wait("Queue %s shows %d running jobs; expected %d", name, st.RunningJobs, want.RunningJobs)
	}
}

// ObserveQueues lists every Queue through the API, by name.
func ObserveQueues(ctx context.Context, client versioned.Interface) (map[string]v1alpha1.Queue, error) {
	list, err := client.BatchSchedulerV1alpha1().Queues().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing Queues: %w", err)
	}
	out := make(map[string]v1alpha1.Queue, len(list.Items))
	for _, q := range list.Items {
		out[q.Name] = q
	}
	return out, nil
}

// Quantities renders a resource list briefly, e.g. "cpu 4" or "cpu 4,
// memory 1Gi"; "0" when it has nothing but zeros.
func Quantities(l v1.ResourceList) string {
	var parts []string
	for _, name := range slices.Sorted(maps.Keys(l)) {
		if q := l[name]; !q.IsZero() {
			parts = append(parts, string(name)+" "+q.String())
		}
	}
	return joinOr(parts, "0")
}

// Outcomes compares the pods and Jobs with expect (Compare and
// CompareJobs).
func (c *Check) Outcomes(expect []Outcome) {
	pending, final := Compare(expect, c.Pods)
	jobsPending, jobsFinal := CompareJobs(expect, c.Jobs)
	c.pending = append(append(c.pending, pending...), jobsPending...)
	c.final = append(append(c.final, final...), jobsFinal...)
}
