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

import (
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/batch-scheduler/batch-scheduler/pkg/apis/batchscheduler/v1alpha1"
)

// TestCheck holds each check of a gang Job and of a Queue's status to
// what it reports: nothing when all is as expected, a wait for what may
// still come, a Final error for what cannot be undone.
func TestCheck(t *testing.T) {
	running := func(key, job string) Pod { return Pod{Key: key, Job: job, Node: "n1", Phase: v1.PodRunning} }
	waiting := func(key, job, msg string) Pod { return Pod{Key: key, Job: job, Unschedulable: true, Message: msg} }
	runs := map[string]Pod{"a/1": running("a/1", "a/j"), "a/2": running("a/2", "a/j")}
	evicted := map[string]Pod{"a/1": {Key: "a/1", Job: "a/j", Node: "n1", Phase: v1.PodFailed}, "a/3": waiting("a/3", "a/j", "")}
	replaced := map[string]Pod{"a/3": waiting("a/3", "a/j", "gang a/j: 0 of 2"), "a/4": waiting("a/4", "a/j", "gang a/j: 0 of 2")}
	job := func(active, succeeded, failed int32, complete bool) map[string]Job {
		return map[string]Job{"a/j": {Key: "a/j", Completions: 2, Active: active, Succeeded: succeeded, Failed: failed, Complete: complete}}
	}
	queue := func(allocated string, running int32, valid metav1.ConditionStatus) map[string]v1alpha1.Queue {
		st := v1alpha1.QueueStatus{Allocated: v1.ResourceList{v1.ResourceCPU: resource.MustParse(allocated)}, RunningJobs: running}
		if valid != "" {
			st.Conditions = []metav1.Condition{{Type: "Valid", Status: valid}}
		}
		return map[string]v1alpha1.Queue{"q": {ObjectMeta: metav1.ObjectMeta{Name: "q"}, Status: st}}
	}
	for _, tc := range []struct {
		name  string
		c     Check
		check func(*Check)
		// want is a substring of the error, "" for none; final: it is
		// Final.
		want  string
		final bool
	}{
		{"runs", Check{Pods: runs, Jobs: job(2, 0, 0, false)}, func(c *Check) { c.JobRuns("a/j", 0) }, "", false},
		{"runs, one not running yet", Check{Pods: map[string]Pod{"a/1": running("a/1", "a/j"), "a/2": {Key: "a/2", Job: "a/j", Node: "n1"}}, Jobs: job(2, 0, 0, false)},
			func(c *Check) { c.JobRuns("a/j", 0) }, "a/2 is Pending, not Running yet", false},
		{"runs, but lost a pod", Check{Pods: runs, Jobs: job(2, 0, 1, false)}, func(c *Check) { c.JobRuns("a/j", 0) }, "1 failed pods; expected 0", true},
		{"runs, but Complete", Check{Pods: runs, Jobs: job(0, 2, 0, true)}, func(c *Check) { c.JobRuns("a/j", 0) }, "already Complete", true},
		{"gone", Check{Pods: runs}, func(c *Check) { c.JobRuns("a/j", 0) }, "Job a/j is gone", true},
		{"evicted, not removed yet", Check{Pods: evicted, Jobs: job(1, 0, 2, false)}, func(c *Check) { c.JobEvicted("a/j") }, "a/1 is evicted but not removed yet", false},
		{"evicted, one failed so far", Check{Pods: replaced, Jobs: job(2, 0, 1, false)}, func(c *Check) { c.JobEvicted("a/j") }, "1 failed pods so far; expected 2", false},
		{"evicted, a replacement bound", Check{Pods: map[string]Pod{"a/3": {Key: "a/3", Job: "a/j", Node: "n2"}}, Jobs: job(1, 0, 2, false)},
			func(c *Check) { c.JobEvicted("a/j") }, "a/3, a replacement, is bound to n2", true},
		{"replacements wait", Check{Pods: replaced, Jobs: job(2, 0, 2, false)}, func(c *Check) { c.JobPodsWait("a/j", "gang a/j") }, "", false},
		{"replacements wait, another message", Check{Pods: replaced, Jobs: job(2, 0, 2, false)}, func(c *Check) { c.JobPodsWait("a/j", "Insufficient cpu") }, `which does not contain "Insufficient cpu"`, false},
		{"replacements, one created", Check{Pods: map[string]Pod{"a/3": replaced["a/3"]}, Jobs: job(1, 0, 2, false)}, func(c *Check) { c.JobPodsWait("a/j") }, "created 1 of the 2 new pods", false},
		{"done", Check{Jobs: job(0, 2, 2, true)}, func(c *Check) { c.JobDone("a/j", 2) }, "", false},
		{"not done yet", Check{Pods: runs, Jobs: job(2, 0, 0, false)}, func(c *Check) { c.JobDone("a/j", 0) }, "expected active 0, succeeded 2, Complete", false},
		{"lost pods", Check{Pods: evicted, Jobs: job(1, 0, 0, false)}, func(c *Check) {
			if !c.LostPods("a/j") {
				c.Fail("LostPods is false")
			}
			if c.LostPods("a/other") {
				c.Fail("LostPods of another Job is true")
			}
		}, "", false},
		{"queue as expected", Check{Queues: queue("4", 2, metav1.ConditionTrue)}, func(c *Check) { c.Queue("q", QueueWant{Allocated: "4", Pending: "0", RunningJobs: 2}) }, "", false},
		{"queue, any count", Check{Queues: queue("4", 2, metav1.ConditionTrue)}, func(c *Check) { c.Queue("q", QueueWant{Allocated: "4", RunningJobs: AnyCount}) }, "", false},
		{"queue allocates other", Check{Queues: queue("2", 2, metav1.ConditionTrue)}, func(c *Check) { c.Queue("q", QueueWant{Allocated: "4", RunningJobs: 2}) }, "Queue q shows allocated cpu 2; expected cpu 4", false},
		{"queue runs other", Check{Queues: queue("4", 1, metav1.ConditionTrue)}, func(c *Check) { c.Queue("q", QueueWant{Allocated: "4", RunningJobs: 2}) }, "1 running jobs; expected 2", false},
		{"queue status not written", Check{Queues: queue("4", 2, "")}, func(c *Check) { c.Queue("q", QueueWant{}) }, "has not written the status", false},
		{"queue not valid", Check{Queues: queue("4", 2, metav1.ConditionFalse)}, func(c *Check) {
			if err := c.QueueValid("q"); IsFinal(err) {
				c.Fail("%v", err)
			}
		}, "Queue q is not Valid", true},
		{"outcomes", Check{Pods: runs, Jobs: job(2, 0, 0, false)}, func(c *Check) {
			c.Outcomes([]Outcome{{Name: "Job a/j", Job: "a/j", Count: 2, On: map[string]int{"n2": 2}}})
		}, "a/1 is bound to n1; expected on n2, Running", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := tc.c
			tc.check(&c)
			err := c.Err()
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("Err() = %v; want nil", err)
			case tc.want == "":
			case err == nil || !strings.Contains(err.Error(), tc.want):
				t.Fatalf("Err() = %v; want one containing %q", err, tc.want)
			case IsFinal(err) != tc.final:
				t.Fatalf("Err() = %v, final %t; want final %t", err, IsFinal(err), tc.final)
			}
		})
	}
}
