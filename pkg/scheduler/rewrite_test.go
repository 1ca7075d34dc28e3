package scheduler

import (
	"context"
	"slices"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	st "github.com/batch-scheduler/batch-scheduler/pkg/testing"
)

// A condition that differs from the writer's last write only in its
// message waits for the rewrite interval, and is then written with the
// last message wanted; a change of reason is written at once; a pod
// placed meanwhile gets nothing more.
func TestConditionWriterRewriteInterval(t *testing.T) {
	setUp := func(t *testing.T, interval time.Duration) (*harness, *statusPatches, *v1.Pod) {
		h := newHarness(t)
		patches := watchStatusPatches(h, false)
		pod := st.MakePod().Name("p").UID("p").Obj()
		h.addPod(pod)
		h.sched.conditions.minRewrite = interval
		h.sched.conditions.set(t.Context(), pod, unschedulableCond("A"))
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
		h.sched.conditions.set(t.Context(), pod, unschedulableCond("B"))
		h.sched.conditions.set(t.Context(), pod, unschedulableCond("C"))
		h.sched.bindWG.Wait()
		want(t, patches, "A", "C")
		if c := podScheduledCondition(h.apiPod(pod)); c == nil || c.Message != "C" {
			t.Errorf("the API holds %+v, want C", c)
		}
	})

	t.Run("within the interval nothing is written", func(t *testing.T) {
		h, patches, pod := setUp(t, time.Hour)
		ctx, cancel := context.WithCancel(t.Context())
		h.sched.conditions.set(ctx, pod, unschedulableCond("B"))
		h.sched.conditions.mu.Lock()
		e := h.sched.conditions.pods[pod.UID]
		pending := e != nil && e.writing && e.want != nil && e.want.Message == "B"
		h.sched.conditions.mu.Unlock()
		if !pending {
			t.Errorf("B is not waiting to be written: %+v", e)
		}
		cancel() // ends the wait
		h.sched.bindWG.Wait()
		want(t, patches, "A")
	})

	t.Run("a new reason is written at once", func(t *testing.T) {
		h, patches, pod := setUp(t, time.Hour)
		failed := unschedulableCond("E")
		failed.Reason = "SchedulerError"
		h.sched.conditions.set(t.Context(), pod, failed)
		h.sched.bindWG.Wait()
		want(t, patches, "A", "E")
	})

	t.Run("a pod placed meanwhile gets no late message", func(t *testing.T) {
		h, patches, pod := setUp(t, 50*time.Millisecond)
		h.sched.conditions.set(t.Context(), pod, unschedulableCond("B"))
		h.sched.conditions.forget(pod.UID)
		h.sched.bindWG.Wait()
		want(t, patches, "A")
	})
}
