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

package scheduler

import (
	"context"
	"slices"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	st "github.com/batch-scheduler/batch-scheduler/pkg/testing"
)

// A condition that differs from the writer's last write only in the
// numbers of its message waits for the rewrite interval, and is then
// written with the last message wanted; a change of reason, or a message
// that says something else, is written at once; a pod placed meanwhile
// gets nothing more.
func TestConditionWriterRewriteInterval(t *testing.T) {
	setUp := func(t *testing.T, interval time.Duration) (*harness, *statusPatches, *v1.Pod) {
		h := newHarness(t)
		patches := watchStatusPatches(h, false)
		pod := st.MakePod().Name("p").UID("p").Obj()
		h.addPod(pod)
		h.sched.conditions.minRewrite = interval
		h.sched.conditions.set(t.Context(), pod, unschedulableCond("0 of 8 placed"))
		h.sched.bindWG.Wait()
		return h, patches, pod
	}
	want := func(t *testing.T, patches *statusPatches, msgs ...string) {
		t.Helper()
		if got := patches.seen(); !slices.Equal(got, msgs) {
			t.Errorf("patched messages %q, want %q", got, msgs)
		}
	}

	t.Run("a new message waits and the last one is written", func(t *testing.T) {
		h, patches, pod := setUp(t, 50*time.Millisecond)
		h.sched.conditions.set(t.Context(), pod, unschedulableCond("1 of 8 placed"))
		h.sched.conditions.set(t.Context(), pod, unschedulableCond("2 of 8 placed"))
		h.sched.bindWG.Wait()
		want(t, patches, "0 of 8 placed", "2 of 8 placed")
		if c := podScheduledCondition(h.apiPod(pod)); c == nil || c.Message != "2 of 8 placed" {
			t.Errorf("the API holds %+v, want the last message", c)
		}
	})

	t.Run("within the interval nothing is written", func(t *testing.T) {
		h, patches, pod := setUp(t, time.Hour)
		ctx, cancel := context.WithCancel(t.Context())
		h.sched.conditions.set(ctx, pod, unschedulableCond("1 of 8 placed"))
		h.sched.conditions.mu.Lock()
		e := h.sched.conditions.pods[pod.UID]
		pending := e != nil && e.writing && e.want != nil && e.want.Message == "1 of 8 placed"
		h.sched.conditions.mu.Unlock()
		if !pending {
			t.Errorf("the new count is not waiting to be written: %+v", e)
		}
		cancel() // ends the wait
		h.sched.bindWG.Wait()
		want(t, patches, "0 of 8 placed")
	})

	t.Run("a new reason is written at once", func(t *testing.T) {
		h, patches, pod := setUp(t, time.Hour)
		failed := unschedulableCond("E")
		failed.Reason = "SchedulerError"
		h.sched.conditions.set(t.Context(), pod, failed)
		h.sched.bindWG.Wait()
		want(t, patches, "0 of 8 placed", "E")
	})

	t.Run("a message that says something else is written at once", func(t *testing.T) {
		h, patches, pod := setUp(t, time.Hour)
		h.sched.conditions.set(t.Context(), pod, unschedulableCond("queue a at its limit: cpu 2/2"))
		h.sched.bindWG.Wait()
		want(t, patches, "0 of 8 placed", "queue a at its limit: cpu 2/2")
	})

	t.Run("a pod placed meanwhile gets no late message", func(t *testing.T) {
		h, patches, pod := setUp(t, 50*time.Millisecond)
		h.sched.conditions.set(t.Context(), pod, unschedulableCond("1 of 8 placed"))
		h.sched.conditions.forget(pod.UID)
		h.sched.bindWG.Wait()
		want(t, patches, "0 of 8 placed")
	})
}

func TestSameButNumbers(t *testing.T) {
	for _, tt := range []struct {
		a, b string
		want bool
	}{
		{"0 of 8 tasks could be placed", "1 of 8 tasks could be placed", true},
		{"0/500 nodes are available: 497 Insufficient cpu.", "0/500 nodes are available: 12 Insufficient cpu.", true},
		{"cpu 2/2", "cpu 10/2", true},
		{"", "", true},
		{"0 of 8 placed", "0 of 8 placed; 3 Insufficient cpu", false},
		{"3 Insufficient cpu", "3 Insufficient memory", false},
		{"queue a at its limit", "queue b at its limit", false},
		{"7", "x", false},
	} {
		if got := sameButNumbers(tt.a, tt.b); got != tt.want {
			t.Errorf("sameButNumbers(%q, %q) = %v, want %v", tt.a, tt.b, got, tt.want)
		}
	}
}
