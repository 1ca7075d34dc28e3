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
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	clienttesting "k8s.io/client-go/testing"

	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
	"github.com/batch-scheduler/batch-scheduler/pkg/metrics/metricstest"
	"github.com/batch-scheduler/batch-scheduler/pkg/schedulingqueue"
	st "github.com/batch-scheduler/batch-scheduler/pkg/testing"
)

var podsResource = schema.GroupResource{Resource: "pods"}

// failBinds makes the fake API server fail the first n binds of pods
// accepted by match (all when nil) with err; n < 0 fails them all. It
// returns when each bind call came, by pod name.
func failBinds(h *harness, n int, err error, match func(name string) bool) func() map[string][]time.Time {
	var (
		mu    sync.Mutex
		calls = map[string][]time.Time{}
		fails atomic.Int32
	)
	h.client.PrependReactor("create", "pods", func(a clienttesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() != "binding" {
			return false, nil, nil
		}
		b := a.(clienttesting.CreateAction).GetObject().(*v1.Binding)
		mu.Lock()
		calls[b.Name] = append(calls[b.Name], time.Now())
		mu.Unlock()
		if match != nil && !match(b.Name) {
			return false, nil, nil
		}
		if n < 0 || int(fails.Add(1)) <= n {
			return true, nil, err
		}
		return false, nil, nil
	})
	return func() map[string][]time.Time {
		mu.Lock()
		defer mu.Unlock()
		out := map[string][]time.Time{}
		for k, v := range calls {
			out[k] = slices.Clone(v)
		}
		return out
	}
}

func TestBindFailures(t *testing.T) {
	internal := apierrors.NewInternalError(errors.New("etcd is down"))
	tests := []struct {
		name string
		// fail is how many binds fail (-1: all) and with what.
		fail int
		err  error
		// notInAPI leaves the pod out of the fake API server, so that its
		// bind finds no pod.
		notInAPI bool

		wantCalls      int
		wantBindErrors float64
		wantBound      bool
		// wantEvent is the FailedScheduling event, if any.
		wantEvent string
		// wantQueue is where the job ends up.
		wantQueue schedulingqueue.Lengths
	}{
		{
			name: "fails twice, then binds",
			fail: 2, err: internal,
			wantCalls: 3, wantBindErrors: 2, wantBound: true,
			wantQueue: schedulingqueue.Lengths{AwaitingBinding: 1},
		},
		{
			name: "fails every time: rolled back and retried after backoff",
			fail: -1, err: internal,
			wantCalls: 3, wantBindErrors: 3,
			wantEvent: "Warning FailedScheduling Binding rejected: running Bind plugin \"DefaultBinder\" for pod default/p on node \"n1\": binding pod default/p to node n1: Internal error occurred: etcd is down",
			wantQueue: schedulingqueue.Lengths{Backoff: 1},
		},
		{
			name: "conflict: bound by someone else, not retried",
			fail: -1, err: apierrors.NewConflict(podsResource, "p", errors.New("already assigned")),
			wantCalls: 1, wantBindErrors: 1,
			wantEvent: "Warning FailedScheduling Binding rejected: ",
			wantQueue: schedulingqueue.Lengths{Backoff: 1},
		},
		{
			name:      "pod deleted in flight: not retried, not reported",
			notInAPI:  true,
			wantCalls: 1, wantBindErrors: 1,
			// The informer's delete, which would take the job out of the
			// queue, has not come yet.
			wantQueue: schedulingqueue.Lengths{AwaitingBinding: 1},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			hook := &hookPlugin{}
			h := newHarnessWith(t, harnessConfig{hook: hook, opts: func(o *Options) { o.BindBackoff = 5 * time.Millisecond }})
			h.addNode("n1", "4")
			pod := st.MakePod().Name("p").Req(res{"cpu": "1"}).Obj()
			if tt.notInAPI {
				h.addPodToCacheOnly(pod)
			} else {
				h.addPod(pod)
			}
			calls := failBinds(h, tt.fail, tt.err, nil)

			h.cycle()

			got := calls()["p"]
			if len(got) != tt.wantCalls {
				t.Fatalf("bind called %d times, want %d", len(got), tt.wantCalls)
			}
			// Retries back off 5ms, then 10ms.
			for i := 1; i < len(got); i++ {
				if gap, min := got[i].Sub(got[i-1]), 5*time.Millisecond<<(i-1); gap < min {
					t.Errorf("retry %d came %v after the previous call, want at least %v", i, gap, min)
				}
			}
			if got := metricstest.CounterValue(t, h.metrics.BindErrors); got != tt.wantBindErrors {
				t.Errorf("BindErrors = %v, want %v", got, tt.wantBindErrors)
			}
			// The cycle itself scheduled the job, whatever its binds did.
			if got := h.attempts(resultScheduled); got != 1 {
				t.Errorf("Attempts{scheduled} = %v, want 1", got)
			}

			evts := h.events()
			failed := eventsWith(evts, "Warning FailedScheduling ")
			scheduled := eventsWith(evts, "Normal Scheduled ")
			task := h.task(pod)
			if tt.wantBound {
				if task.Status != framework.TaskAssumed || !h.taskDump(pod).Assumed.BindingFinished {
					t.Errorf("task = %s, want assumed with its binding finished", task.Status)
				}
				if got := h.requestedCPU("n1"); got != 1000 {
					t.Errorf("n1 requested %dm, want 1000m", got)
				}
				if len(scheduled) != 1 {
					t.Errorf("Scheduled events = %q, want one", scheduled)
				}
				if got := metricstest.CounterValue(t, h.metrics.PodsBound); got != 1 {
					t.Errorf("PodsBound = %v, want 1", got)
				}
				if n := hook.unreserveCount(pod); n != 0 {
					t.Errorf("unreserved %d times, want 0", n)
				}
			} else {
				// Rolled back: pending again, the node free, unreserved.
				if task.Status != framework.TaskPending || task.NodeName != "" {
					t.Errorf("task = %s on %q, want pending", task.Status, task.NodeName)
				}
				if got := h.requestedCPU("n1"); got != 0 {
					t.Errorf("n1 requested %dm after the rollback, want 0", got)
				}
				if len(scheduled) != 0 {
					t.Errorf("Scheduled events = %q, want none", scheduled)
				}
				if got := metricstest.CounterValue(t, h.metrics.PodsBound); got != 0 {
					t.Errorf("PodsBound = %v, want 0", got)
				}
				if n := hook.unreserveCount(pod); n != 1 {
					t.Errorf("unreserved %d times, want 1", n)
				}
			}
			switch {
			case tt.wantEvent == "" && len(failed) != 0:
				t.Errorf("FailedScheduling events = %q, want none", failed)
			case tt.wantEvent != "" && (len(failed) != 1 || !strings.HasPrefix(failed[0], tt.wantEvent)):
				t.Errorf("FailedScheduling events = %q, want one starting with %q", failed, tt.wantEvent)
			}
			d := h.cache.Dump().Queue
			if d.Lengths != tt.wantQueue {
				t.Errorf("queue lengths = %+v, want %+v", d.Lengths, tt.wantQueue)
			}
			if tt.wantQueue.Backoff == 1 && len(d.Backoff) == 1 && !strings.HasPrefix(d.Backoff[0].LastFailure, "binding failed: ") {
				t.Errorf("last failure = %q, want a binding failure", d.Backoff[0].LastFailure)
			}
		})
	}
}

// One task of a gang that cannot be bound is rolled back alone; the job is
// retried for it.
func TestGangBindFailureRollsBackOnlyTheFailedPod(t *testing.T) {
	h := newHarness(t)
	for i := 1; i <= 3; i++ {
		h.addNode(fmt.Sprintf("n%d", i), "1")
	}
	var pods []*v1.Pod
	for i := range 3 {
		p := gangPod(fmt.Sprintf("w-%d", i), "g", "3", "1")
		pods = append(pods, p)
		h.addPod(p)
	}
	failBinds(h, -1, apierrors.NewInternalError(errors.New("boom")), func(name string) bool { return name == "w-1" })

	h.cycle()

	for _, p := range pods {
		want := framework.TaskAssumed
		if p.Name == "w-1" {
			want = framework.TaskPending
		}
		if got := h.task(p).Status; got != want {
			t.Errorf("task %s = %s, want %s", p.Name, got, want)
		}
	}
	if got := len(eventsWith(h.events(), "Warning FailedScheduling Binding rejected: ")); got != 1 {
		t.Errorf("got %d binding failure events, want 1", got)
	}
	if got := h.cache.Queue().Lengths(); got != (schedulingqueue.Lengths{Backoff: 1}) {
		t.Errorf("queue lengths = %+v, want the gang backing off", got)
	}
	if got := metricstest.CounterValue(t, h.metrics.PodsBound); got != 2 {
		t.Errorf("PodsBound = %v, want 2", got)
	}
}

// Stopping the scheduler ends a bind's backoff at once and rolls it back.
func TestBindStopsWithContext(t *testing.T) {
	h := newHarnessWith(t, harnessConfig{opts: func(o *Options) { o.BindBackoff = time.Hour }})
	h.addNode("n1", "4")
	pod := st.MakePod().Name("p").Req(res{"cpu": "1"}).Obj()
	h.addPod(pod)
	calls := failBinds(h, -1, apierrors.NewInternalError(errors.New("boom")), nil)

	ctx, cancel := context.WithCancel(t.Context())
	h.sched.scheduleOne(ctx)
	if err := wait.PollUntilContextTimeout(t.Context(), time.Millisecond, wait.ForeverTestTimeout, true, func(context.Context) (bool, error) {
		return len(calls()["p"]) == 1, nil
	}); err != nil {
		t.Fatalf("the first bind call did not come: %v", err)
	}
	cancel()
	h.sched.bindWG.Wait() // would take an hour without the cancel

	if got := len(calls()["p"]); got != 1 {
		t.Errorf("bind called %d times, want 1", got)
	}
	if got := h.task(pod).Status; got != framework.TaskPending {
		t.Errorf("task = %s, want pending after the rollback", got)
	}
}

// BindConcurrency bounds the bind calls in flight. (They are counted in a
// Bind plugin: the fake clientset serialises its reactors.)
func TestBindConcurrency(t *testing.T) {
	var (
		inFlight, maxInFlight, calls atomic.Int32
		release                      = make(chan struct{})
	)
	hook := &hookPlugin{bind: func(*v1.Pod, string) *framework.Status {
		n := inFlight.Add(1)
		calls.Add(1)
		for {
			m := maxInFlight.Load()
			if n <= m || maxInFlight.CompareAndSwap(m, n) {
				break
			}
		}
		<-release
		inFlight.Add(-1)
		return framework.NewStatus(framework.Skip)
	}}
	h := newHarnessWith(t, harnessConfig{hook: hook, opts: func(o *Options) { o.BindConcurrency = 2 }})
	h.addNode("n1", "8")
	for i := range 5 {
		h.addPod(gangPod(fmt.Sprintf("w-%d", i), "g", "5", "1"))
	}

	ctx := t.Context()
	h.sched.scheduleOne(ctx)
	// Two binds start; each released one lets the next in.
	for i := int32(2); i <= 5; i++ {
		if err := wait.PollUntilContextTimeout(ctx, time.Millisecond, wait.ForeverTestTimeout, true, func(context.Context) (bool, error) {
			return calls.Load() >= i, nil
		}); err != nil {
			t.Fatalf("bind call %d did not come: %v", i, err)
		}
		release <- struct{}{}
	}
	release <- struct{}{}
	h.sched.bindWG.Wait()

	if got := maxInFlight.Load(); got != 2 {
		t.Errorf("%d binds were in flight at once, want 2", got)
	}
	if got := len(h.boundTo()); got != 5 {
		t.Errorf("bound %d pods, want 5", got)
	}
}

// A bind that fails for a job parked for its unplaced pods (a partial gang
// placement) leaves the forgotten pod pending in that job, which the freed
// capacity wakes and a later cycle retries with both pods.
func TestPartialGangBindFailureIsRetriedWithTheJob(t *testing.T) {
	h := newHarness(t)
	h.addNode("n1", "1")
	h.addNode("n2", "1")
	pods := []*v1.Pod{gangPod("w-0", "mpi", "2", "1"), gangPod("w-1", "mpi", "2", "1"), gangPod("w-2", "mpi", "2", "1")}
	for _, p := range pods {
		h.addPod(p)
	}
	failBinds(h, 3, apierrors.NewInternalError(errors.New("boom")), func(name string) bool { return name == "w-1" })

	h.cycle()

	for _, p := range pods {
		want := framework.TaskPending
		if p.Name == "w-0" {
			want = framework.TaskAssumed
		}
		if got := h.task(p).Status; got != want {
			t.Errorf("task %s = %s, want %s", p.Name, got, want)
		}
	}
	if got := eventsWith(h.events(), "Warning FailedScheduling Binding rejected: "); len(got) != 1 {
		t.Errorf("binding failure events = %q, want one", got)
	}
	// The failed bind gave w-1's node back, which wakes the parked job.
	if got := h.cache.Queue().Lengths(); got.Active+got.Backoff != 1 || got.Unschedulable != 0 {
		t.Fatalf("queue lengths = %+v, want the job woken by the capacity the failed bind gave back", got)
	}

	h.addNode("n3", "1")
	h.cache.MoveAllToActiveOrBackoffQueue(framework.EventNodeAdd, nil, nil)
	h.cycle()

	bound := h.boundTo()
	if bound["w-1"] == "" || bound["w-2"] == "" || bound["w-1"] == bound["w-2"] || bound["w-1"] == bound["w-0"] || bound["w-2"] == bound["w-0"] {
		t.Errorf("bound %v, want w-1 and w-2 bound too, each on its own node", bound)
	}
	for _, p := range pods {
		if got := h.task(p).Status; got != framework.TaskAssumed {
			t.Errorf("task %s = %s, want assumed", p.Name, got)
		}
	}
}
